//! Status bookkeeping for kinds without remote side effects: member counts and states,
//! invitation expiry, and who last changed a policy. Observed on the real API server.

use std::time::Duration;

use berth_crds::invitation::{Invitation, InvitationSpec};
use berth_crds::member::{Member, MemberSpec, OrganizationRole};
use berth_crds::organization::Organization;
use berth_tests::rest::TestOrg;
use berth_tests::{client, eventually, kubectl};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::PostParams;
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(30);

fn member(name: &str, active: bool) -> Member {
    Member::new(
        name,
        MemberSpec {
            user_id: format!("usr-{name}"),
            email: format!("{name}@test.berth.local"),
            role: OrganizationRole::Member,
            active,
        },
    )
}

#[tokio::test]
async fn organization_counts_active_members_and_removed_members_say_so() {
    let client = client().await;
    let org = TestOrg::new(&client).await;
    let members: Api<Member> = Api::namespaced(client.clone(), &org.namespace);
    members
        .create(&PostParams::default(), &member("alice", true))
        .await
        .unwrap();
    members
        .create(&PostParams::default(), &member("bob", false))
        .await
        .unwrap();

    let organizations: Api<Organization> = Api::all(client.clone());
    eventually(WAIT, "memberCount 1", || async {
        let status = organizations.get(&org.id).await.ok()?.status?;
        (status.member_count == 1).then_some(())
    })
    .await;
    let removed = eventually(WAIT, "bob marked removed", || async {
        let status = members.get("bob").await.ok()?.status?;
        (status.member_status.as_deref() == Some("removed")).then_some(status)
    })
    .await;
    assert!(removed.removed_at.is_some() && removed.joined_at.is_some());
}

#[tokio::test]
async fn an_invitation_past_its_expiry_reads_expired() {
    let client = client().await;
    let org = TestOrg::new(&client).await;
    let invitations: Api<Invitation> = Api::namespaced(client.clone(), &org.namespace);
    let soon =
        k8s_openapi::jiff::Timestamp::now() + k8s_openapi::jiff::SignedDuration::from_secs(2);
    let invitation = Invitation::new(
        "inv-soon",
        InvitationSpec {
            email: "carol@test.berth.local".into(),
            role: OrganizationRole::Admin,
            inviter_user_id: "usr-someone".into(),
            expires_at: Time(soon),
            revoked: false,
        },
    );
    invitations
        .create(&PostParams::default(), &invitation)
        .await
        .unwrap();
    let state = |expected: &'static str| {
        let invitations = invitations.clone();
        move || {
            let invitations = invitations.clone();
            async move {
                let status = invitations.get("inv-soon").await.ok()?.status?;
                let state = serde_json::to_value(status.status?).ok()?;
                (state == expected).then_some(())
            }
        }
    };
    eventually(WAIT, "invitation pending", state("pending")).await;
    // Nothing edits the object: the controller requeues itself at the expiry time.
    eventually(WAIT, "invitation expired", state("expired")).await;
}

#[tokio::test]
async fn a_policy_applied_with_kubectl_reports_its_field_manager() {
    let client = client().await;
    let org = TestOrg::new(&client).await;
    let manifest = format!(
        r#"apiVersion: berth.dev/v1alpha1
kind: RetentionPolicy
metadata:
  name: audit
  namespace: {}
spec:
  category: audit-rows
  retentionDays: 30
"#,
        org.namespace
    );
    let output = kubectl(&["apply", "--server-side", "-f", "-"], Some(&manifest));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let api: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        &org.namespace,
        &kube::api::ApiResource::erase::<berth_crds::retention_policy::RetentionPolicy>(&()),
    );
    let status: Value = eventually(WAIT, "policy status", || async {
        let object = api.get("audit").await.ok()?;
        let status = object.data.get("status")?.clone();
        status.get("updatedAt").is_some().then_some(status)
    })
    .await;
    assert_eq!(status["updatedByActorKind"], "user");
    assert_eq!(status["updatedByActorId"], "kubectl");
}

//! Organization → namespace, Project/Environment → Ready, archive → status; all observed on
//! the real API server with the controller running (hack/test.sh starts it).

use std::time::Duration;

use berth_crds::condition::{self, ConditionStatus, READY};
use berth_crds::environment::{Environment, EnvironmentSpec};
use berth_crds::lifecycle::LifecycleStatus;
use berth_crds::organization::{Organization, OrganizationSpec};
use berth_crds::project::{Project, ProjectSpec};
use berth_tests::{TestNamespace, client, eventually, kubectl, random_suffix};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

fn project(name: &str) -> Project {
    Project::new(
        name,
        ProjectSpec {
            name: "Shop".into(),
            slug: None,
            description: Some("storefront".into()),
            display_order: 0,
            archived: false,
            archive_reason: None,
            variables: Vec::new(),
        },
    )
}

fn environment(name: &str, project_id: &str) -> Environment {
    Environment::new(
        name,
        EnvironmentSpec {
            project_id: project_id.into(),
            name: "production".into(),
            kind: "production".into(),
            parent_environment_id: None,
            variables: vec![],
            locked: false,
            lock_reason: None,
            locked_at: None,
            archived: false,
            archive_reason: None,
        },
    )
}

/// Waits until `name` in `api` has condition Ready with `status`, and returns the object.
async fn wait_ready<K>(api: &Api<K>, name: &str, status: ConditionStatus) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + HasConditions,
{
    eventually(WAIT, &format!("{name} Ready={status:?}"), || async {
        let object = api.get_opt(name).await.ok()??;
        let ready = condition::find(object.conditions(), READY)?;
        (ready.status == status).then_some(object)
    })
    .await
}

trait HasConditions {
    fn conditions(&self) -> &[berth_crds::Condition];
}
impl HasConditions for Organization {
    fn conditions(&self) -> &[berth_crds::Condition] {
        self.status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default()
    }
}
impl HasConditions for Project {
    fn conditions(&self) -> &[berth_crds::Condition] {
        self.status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default()
    }
}
impl HasConditions for Environment {
    fn conditions(&self) -> &[berth_crds::Condition] {
        self.status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default()
    }
}

#[tokio::test]
async fn organization_provisions_a_labelled_namespace_and_removes_it_on_delete() {
    let client = client().await;
    let name = format!("t-org-{}", random_suffix());
    let organizations: Api<Organization> = Api::all(client.clone());
    let organization = Organization::new(
        &name,
        OrganizationSpec {
            name: "Test Org".into(),
            slug: name.clone(),
            logo_url: None,
            variables: Vec::new(),
        },
    );
    organizations
        .create(&PostParams::default(), &organization)
        .await
        .unwrap();

    let ready = wait_ready(&organizations, &name, ConditionStatus::True).await;
    let namespace_name = format!("org-{name}");
    assert_eq!(
        ready.status.unwrap().namespace.as_deref(),
        Some(namespace_name.as_str())
    );
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = namespaces
        .get(&namespace_name)
        .await
        .expect("namespace exists");
    assert_eq!(
        namespace.labels().get("berth.dev/organization"),
        Some(&name)
    );
    assert_eq!(
        namespace
            .labels()
            .get("berth.dev/managed")
            .map(String::as_str),
        Some("true")
    );

    organizations
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually(WAIT, "organization and its namespace gone", || async {
        let organization_gone = organizations.get_opt(&name).await.ok()?.is_none();
        let namespace = namespaces.get_opt(&namespace_name).await.ok()?;
        let namespace_going = namespace.is_none_or(|ns| ns.metadata.deletion_timestamp.is_some());
        (organization_gone && namespace_going).then_some(())
    })
    .await;
}

#[tokio::test]
async fn project_becomes_ready_and_archive_is_a_status_transition() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "prj").await;
    let projects: Api<Project> = ns.api();
    projects
        .create(&PostParams::default(), &project("shop"))
        .await
        .unwrap();
    let ready = wait_ready(&projects, "shop", ConditionStatus::True).await;
    let status = ready.status.unwrap();
    assert_eq!(status.lifecycle_status, Some(LifecycleStatus::Active));
    assert!(status.archived_at.is_none());

    // `kubectl wait` is what users and CI pipelines run.
    let output = kubectl(
        &[
            "wait",
            "--for=condition=Ready",
            "--timeout=20s",
            "-n",
            &ns.name,
            "project/shop",
        ],
        None,
    );
    assert!(
        output.status.success(),
        "kubectl wait: {}",
        String::from_utf8_lossy(&output.stderr)
    );

    let patch = json!({"spec": {"archived": true, "archiveReason": "replaced by shop-v2"}});
    projects
        .patch("shop", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let archived = eventually(WAIT, "project archived in status", || async {
        let project = projects.get("shop").await.ok()?;
        let status = project.status.clone()?;
        (status.lifecycle_status == Some(LifecycleStatus::Archived)).then_some(status)
    })
    .await;
    assert_eq!(
        archived.archive_reason.as_deref(),
        Some("replaced by shop-v2")
    );
    assert!(archived.archived_at.is_some());
    assert!(condition::is_true(&archived.conditions, "Archived"));
    // The object and its history stay readable.
    assert!(projects.get_opt("shop").await.unwrap().is_some());

    let events: Api<Event> = ns.api();
    eventually(WAIT, "an Archived event", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("Archived")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("shop")
            })
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn environment_waits_for_its_project_then_becomes_ready() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "env").await;
    let environments: Api<Environment> = ns.api();
    environments
        .create(&PostParams::default(), &environment("staging", "later"))
        .await
        .unwrap();
    let waiting = wait_ready(&environments, "staging", ConditionStatus::False).await;
    let ready = condition::find(waiting.conditions(), READY)
        .unwrap()
        .clone();
    assert_eq!(ready.reason, "ProjectNotFound");
    assert!(
        ready.message.contains("later"),
        "message names the project: {}",
        ready.message
    );

    // Creating the project is enough: the environment is re-checked without any edit of its own.
    let projects: Api<Project> = ns.api();
    projects
        .create(&PostParams::default(), &project("later"))
        .await
        .unwrap();
    let ready = wait_ready(&environments, "staging", ConditionStatus::True).await;
    assert_eq!(
        ready.status.unwrap().observed_generation,
        ready.metadata.generation
    );
}

#[tokio::test]
async fn status_is_written_only_when_something_changed() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "quiet").await;
    let projects: Api<Project> = ns.api();
    projects
        .create(&PostParams::default(), &project("calm"))
        .await
        .unwrap();
    let ready = wait_ready(&projects, "calm", ConditionStatus::True).await;
    let transition = condition::find(ready.conditions(), READY)
        .unwrap()
        .last_transition_time
        .clone();

    // A metadata-only edit triggers a reconcile that finds nothing to change.
    let patch = json!({"metadata": {"annotations": {"example.com/touched": "yes"}}});
    let touched = projects
        .patch("calm", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = projects.get("calm").await.unwrap();
    assert_eq!(
        after.resource_version(),
        touched.resource_version(),
        "the controller wrote an unchanged status"
    );
    let after_transition = condition::find(after.conditions(), READY)
        .unwrap()
        .last_transition_time
        .clone();
    assert_eq!(after_transition, transition);
}

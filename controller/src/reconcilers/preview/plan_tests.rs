use berth_crds::preview::{PreviewEnvironmentSpec, PreviewProvider, PullRequestSource};
use serde_json::json;

use super::*;

const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";

fn preview(name: &str, created: &str) -> PreviewEnvironment {
    let mut preview = PreviewEnvironment::new(
        name,
        PreviewEnvironmentSpec {
            project_id: "shop".into(),
            resource_id: "web".into(),
            source: PullRequestSource {
                provider: PreviewProvider::Github,
                repository_full_name: "acme/shop".into(),
                head_repository_full_name: "acme/shop".into(),
                head_repository_url: "http://git.test/acme/shop.git".into(),
                pull_request_number: 7,
                base_ref: "main".into(),
                head_ref: "feature".into(),
                head_sha: HEAD.into(),
            },
            with_secrets: false,
            pushed_at: Time(created.parse().unwrap()),
        },
    );
    preview.metadata.namespace = Some("org-a".into());
    preview.metadata.uid = Some(format!("uid-{name}"));
    preview.metadata.creation_timestamp = Some(Time(created.parse().unwrap()));
    preview
}

fn base() -> Resource {
    serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Resource",
        "metadata": {"name": "web", "namespace": "org-a"},
        "spec": {
            "projectId": "shop", "environmentId": "prod", "serverId": "edge",
            "name": "Web Shop", "kind": "application",
            "source": {"kind": "git-public", "locator": "http://git.test/acme/shop.git", "gitRef": "main"},
            "autoDeploy": {"enabled": true, "triggerKind": "git-push"},
            "dependencyBindings": [{"dependencyResourceId": "db", "targetName": "DATABASE_URL"}],
            "secretsRef": "web-secrets"
        }
    }))
    .unwrap()
}

#[test]
fn the_copy_deploys_the_head_at_its_own_host_and_touches_no_production_data() {
    let copy = resource(
        &preview("web-pr-7", "2026-12-01T00:00:00Z"),
        &base(),
        &CopyShape::default(),
    );
    let spec = &copy.spec;
    assert_eq!(spec.environment_id, "web-pr-7-env");
    assert_eq!(spec.slug.as_deref(), Some("pr-7-web-shop"));
    let source = spec.source.as_ref().unwrap();
    assert_eq!(source.commit_sha.as_deref(), Some(HEAD));
    assert_eq!(source.git_ref.as_deref(), Some("feature"));
    assert!(
        !spec.auto_deploy.enabled,
        "a preview follows its pull request"
    );
    assert!(
        spec.dependency_bindings.is_empty(),
        "not production's database"
    );
    assert!(spec.secrets_ref.is_none());
    let labels = copy.metadata.labels.as_ref().unwrap();
    assert_eq!(labels[PREVIEW_LABEL], "web-pr-7");
    assert_eq!(
        copy.metadata.owner_references.as_ref().unwrap()[0].kind,
        "PreviewEnvironment"
    );
    assert!(
        spec.access_profile.is_none(),
        "served by its generated route"
    );
}

#[test]
fn a_host_name_of_its_own_is_a_binding_the_preview_owns_and_the_copy_has_no_generated_route() {
    let p = preview("web-pr-7", "2026-12-01T00:00:00Z");
    let mut policy = PreviewPolicySpec::default_for("shop", None);
    let generated = "pr-7-web-shop.apps.test";
    assert_eq!(domain(&p, &base(), &policy, generated), Ok(None));
    policy.preview_domain_template = Some("{slug}-{preview_id}.previews.test".into());
    let found = domain(&p, &base(), &policy, generated).unwrap().unwrap();
    assert_eq!(found.hostname, "web-shop-pr-7.previews.test");
    let binding = domain_binding(&p, &found);
    assert_eq!(binding.metadata.name.as_deref(), Some("web-pr-7-domain"));
    assert_eq!(
        (
            binding.spec.resource_id.as_str(),
            binding.spec.tls_mode.as_str()
        ),
        ("web-pr-7", "auto")
    );
    assert_eq!(
        binding.metadata.labels.as_ref().unwrap()[PREVIEW_LABEL],
        "web-pr-7"
    );
    let shape = CopyShape {
        bound: true,
        bindings: &[],
    };
    let copy = resource(&p, &base(), &shape);
    let access = copy.spec.access_profile.unwrap();
    assert_eq!(access.generated_access_mode, GeneratedAccessMode::Disabled);
    policy.preview_domain_template = Some("{number}.previews.test".into());
    assert!(
        domain(&p, &base(), &policy, generated)
            .unwrap_err()
            .contains("{number}")
    );
}

#[test]
fn a_bound_preview_serves_at_its_bindings_url_only_once_the_binding_is_ready() {
    let attempt: Deployment = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Deployment",
        "metadata": {"name": "web-pr-7-0123456789ab"},
        "spec": {"resourceId": "web-pr-7", "serverId": "edge", "projectId": "shop",
                 "environmentId": "web-pr-7-env", "trigger": "pull-request"},
        "status": {"status": "succeeded"}
    }))
    .unwrap();
    let waiting = progress(Some(&attempt), Access::Bound(None));
    assert!(matches!(waiting, Progress::WaitingForDomain(_)));
    let mut binding: DomainBinding = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "DomainBinding",
        "metadata": {"name": "web-pr-7-domain"},
        "spec": {"resourceId": "web-pr-7", "hostname": "pr-7.previews.test"},
        "status": {"url": "https://pr-7.previews.test/", "conditions": [{
            "type": "Ready", "status": "False", "reason": "WaitingForCertificate",
            "message": "the ACME order is pending", "lastTransitionTime": "2026-12-01T00:00:00Z"}]}
    }))
    .unwrap();
    let Progress::WaitingForDomain(why) = progress(Some(&attempt), Access::Bound(Some(&binding)))
    else {
        panic!("not waiting for the binding");
    };
    assert!(why.contains("ACME order is pending"), "{why}");
    binding.status.as_mut().unwrap().conditions[0].status = ConditionStatus::True;
    let Progress::Serving { url } = progress(Some(&attempt), Access::Bound(Some(&binding))) else {
        panic!("not serving");
    };
    assert_eq!(url, "https://pr-7.previews.test/");
}

#[test]
fn secrets_are_copied_only_when_the_preview_may_have_them() {
    let mut without = preview("web-pr-7", "2026-12-01T00:00:00Z");
    assert!(secret_copies(&without, &base(), "prod").is_empty());
    without.spec.with_secrets = true;
    assert_eq!(
        secret_copies(&without, &base(), "prod"),
        vec![
            ("web-secrets".to_string(), "web-pr-7-secrets".to_string()),
            (
                "prod-secrets".to_string(),
                "web-pr-7-env-secrets".to_string()
            ),
        ]
    );
}

#[test]
fn one_attempt_per_head_commit() {
    let mut p = preview("web-pr-7", "2026-12-01T00:00:00Z");
    let first = attempt_name(&p);
    assert_eq!(first, "web-pr-7-0123456789ab");
    p.spec.source.head_sha = "f".repeat(40);
    assert_ne!(attempt_name(&p), first);
}

#[test]
fn the_oldest_previews_run_within_the_quota_and_deleted_ones_free_places() {
    let mut policy = PreviewPolicySpec::default_for("shop", None);
    let first = preview("web-pr-1", "2026-12-01T00:00:00Z");
    let second = preview("web-pr-2", "2026-12-01T00:01:00Z");
    let third = preview("web-pr-3", "2026-12-01T00:02:00Z");
    let all = [&first, &second, &third];
    assert!(admitted(&third, &all, &policy), "no limit");
    policy.max_active_previews = Some(2);
    assert!(admitted(&first, &all, &policy));
    assert!(admitted(&second, &all, &policy));
    assert!(!admitted(&third, &all, &policy));
    let mut closing = first.clone();
    closing.metadata.deletion_timestamp = Some(Time("2026-12-01T01:00:00Z".parse().unwrap()));
    assert!(admitted(&third, &[&closing, &second, &third], &policy));
}

#[test]
fn a_preview_expires_its_ttl_after_its_last_push() {
    let p = preview("web-pr-7", "2026-12-01T00:00:00Z");
    let mut policy = PreviewPolicySpec::default_for("shop", None);
    assert_eq!(expires_at(&p, &policy), None);
    policy.preview_ttl_hours = Some(24);
    assert_eq!(
        expires_at(&p, &policy),
        Some("2026-12-02T00:00:00Z".parse().unwrap())
    );
}

#[test]
fn ready_only_when_the_head_commit_serves() {
    let p = preview("web-pr-7", "2026-12-01T00:00:00Z");
    let now: Timestamp = "2026-12-01T00:05:00Z".parse().unwrap();
    let deploying = status(&p, None, &Progress::Deploying, None, now);
    let ready = &deploying.conditions[0];
    assert_eq!(
        (ready.status, ready.reason.as_str()),
        (ConditionStatus::False, reason::DEPLOYING)
    );
    assert!(deploying.url.is_none() && deploying.serving_sha.is_none());
    let url = "http://pr-7-web-shop.test:8080/";
    let serving = status(&p, None, &Progress::Serving { url }, None, now);
    assert_eq!(serving.conditions[0].status, ConditionStatus::True);
    assert_eq!(serving.url.as_deref(), Some(url));
    assert_eq!(serving.serving_sha.as_deref(), Some(HEAD));
    let failed = status(
        &p,
        None,
        &Progress::Failed("build failed".into()),
        None,
        now,
    );
    assert_eq!(failed.conditions[0].reason, reason::DEPLOY_FAILED);
    assert!(failed.conditions[0].message.contains("build failed"));
}

#[test]
fn only_a_resource_built_from_git_is_previewed() {
    assert_eq!(non_git_source(&base()), None);
    let mut image = base();
    let source = image.spec.source.as_mut().unwrap();
    source.kind = "docker-image".into();
    source.locator = "registry.test/shop:1".into();
    assert_eq!(non_git_source(&image).as_deref(), Some("docker-image"));
    image.spec.source = None;
    assert_eq!(non_git_source(&image).as_deref(), Some("none"));
}

//! Which PreviewPolicy is in force: a resource's own, else its project's, else Appaloft's
//! defaults. A scope has one policy, found by its spec (so one applied with kubectl counts
//! too) and, when the REST API writes it, named after its scope.

use std::sync::Arc;

use berth_api::previews::{
    PreviewPolicyInput, PreviewPolicyScope, PreviewPolicySettings, PreviewScopeKind,
};
use berth_api::wire::{from_name, name_of};
use berth_crds::limits::OBJECT_NAME_MAX;
use berth_crds::preview::{PreviewPolicy, PreviewPolicySpec};
use kube::ResourceExt;
use sha2::{Digest, Sha256};

/// The policy in force for a scope, and the object it comes from (`None`: the defaults).
#[derive(Clone, Debug)]
pub struct Effective {
    pub policy: Option<Arc<PreviewPolicy>>,
    pub spec: PreviewPolicySpec,
}

/// The policy of exactly this scope among `policies` (one namespace's), ignoring those being
/// deleted; the oldest when several claim it.
pub fn own(
    policies: &[Arc<PreviewPolicy>],
    project: &str,
    resource: Option<&str>,
) -> Option<Arc<PreviewPolicy>> {
    policies
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.spec.project_id == project && p.spec.resource_id.as_deref() == resource)
        .min_by_key(|p| {
            (
                p.metadata.creation_timestamp.clone().map(|t| t.0),
                p.name_any(),
            )
        })
        .cloned()
}

/// The policy in force for `resource` of `project` (or for the project, without one): the
/// resource's own, else the project's, else the defaults.
pub fn effective(
    policies: &[Arc<PreviewPolicy>],
    project: &str,
    resource: Option<&str>,
) -> Effective {
    let found = resource
        .and_then(|id| own(policies, project, Some(id)))
        .or_else(|| own(policies, project, None));
    match found {
        Some(policy) => Effective {
            spec: policy.spec.clone(),
            policy: Some(policy),
        },
        None => Effective {
            policy: None,
            spec: PreviewPolicySpec::default_for(project, resource),
        },
    }
}

/// The object name the REST API gives a scope's policy: `preview-<project>` or
/// `preview-<project>.<resource>`, or a digest of the scope when that is too long or taken by
/// another scope's policy (`taken_by_other`).
pub fn object_name(scope: &PreviewPolicyScope, taken_by_other: impl Fn(&str) -> bool) -> String {
    let project = &scope.project_id;
    let readable = match &scope.resource_id {
        Some(resource) => format!("preview-{project}.{resource}"),
        None => format!("preview-{project}"),
    };
    if readable.len() <= OBJECT_NAME_MAX && !taken_by_other(&readable) {
        return readable;
    }
    let seed = format!("{project}\n{}", scope.resource_id.as_deref().unwrap_or(""));
    let digest = hex::encode(Sha256::digest(seed.as_bytes()));
    format!("preview-{}", &digest[..20])
}

/// The spec a configure request asks for: the fields given, the others their defaults (a
/// configure replaces the policy).
pub fn spec_of(scope: &PreviewPolicyScope, input: &PreviewPolicyInput) -> PreviewPolicySpec {
    let resource = match scope.kind {
        PreviewScopeKind::Resource => scope.resource_id.as_deref(),
        PreviewScopeKind::Project => None,
    };
    let defaults = PreviewPolicySpec::default_for(&scope.project_id, resource);
    let count = |value: Option<i64>| value.and_then(|v| u32::try_from(v).ok());
    PreviewPolicySpec {
        same_repository_previews: input
            .same_repository_previews
            .unwrap_or(defaults.same_repository_previews),
        fork_previews: input
            .fork_previews
            .as_deref()
            .and_then(from_name)
            .unwrap_or(defaults.fork_previews),
        secret_backed_previews: input
            .secret_backed_previews
            .unwrap_or(defaults.secret_backed_previews),
        max_active_previews: count(input.max_active_previews),
        preview_ttl_hours: count(input.preview_ttl_hours),
        environment_profile_base_environment_id: input
            .environment_profile_base_environment_id
            .clone(),
        preview_domain_template: input.preview_domain_template.clone(),
        preview_tls_mode: input.preview_tls_mode.as_deref().and_then(from_name),
        preview_databases: input
            .preview_databases
            .as_deref()
            .and_then(from_name)
            .unwrap_or(defaults.preview_databases),
        ..defaults
    }
}

/// A policy's settings as Appaloft shows them.
pub fn settings(spec: &PreviewPolicySpec) -> PreviewPolicySettings {
    PreviewPolicySettings {
        same_repository_previews: spec.same_repository_previews,
        fork_previews: name_of(spec.fork_previews).unwrap_or_default(),
        secret_backed_previews: spec.secret_backed_previews,
        max_active_previews: spec.max_active_previews,
        preview_ttl_hours: spec.preview_ttl_hours,
        environment_profile_base_environment_id: spec
            .environment_profile_base_environment_id
            .clone(),
        preview_domain_template: spec.preview_domain_template.clone(),
        preview_tls_mode: spec.tls_mode_in_force().as_str().into(),
        preview_databases: name_of(spec.preview_databases).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_api::previews::{FORK_PREVIEWS, PREVIEW_DATABASES, PREVIEW_TLS_MODES};
    use berth_crds::preview::{ForkPreviews, PreviewDatabases, PreviewTlsMode};

    /// The spellings the request check allows are the policy's own: each is read into the
    /// CRD's enum and written back the same.
    #[test]
    fn every_allowed_spelling_is_a_setting_of_the_policy() {
        fn round_trips<T: serde::Serialize + serde::de::DeserializeOwned>(names: &[&str]) {
            for name in names {
                let value: T = from_name(name).unwrap_or_else(|| panic!("{name} is not known"));
                assert_eq!(name_of(value).as_deref(), Some(*name));
            }
        }
        round_trips::<ForkPreviews>(&FORK_PREVIEWS);
        round_trips::<PreviewTlsMode>(&PREVIEW_TLS_MODES);
        round_trips::<PreviewDatabases>(&PREVIEW_DATABASES);
        assert!(from_name::<PreviewDatabases>("latest").is_none());
    }
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn policy(name: &str, resource: Option<&str>, age: i64) -> Arc<PreviewPolicy> {
        let mut policy = PreviewPolicy::new(name, PreviewPolicySpec::default_for("shop", resource));
        let created = k8s_openapi::jiff::Timestamp::from_second(1_000_000 - age).unwrap();
        policy.metadata.creation_timestamp = Some(Time(created));
        Arc::new(policy)
    }

    fn scope(resource: Option<&str>) -> PreviewPolicyScope {
        PreviewPolicyScope {
            kind: match resource {
                Some(_) => PreviewScopeKind::Resource,
                None => PreviewScopeKind::Project,
            },
            project_id: "shop".into(),
            resource_id: resource.map(str::to_string),
        }
    }

    #[test]
    fn a_resource_takes_its_own_policy_else_its_projects_else_the_defaults() {
        let project = policy("preview-shop", None, 10);
        let web = policy("preview-shop.web", Some("web"), 5);
        let all = vec![project.clone(), web.clone()];
        let name = |e: Effective| e.policy.map(|p| p.name_any());
        assert_eq!(
            name(effective(&all, "shop", Some("web"))).as_deref(),
            Some("preview-shop.web")
        );
        assert_eq!(
            name(effective(&all, "shop", Some("api"))).as_deref(),
            Some("preview-shop")
        );
        assert_eq!(
            name(effective(&all, "shop", None)).as_deref(),
            Some("preview-shop")
        );
        let none = effective(&all, "other", Some("web"));
        assert!(none.policy.is_none());
        assert_eq!(
            none.spec,
            PreviewPolicySpec::default_for("other", Some("web"))
        );
        // Two claiming one scope: the oldest counts.
        let older = policy("kubectl-made", None, 20);
        let found = own(&[project, older], "shop", None).unwrap();
        assert_eq!(found.name_any(), "kubectl-made");
    }

    #[test]
    fn names_follow_the_scope_and_step_aside_when_taken_or_too_long() {
        assert_eq!(object_name(&scope(None), |_| false), "preview-shop");
        assert_eq!(
            object_name(&scope(Some("web")), |_| false),
            "preview-shop.web"
        );
        let hashed = object_name(&scope(Some("web")), |_| true);
        assert!(hashed.starts_with("preview-") && hashed.len() == 28);
        assert_eq!(hashed, object_name(&scope(Some("web")), |_| true));
        let mut long = scope(Some(&"w".repeat(250)));
        long.project_id = "p".into();
        assert!(object_name(&long, |_| false).len() <= OBJECT_NAME_MAX);
    }

    #[test]
    fn a_configure_fills_what_it_leaves_out_with_the_defaults() {
        let input = PreviewPolicyInput {
            fork_previews: Some("without-secrets".into()),
            max_active_previews: Some(3),
            ..Default::default()
        };
        let spec = spec_of(&scope(Some("web")), &input);
        assert_eq!(spec.resource_id.as_deref(), Some("web"));
        assert_eq!(spec.fork_previews, ForkPreviews::WithoutSecrets);
        assert_eq!(spec.max_active_previews, Some(3));
        assert!(spec.same_repository_previews && spec.secret_backed_previews);
        let shown = settings(&spec);
        assert_eq!(shown.fork_previews, "without-secrets");
        assert_eq!(shown.preview_ttl_hours, None);
        assert_eq!(shown.preview_tls_mode, "disabled");
        let input = PreviewPolicyInput {
            preview_domain_template: Some("pr-{pr_number}.previews.test".into()),
            ..Default::default()
        };
        let shown = settings(&spec_of(&scope(None), &input));
        assert_eq!(shown.preview_tls_mode, "auto");
        let input = PreviewPolicyInput {
            preview_tls_mode: Some("disabled".into()),
            ..input
        };
        let spec = spec_of(&scope(None), &input);
        assert_eq!(spec.preview_tls_mode, Some(PreviewTlsMode::Disabled));
        assert_eq!(settings(&spec).preview_databases, "empty");
        let input = PreviewPolicyInput {
            preview_databases: Some("latest-backup".into()),
            ..Default::default()
        };
        let spec = spec_of(&scope(None), &input);
        assert_eq!(spec.preview_databases, PreviewDatabases::LatestBackup);
        assert_eq!(settings(&spec).preview_databases, "latest-backup");
    }
}

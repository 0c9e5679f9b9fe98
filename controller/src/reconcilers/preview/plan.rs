//! What a preview is made of and how it stands, decided without I/O: its Environment, the
//! copy of the resource deployed at the pull request's head, the attempt of that head, the
//! host name of its own (a DomainBinding, with TLS by ACME) when its policy gives one, its
//! place in the resource's quota, its expiry and its Ready condition.

use std::collections::BTreeMap;
use std::time::Duration;

use berth_crds::condition::{Condition, ConditionStatus, READY};
use berth_crds::config::{environment_secret_name, secret_name};
use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::domain_binding::{DomainBinding, DomainBindingSpec};
use berth_crds::environment::{Environment, EnvironmentSpec};
use berth_crds::limits::NAME_MAX;
use berth_crds::preview::{
    PREVIEW_LABEL, PreviewDatabase, PreviewDomain, PreviewDomainValues, PreviewEnvironment,
    PreviewEnvironmentStatus, PreviewPolicySpec, PreviewSeed, preview_attempt_name,
    preview_host_slug, reason,
};
use berth_crds::resource::{
    AccessProfile, AutoDeployPolicy, DependencyBinding, FirstDeployment, GeneratedAccessMode,
    Resource, SourceKind,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::{Resource as _, ResourceExt};

/// What triggered the preview's attempts (`spec.trigger`).
pub const TRIGGER: &str = "pull-request";

/// The name of the resource (and its attempts' prefix) a preview makes: the preview's.
pub fn made_name(preview: &PreviewEnvironment) -> String {
    preview.name_any()
}

/// The name of the preview's Environment (not the resource's: each has a Secret named after
/// it, and the two must not meet).
pub fn environment_name(preview: &PreviewEnvironment) -> String {
    format!("{}-env", preview.name_any())
}

/// Metadata of an object the preview makes: labelled with it and owned by it, so that a
/// cleanup check finds what is left and the garbage collector takes what a crash left.
pub fn owned_meta(preview: &PreviewEnvironment, name: String) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: preview.namespace(),
        labels: Some(BTreeMap::from([(
            PREVIEW_LABEL.to_string(),
            preview.name_any(),
        )])),
        owner_references: preview.controller_owner_ref(&()).map(|owner| vec![owner]),
        ..Default::default()
    }
}

/// The preview's own Environment: kind `preview`, derived from `base` (the policy's profile
/// environment, else the resource's), with its plain variables.
pub fn environment(preview: &PreviewEnvironment, base: &Environment) -> Environment {
    let number = preview.spec.source.pull_request_number;
    let name: String = format!("PR #{number} of {}", base.spec.name)
        .chars()
        .take(NAME_MAX)
        .collect();
    let mut environment = Environment::new(
        &environment_name(preview),
        EnvironmentSpec {
            project_id: preview.spec.project_id.clone(),
            name,
            kind: "preview".into(),
            parent_environment_id: Some(base.name_any()),
            variables: base.spec.variables.clone(),
            locked: false,
            lock_reason: None,
            locked_at: None,
            archived: false,
            archive_reason: None,
        },
    );
    environment.metadata = owned_meta(preview, environment_name(preview));
    environment
}

/// The source kind of `base` when it is not a git repository (a preview deploys a pull
/// request's commit, so it has nothing to deploy); `None` for a git source.
pub fn non_git_source(base: &Resource) -> Option<String> {
    let kind = base.spec.source.as_ref().map(|s| s.kind.as_str());
    match kind {
        Some(kind) if SourceKind::parse("source.kind", kind).is_ok_and(SourceKind::is_git) => None,
        Some(kind) => Some(kind.to_string()),
        None => Some("none".to_string()),
    }
}

/// How the preview's copy differs from the resource beyond the pull request's head.
#[derive(Default)]
pub struct CopyShape<'a> {
    /// It is served at a host name of its own (a DomainBinding), not its generated route.
    pub bound: bool,
    /// Its dependency bindings: the preview's own databases in place of production's.
    pub bindings: &'a [DependencyBinding],
}

/// The copy of `base` the preview deploys: the head's repository at the head commit, its own
/// host name, no auto-deploy (the preview's attempts follow the pull request), and none of
/// what would touch production's data: its databases replaced by the preview's own
/// (`shape.bindings`), no storage volumes. With a host name of its
/// own (`shape.bound`) the copy has no generated route: only the binding's serves it.
pub fn resource(preview: &PreviewEnvironment, base: &Resource, shape: &CopyShape) -> Resource {
    let source = &preview.spec.source;
    let mut spec = base.spec.clone();
    spec.environment_id = environment_name(preview);
    spec.name = format!("{} PR #{}", base.spec.name, source.pull_request_number)
        .chars()
        .take(NAME_MAX)
        .collect();
    spec.slug = Some(host_slug(preview, base));
    if let Some(descriptor) = spec.source.as_mut() {
        descriptor.locator = source.head_repository_url.clone();
        descriptor.git_ref = Some(source.head_ref.clone());
        descriptor.commit_sha = Some(source.head_sha.clone());
    }
    spec.auto_deploy = AutoDeployPolicy::default();
    spec.first_deployment = FirstDeployment::OnRequest;
    spec.dependency_bindings = shape.bindings.to_vec();
    spec.storage_attachments = Vec::new();
    spec.runtime = None;
    spec.secrets_ref = None;
    if shape.bound {
        let path_prefix = spec
            .access_profile
            .as_ref()
            .map_or_else(|| "/".to_string(), |a| a.path_prefix.clone());
        spec.access_profile = Some(AccessProfile {
            generated_access_mode: GeneratedAccessMode::Disabled,
            path_prefix,
        });
    }
    let mut copy = Resource::new(&made_name(preview), spec);
    copy.metadata = owned_meta(preview, made_name(preview));
    // Made with the Resource's cleanup finalizer: a pull request closed right after it opened
    // deletes the copy before its reconciler could add it, and without it nothing would stop
    // the attempt already running, whose container would outlive the preview.
    copy.metadata.finalizers = Some(vec![crate::reconcilers::resource::FINALIZER.to_string()]);
    copy
}

/// The host name `policy` gives the preview, if any (`Err`: why its template gives none).
/// `generated` is the preview's generated host name on its server.
pub fn domain(
    preview: &PreviewEnvironment,
    base: &Resource,
    policy: &PreviewPolicySpec,
    generated: &str,
) -> Result<Option<PreviewDomain>, String> {
    let number = preview.spec.source.pull_request_number;
    let values = PreviewDomainValues {
        pr_number: number,
        preview_id: &format!("pr-{number}"),
        slug: &base.host_slug(),
    };
    policy.preview_domain(&values, generated)
}

/// The host-name label of the preview's copy of `base` (its generated route's first label).
pub fn host_slug(preview: &PreviewEnvironment, base: &Resource) -> String {
    preview_host_slug(preview.spec.source.pull_request_number, &base.host_slug())
}

/// The name of the DomainBinding that serves a preview at its own host name.
pub fn domain_binding_name(preview: &PreviewEnvironment) -> String {
    format!("{}-domain", preview.name_any())
}

/// The DomainBinding of the preview's host name, to its resource copy.
pub fn domain_binding(preview: &PreviewEnvironment, domain: &PreviewDomain) -> DomainBinding {
    let name = domain_binding_name(preview);
    let mut binding = DomainBinding::new(
        &name,
        DomainBindingSpec {
            resource_id: made_name(preview),
            hostname: domain.hostname.clone(),
            path_prefix: "/".into(),
            tls_mode: domain.tls_mode.as_str().into(),
            server_id: None,
            http_policy: Default::default(),
        },
    );
    binding.metadata = owned_meta(preview, name);
    binding
}

/// The Secrets the preview copies when it may have secrets: (base's, preview's) names for the
/// resource's secret variables and the environment's.
pub fn secret_copies(
    preview: &PreviewEnvironment,
    base: &Resource,
    base_environment: &str,
) -> Vec<(String, String)> {
    if !preview.spec.with_secrets {
        return Vec::new();
    }
    let made = made_name(preview);
    vec![
        (secret_name(base), format!("{made}-secrets")),
        (
            environment_secret_name(base_environment),
            environment_secret_name(&environment_name(preview)),
        ),
    ]
}

/// The attempt name of the head commit: one per commit, so a replayed event or a crash
/// between create and status write never starts it twice.
pub fn attempt_name(preview: &PreviewEnvironment) -> String {
    preview_attempt_name(&made_name(preview), &preview.spec.source.head_sha)
}

/// The attempt that deploys the head commit of `copy`.
pub fn attempt(preview: &PreviewEnvironment, copy: &Resource) -> Deployment {
    let server = copy.spec.server_id.clone().unwrap_or_default();
    let destination = copy.spec.destination_id.clone();
    let mut deployment =
        Deployment::of_resource(&attempt_name(preview), copy, server, destination, TRIGGER);
    deployment
        .metadata
        .labels
        .get_or_insert_default()
        .insert(PREVIEW_LABEL.to_string(), preview.name_any());
    deployment
}

/// Whether `preview` may run under the resource's quota: the first `max` of the resource's
/// previews not being deleted, oldest first, run; the others wait.
pub fn admitted(
    preview: &PreviewEnvironment,
    siblings: &[&PreviewEnvironment],
    policy: &PreviewPolicySpec,
) -> bool {
    let Some(max) = policy.max_active_previews else {
        return true;
    };
    let key = |p: &PreviewEnvironment| {
        (
            p.metadata.creation_timestamp.as_ref().map(|t| t.0),
            p.name_any(),
        )
    };
    let mine = key(preview);
    let ahead = siblings
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.name_any() != preview.name_any())
        .filter(|p| key(p) < mine)
        .count();
    ahead < max as usize
}

/// When the preview is removed unless its head moves: its last push plus the policy's time to
/// live.
pub fn expires_at(preview: &PreviewEnvironment, policy: &PreviewPolicySpec) -> Option<Timestamp> {
    let hours = policy.preview_ttl_hours?;
    let ttl = SignedDuration::from_hours(i64::from(hours));
    preview.spec.pushed_at.0.checked_add(ttl).ok()
}

/// How long until `at`, at least a moment.
pub fn until(at: Timestamp, now: Timestamp) -> Duration {
    let left = at.duration_since(now).as_millis().max(0) + 50;
    Duration::from_millis(u64::try_from(left).unwrap_or(50))
}

/// How the head commit's attempt stands, as the preview shows it.
pub enum Progress<'a> {
    /// The attempt runs (or is about to).
    Deploying,
    /// The attempt ended without serving, and why.
    Failed(String),
    /// The head commit runs; its host name of its own is not served yet, and why.
    WaitingForDomain(String),
    /// A database of its own is being filled from a backup; the attempt starts after.
    Seeding(String),
    /// Filling a database of its own failed; nothing is deployed.
    SeedFailed(String),
    /// The head commit serves at `url`.
    Serving { url: &'a str },
}

/// Where a preview answers: its copy's generated route, or a host name of its own through
/// its DomainBinding (`None` until the binding exists).
pub enum Access<'a> {
    Generated(Option<&'a Resource>),
    Bound(Option<&'a DomainBinding>),
}

/// How the head commit's `attempt` (if it exists yet) stands, and where it answers.
pub fn progress<'a>(attempt: Option<&Deployment>, access: Access<'a>) -> Progress<'a> {
    let Some(state) = attempt.and_then(|a| a.status.as_ref()) else {
        return Progress::Deploying;
    };
    match state.status {
        Some(DeploymentState::Succeeded) => serving(access),
        Some(ended) if ended.is_terminal() => {
            Progress::Failed(state.last_error.as_ref().map_or_else(
                || format!("the attempt ended {ended:?}"),
                |e| e.message.clone(),
            ))
        }
        _ => Progress::Deploying,
    }
}

/// The progress while the preview's own databases are not all ready to deploy on (`None`:
/// they are, or it has none).
pub fn seeding(databases: &[PreviewDatabase]) -> Option<Progress<'static>> {
    if let Some(failed) = databases.iter().find(|d| d.seed == PreviewSeed::Failed) {
        let why = failed.message.clone().unwrap_or_default();
        let own = &failed.preview_dependency_resource_id;
        return Some(Progress::SeedFailed(format!("database {own}: {why}")));
    }
    let filling = databases.iter().find(|d| !d.seed.settled())?;
    let why = filling.message.clone().unwrap_or_default();
    let own = &filling.preview_dependency_resource_id;
    Some(Progress::Seeding(format!("database {own}: {why}")))
}

/// A running head commit's progress by where it answers: the binding's URL only once the
/// binding is Ready (its route applied and, with TLS, its certificate served).
fn serving(access: Access<'_>) -> Progress<'_> {
    match access {
        Access::Generated(copy) => {
            let url = copy
                .and_then(|c| c.status.as_ref()?.access_summary.as_ref()?.url())
                .unwrap_or_default();
            Progress::Serving { url }
        }
        Access::Bound(None) => {
            Progress::WaitingForDomain("its domain binding is being made".into())
        }
        Access::Bound(Some(binding)) => {
            let status = binding.status.as_ref();
            let ready = status.and_then(|s| berth_crds::condition::find(&s.conditions, READY));
            match (ready, status.and_then(|s| s.url.as_deref())) {
                (Some(c), Some(url)) if c.status == ConditionStatus::True => {
                    Progress::Serving { url }
                }
                (Some(c), _) => Progress::WaitingForDomain(format!(
                    "domain binding {}: {}",
                    binding.name_any(),
                    c.message
                )),
                (None, _) => Progress::WaitingForDomain(format!(
                    "domain binding {} is not checked yet",
                    binding.name_any()
                )),
            }
        }
    }
}

/// The status of `preview` given what it made and how it stands.
pub fn status(
    preview: &PreviewEnvironment,
    copy: Option<&Resource>,
    progress: &Progress,
    expires: Option<Timestamp>,
    now: Timestamp,
) -> PreviewEnvironmentStatus {
    let head = &preview.spec.source.head_sha;
    let (ready, why, message) = match progress {
        Progress::Deploying => (
            ConditionStatus::False,
            reason::DEPLOYING,
            format!("deploying {head}"),
        ),
        Progress::Failed(why) => (
            ConditionStatus::False,
            reason::DEPLOY_FAILED,
            format!("the attempt of {head} failed: {why}"),
        ),
        Progress::WaitingForDomain(why) => (
            ConditionStatus::False,
            reason::WAITING_FOR_DOMAIN,
            format!("{head} runs; its host name is not served yet: {why}"),
        ),
        Progress::Seeding(why) => (
            ConditionStatus::False,
            reason::SEEDING_DATABASES,
            format!("{head} deploys once its databases are filled; {why}"),
        ),
        Progress::SeedFailed(why) => (
            ConditionStatus::False,
            reason::DATABASE_SEED_FAILED,
            format!("{head} is not deployed: {why}"),
        ),
        Progress::Serving { url } => (
            ConditionStatus::True,
            reason::SERVING,
            format!("{head} serves at {url}"),
        ),
    };
    let mut status = base_status(preview, ready, why, message, now);
    status.environment_id = Some(environment_name(preview));
    status.preview_resource_id = copy.map(|c| c.name_any());
    status.server_id = copy.and_then(|c| c.spec.server_id.clone());
    status.deployment_id = Some(attempt_name(preview));
    status.expires_at = expires.map(Time);
    if let Progress::Serving { url } = progress {
        status.url = Some(url.to_string()).filter(|u| !u.is_empty());
        status.serving_sha = Some(head.clone());
    }
    status
}

/// The status with `Ready` as given and everything else as before.
pub fn base_status(
    preview: &PreviewEnvironment,
    ready: ConditionStatus,
    reason: &str,
    message: String,
    now: Timestamp,
) -> PreviewEnvironmentStatus {
    let mut status = preview.status.clone().unwrap_or_default();
    let generation = preview.metadata.generation;
    status.observed_generation = generation;
    let condition = Condition::new(READY, ready, reason, message, generation, now);
    berth_crds::condition::merge(&mut status.conditions, condition);
    status
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

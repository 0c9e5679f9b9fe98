//! What a managed dependency is on its server, decided without I/O: the names of its container,
//! volume and network, the container's settings, the health check, and the status a reconcile
//! writes from what it observed.

use std::collections::HashMap;
use std::time::Duration;

use berth_crds::condition::{self, Condition, ConditionStatus, READY};
use berth_crds::dependency_resource::{
    DependencyCredentials, DependencyKind, DependencyLifecycleStatus, DependencyResource,
    DependencyResourceStatus, EXPOSED_CONDITION as EXPOSED, MajorVersionUpgrade, POSTGRES_DATABASE,
    POSTGRES_USER, ProviderRealization, RealizationStatus, UpgradePhase, current_user,
    major_version, managed_connection,
};
use berth_crds::preview::PREVIEW_LABEL;
use berth_crds::{MANAGED_LABEL, NAMESPACE_LABEL};
use bollard::models::{
    ContainerCreateBody, HealthConfig, HostConfig, Mount, MountType, PortBinding, RestartPolicy,
    RestartPolicyNameEnum,
};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use rand::Rng;
use rand::distr::Alphanumeric;

use super::firewall::Rules;
use super::tls::{self, Pem};

pub use berth_crds::DEPENDENCY_LABEL;
/// Label holding the image reference the container was created from: a changed `spec.image`
/// recreates it (the data volume stays).
pub const IMAGE_LABEL: &str = "berth.dev/dependency-image";
/// Label holding the fingerprint of the server certificate a PostgreSQL was created with: a
/// container without it (made before Berth served TLS) or with another is made again.
pub const TLS_LABEL: &str = "berth.dev/dependency-tls";
/// Label holding the host port a container publishes (`spec.exposure`), absent when private.
pub const EXPOSURE_LABEL: &str = "berth.dev/dependency-exposure";
/// The labels that say a container runs as declared; any difference recreates it.
pub const SETTINGS_LABELS: [&str; 3] = [IMAGE_LABEL, TLS_LABEL, EXPOSURE_LABEL];
/// Length of a generated password (letters and digits: no quoting in URLs or shells).
const PASSWORD_LEN: usize = 32;

/// Reasons of the `Ready` condition.
pub mod reason {
    /// Serving, and the health check passed.
    pub const HEALTHY: &str = "Healthy";
    /// The container is being created, or has not answered its first health check.
    pub const PROVISIONING: &str = "Provisioning";
    /// It served once, and its health check fails now (`lifecycleStatus: degraded`).
    pub const DEGRADED: &str = "Degraded";
    /// The server cannot be reached, or Docker refused a step.
    pub const SERVER_FAILED: &str = "ServerFailed";
    /// An imported dependency that has not answered its check from the server yet.
    pub const UNREACHABLE: &str = "Unreachable";
    /// `spec.image` is a PostgreSQL of another major version than the data on the volume.
    pub const MAJOR_VERSION_REFUSED: &str = "MajorVersionChangeRefused";
    /// A major-version upgrade runs: the old server serves reads, writes wait.
    pub const UPGRADING: &str = "MajorVersionUpgrading";
    /// The major-version upgrade asked for by this spec failed; the old version serves.
    pub const UPGRADE_FAILED: &str = "MajorVersionUpgradeFailed";
    /// An upgrade is asked for but the old version's container, which it copies from, is gone.
    pub const UPGRADE_SOURCE_MISSING: &str = "MajorVersionUpgradeSourceMissing";
    /// `Exposed=True`: the host port is published and only `allowFrom` reaches it.
    pub const PUBLISHED: &str = "Published";
    /// `Exposed=False`: the firewall rules could not be put in place, so no port is published.
    pub const FIREWALL_FAILED: &str = "FirewallFailed";
    /// `Exposed=False`: the port is closed again, but its firewall rules could not be removed.
    pub const FIREWALL_REMOVAL_FAILED: &str = "FirewallRemovalFailed";
}

/// Names of one dependency's objects on its server (`berth-dep-<namespace>-<name>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    /// The container; also its host name on the private network.
    pub container: String,
    /// The private network; apps bound to the dependency join it.
    pub network: String,
    /// The named volume holding the data.
    pub volume: String,
    /// The Secret with the password and URL.
    pub secret: String,
}

impl Names {
    pub fn of(dependency: &DependencyResource) -> Self {
        let namespace = dependency.namespace().unwrap_or_default();
        let name = dependency.name_any();
        let base = berth_crds::dependency_resource::network_name(&namespace, &name);
        // A major-version upgrade moves the data to a volume of its own.
        let volume = dependency
            .status
            .as_ref()
            .and_then(|s| s.data_volume.clone())
            .unwrap_or_else(|| format!("{base}-data"));
        Self {
            container: base.clone(),
            network: base.clone(),
            volume,
            secret: berth_crds::dependency_resource::connection_secret_name(&name),
        }
    }
}

/// A new random password.
pub fn generate_password() -> String {
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(PASSWORD_LEN)
        .map(char::from)
        .collect()
}

/// The container of a managed dependency: its image with the data volume at the kind's data
/// path, on its private network, restarted by Docker unless stopped; its port is published on
/// the host only with `published` (rules already in place). The password goes in as an
/// environment variable, never on a command line. A PostgreSQL with `tls` serves it with the
/// files `tls::server_files` puts in before the container starts.
pub fn container_body(
    dependency: &DependencyResource,
    names: &Names,
    password: &str,
    tls: Option<&Pem>,
    published: Option<&Rules>,
) -> ContainerCreateBody {
    let kind = dependency.spec.kind;
    let image = dependency.spec.image().to_string();
    let (env, cmd) = match kind {
        DependencyKind::Postgres => (
            vec![
                format!("POSTGRES_USER={POSTGRES_USER}"),
                format!("POSTGRES_PASSWORD={password}"),
                format!("POSTGRES_DB={POSTGRES_DATABASE}"),
            ],
            tls.map(|_| {
                let mut command = vec!["postgres".to_string()];
                command.extend(tls::server_options());
                command
            }),
        ),
        // The official image takes no password variable: the server reads `requirepass` from
        // its standard input (a here-document), so no command line shows the password.
        DependencyKind::Redis => (
            vec![format!("REDIS_PASSWORD={password}")],
            Some(vec![
                "sh".to_string(),
                "-c".to_string(),
                "exec redis-server - --dir /data --appendonly yes <<EOF\n\
                 requirepass $REDIS_PASSWORD\nEOF"
                    .to_string(),
            ]),
        ),
    };
    let namespace = dependency.namespace().unwrap_or_default();
    let mut labels = HashMap::from([
        (MANAGED_LABEL.to_string(), "true".to_string()),
        (NAMESPACE_LABEL.to_string(), namespace),
        (DEPENDENCY_LABEL.to_string(), dependency.name_any()),
        (IMAGE_LABEL.to_string(), image.clone()),
    ]);
    if let Some(preview) = dependency.labels().get(PREVIEW_LABEL) {
        labels.insert(PREVIEW_LABEL.to_string(), preview.clone());
    }
    if let Some(tls) = tls {
        labels.insert(TLS_LABEL.to_string(), tls::fingerprint(tls));
    }
    if let Some(rules) = published {
        labels.insert(EXPOSURE_LABEL.to_string(), rules.host_port.to_string());
    }
    let port = format!("{}/tcp", kind.port());
    ContainerCreateBody {
        image: Some(image),
        env: Some(env),
        cmd,
        labels: Some(labels),
        healthcheck: Some(health_config(kind)),
        exposed_ports: published.map(|_| vec![port.clone()]),
        host_config: Some(HostConfig {
            network_mode: Some(names.network.clone()),
            port_bindings: published.map(|rules| HashMap::from([(port, Some(bindings(rules)))])),
            mounts: Some(vec![Mount {
                target: Some(kind.data_path().to_string()),
                source: Some(names.volume.clone()),
                typ: Some(MountType::VOLUME),
                ..Default::default()
            }]),
            restart_policy: Some(RestartPolicy {
                name: Some(RestartPolicyNameEnum::UNLESS_STOPPED),
                maximum_retry_count: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The host addresses a published port listens on: IPv6 only when an IPv6 source is allowed.
fn bindings(rules: &Rules) -> Vec<PortBinding> {
    let on = |address: &str| PortBinding {
        host_ip: Some(address.to_string()),
        host_port: Some(rules.host_port.to_string()),
    };
    let mut bindings = vec![on("0.0.0.0")];
    if rules.publishes_v6() {
        bindings.push(on("::"));
    }
    bindings
}

/// How often Docker runs the health check on the server (the observer hears each change).
const HEALTH_INTERVAL: Duration = Duration::from_secs(15);
/// How long one check may take before Docker counts it failed.
const HEALTH_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// The container's own health check: [`health_command`], run by Docker on the server. One
/// failure marks it unhealthy, which only wakes the reconciler: its own check decides whether
/// the dependency is degraded.
fn health_config(kind: DependencyKind) -> HealthConfig {
    let nanos = |d: Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
    let mut test = vec!["CMD".to_string()];
    test.extend(health_command(kind));
    HealthConfig {
        test: Some(test),
        interval: Some(nanos(HEALTH_INTERVAL)),
        timeout: Some(nanos(HEALTH_CHECK_TIMEOUT)),
        retries: Some(1),
        ..Default::default()
    }
}

/// The health check run inside the container (by Docker as its health check, and by `docker
/// exec` when the reconciler looks itself): it reads the password from the container's own
/// environment, so the request carries none.
pub fn health_command(kind: DependencyKind) -> Vec<String> {
    let script = match kind {
        DependencyKind::Postgres => format!(
            "pg_isready -q -h 127.0.0.1 -p {} -U {POSTGRES_USER} -d {POSTGRES_DATABASE}",
            kind.port()
        ),
        DependencyKind::Redis => {
            "REDISCLI_AUTH=\"$REDIS_PASSWORD\" redis-cli -h 127.0.0.1 ping | grep -qx PONG"
                .to_string()
        }
    };
    vec!["sh".to_string(), "-c".to_string(), script]
}

/// What one reconcile found on the server.
#[derive(Clone, Debug, PartialEq)]
pub enum Observed {
    /// The container runs and its health check passed.
    Healthy,
    /// The container runs (or was just started) but the health check failed: why.
    Unhealthy(String),
    /// A step on the server failed: the code and what happened (no secret in it).
    Failed { code: String, message: String },
}

/// The status of a managed dependency after a reconcile that observed `observed`.
pub fn decide(
    dependency: &DependencyResource,
    names: &Names,
    observed: &Observed,
    now: Timestamp,
) -> DependencyResourceStatus {
    let current = dependency.status.clone().unwrap_or_default();
    let generation = dependency.metadata.generation;
    let previous = current.provider_realization.as_ref();
    let was_realized = previous.is_some_and(|r| r.realized_at.is_some());
    let realized_at = previous
        .and_then(|r| r.realized_at.clone())
        .or_else(|| matches!(observed, Observed::Healthy).then(|| wire(now)));
    let Verdict {
        lifecycle,
        ready,
        reason,
        message,
        realization,
    } = verdict(dependency, observed, was_realized);
    let mut conditions = current.conditions.clone();
    condition::merge(
        &mut conditions,
        Condition::new(READY, ready, reason, message, generation, now),
    );
    let (status, failure_code, failure_message) = realization;
    DependencyResourceStatus {
        observed_generation: generation,
        lifecycle_status: Some(lifecycle),
        provider_realization: Some(ProviderRealization {
            status,
            provider_resource_handle: Some(names.container.clone()),
            volume: Some(names.volume.clone()),
            network: Some(names.network.clone()),
            realized_at,
            failure_code,
            failure_message,
        }),
        connection: Some(managed_connection(
            dependency.spec.kind,
            &names.container,
            current_user(dependency.status.as_ref()),
            &names.secret,
        )),
        data_version: current
            .data_version
            .or_else(|| served_version(dependency, observed)),
        data_volume: current.data_volume,
        upgrade: current.upgrade,
        credentials: current.credentials,
        conditions,
    }
}

/// Records `credentials` (a PostgreSQL's) and the connection that logs in with them.
pub fn record_credentials(
    dependency: &DependencyResource,
    names: &Names,
    status: &mut DependencyResourceStatus,
    credentials: DependencyCredentials,
) {
    if dependency.spec.kind != DependencyKind::Postgres {
        return;
    }
    status.connection = Some(managed_connection(
        dependency.spec.kind,
        &names.container,
        &credentials.user,
        &names.secret,
    ));
    status.credentials = Some(credentials);
}

/// The major version of the data a PostgreSQL that answers its health check serves: its
/// image's (it could not run on data of another one).
fn served_version(dependency: &DependencyResource, observed: &Observed) -> Option<String> {
    let postgres = dependency.spec.kind == DependencyKind::Postgres;
    let serving = matches!(observed, Observed::Healthy);
    (postgres && serving)
        .then(|| major_version(dependency.spec.image()))
        .flatten()
        .map(|version| version.to_string())
}

/// What `spec.image` asks of the data on the volume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VersionChange {
    /// Nothing: the same major version, another kind, or nothing served yet.
    Same,
    /// Left as it runs, with the `Ready` reason and why.
    Refused {
        reason: &'static str,
        message: String,
    },
    /// Upgraded by dump and restore (`spec.majorVersionUpgrade: dump-restore`).
    Upgrade { from: u32, to: u32 },
}

/// Whether `spec.image` is another major version than the PostgreSQL data it must read, and
/// what is done about it: refused (PostgreSQL cannot read another major version's data; the
/// new container would stop at start and the app lose its database) unless an upgrade path is
/// named, and then refused still for a downgrade, an image whose tag names no version, or an
/// upgrade that failed for this spec.
pub fn version_change(dependency: &DependencyResource) -> VersionChange {
    let status = dependency.status.as_ref();
    let data = status.and_then(|s| s.data_version.as_deref());
    let (DependencyKind::Postgres, Some(data)) = (dependency.spec.kind, data) else {
        return VersionChange::Same;
    };
    let image = dependency.spec.image();
    let wanted = major_version(image);
    if wanted.map(|v| v.to_string()).as_deref() == Some(data) {
        return VersionChange::Same;
    }
    let refused = |message: String| VersionChange::Refused {
        reason: reason::MAJOR_VERSION_REFUSED,
        message,
    };
    let back = format!("set spec.image back to a PostgreSQL {data} image");
    let (Some(to), Ok(from)) = (wanted, data.parse::<u32>()) else {
        return refused(format!(
            "spec.image {image} is a PostgreSQL whose major version its tag does not name, and \
             the data volume holds PostgreSQL {data} data: {back}, or name the version"
        ));
    };
    if to < from {
        return refused(format!(
            "spec.image {image} is PostgreSQL {to}, older than the PostgreSQL {from} data on \
             the volume: a downgrade is not offered; {back}"
        ));
    }
    if dependency.spec.major_version_upgrade != Some(MajorVersionUpgrade::DumpRestore) {
        return refused(format!(
            "spec.image {image} is PostgreSQL {to}, and the data volume holds PostgreSQL \
             {from} data, which it cannot read: set spec.majorVersionUpgrade: dump-restore to \
             upgrade by dump and restore (writes wait meanwhile; the old data is kept), or \
             {back}. The running container is left as it is"
        ));
    }
    let failed = status.and_then(|s| s.upgrade.as_ref()).filter(|u| {
        u.phase == UpgradePhase::Failed
            && u.image == image
            && u.generation == dependency.metadata.generation
    });
    match failed {
        Some(upgrade) => VersionChange::Refused {
            reason: reason::UPGRADE_FAILED,
            message: format!(
                "the upgrade to PostgreSQL {to} failed: {}; PostgreSQL {from} serves as before. \
                 Change the spec (e.g. set spec.image again) to try again",
                upgrade.message
            ),
        },
        None => VersionChange::Upgrade { from, to },
    }
}

/// What one observation says: lifecycle, the `Ready` condition and the realization's status
/// with its failure, if any.
struct Verdict {
    lifecycle: DependencyLifecycleStatus,
    ready: ConditionStatus,
    reason: &'static str,
    message: String,
    realization: (RealizationStatus, Option<String>, Option<String>),
}

/// A failing check is `degraded` once the dependency served, `provisioning` before.
fn verdict(dependency: &DependencyResource, observed: &Observed, was_realized: bool) -> Verdict {
    let (lifecycle, ready, reason, message, realization) = match observed {
        Observed::Healthy => (
            DependencyLifecycleStatus::Ready,
            ConditionStatus::True,
            reason::HEALTHY,
            format!("{} answers its health check", dependency.spec.kind.as_str()),
            (RealizationStatus::Ready, None, None),
        ),
        Observed::Unhealthy(why) => (
            if was_realized {
                DependencyLifecycleStatus::Degraded
            } else {
                DependencyLifecycleStatus::Provisioning
            },
            ConditionStatus::False,
            if was_realized {
                reason::DEGRADED
            } else {
                reason::PROVISIONING
            },
            why.clone(),
            (
                if was_realized {
                    RealizationStatus::Ready
                } else {
                    RealizationStatus::Pending
                },
                None,
                None,
            ),
        ),
        Observed::Failed { code, message } => (
            if was_realized {
                DependencyLifecycleStatus::Degraded
            } else {
                DependencyLifecycleStatus::Provisioning
            },
            ConditionStatus::False,
            reason::SERVER_FAILED,
            message.clone(),
            (
                RealizationStatus::Failed,
                Some(code.clone()),
                Some(message.clone()),
            ),
        ),
    };
    Verdict {
        lifecycle,
        ready,
        reason,
        message,
        realization,
    }
}

/// Where a reconcile left the host port of `spec.exposure`.
#[derive(Clone, Debug, PartialEq)]
pub enum Exposure {
    /// Not looked at (the server could not be reached, or the container not made).
    Unchanged,
    /// None asked for, and no rules left on the server.
    Private,
    /// Published, behind rules that let only `allowFrom` in.
    Published(Rules),
    /// Asked for, but the rules could not be put in place: why (no port is published).
    Withheld(String),
    /// No longer asked for and closed, but removing the rules failed: why (retried).
    Lingering(String),
}

/// Records `exposure` as the `Exposed` condition (absent while private).
pub fn record_exposure(
    dependency: &DependencyResource,
    status: &mut DependencyResourceStatus,
    exposure: &Exposure,
    now: Timestamp,
) {
    let (state, reason, message) = match exposure {
        Exposure::Unchanged => return,
        Exposure::Private => {
            status.conditions.retain(|c| c.type_ != EXPOSED);
            return;
        }
        Exposure::Published(rules) => (
            ConditionStatus::True,
            reason::PUBLISHED,
            format!(
                "host port {} is published; only {} may connect (firewall chain {} on the \
                 server)",
                rules.host_port,
                rules
                    .v4
                    .iter()
                    .chain(&rules.v6)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
                rules.chain
            ),
        ),
        Exposure::Withheld(why) => (
            ConditionStatus::False,
            reason::FIREWALL_FAILED,
            format!(
                "the host port is not published: its firewall rules could not be put in place \
                 ({why}); the dependency is reachable on its private network only"
            ),
        ),
        Exposure::Lingering(why) => (
            ConditionStatus::False,
            reason::FIREWALL_REMOVAL_FAILED,
            format!(
                "the host port is closed, but its firewall rules are still on the server ({why})"
            ),
        ),
    };
    let generation = dependency.metadata.generation;
    let exposed = Condition::new(EXPOSED, state, reason, message, generation, now);
    condition::merge(&mut status.conditions, exposed);
}

/// Whether the server is as `spec.exposure` asks, as the last reconcile of this generation
/// recorded: then a healthy dependency needs no look at its container.
pub fn exposure_settled(dependency: &DependencyResource) -> bool {
    let conditions = dependency.status.as_ref().map(|s| s.conditions.as_slice());
    let exposed = conditions.and_then(|c| condition::find(c, EXPOSED));
    match (&dependency.spec.exposure, exposed) {
        (None, None) => true,
        (Some(_), Some(exposed)) => {
            exposed.status == ConditionStatus::True
                && exposed.observed_generation == dependency.metadata.generation
        }
        _ => false,
    }
}

/// Whether the last reconcile left a host port or its rules (the rules are then removed).
pub fn was_exposed(dependency: &DependencyResource) -> bool {
    let conditions = dependency.status.as_ref().map(|s| s.conditions.as_slice());
    conditions
        .and_then(|c| condition::find(c, EXPOSED))
        .is_some()
}

/// The status of a dependency the controller does not run: `Ready=False` with `reason` and
/// `message` (an invalid spec, an import).
pub fn not_run(
    dependency: &DependencyResource,
    reason: &str,
    message: String,
    now: Timestamp,
) -> DependencyResourceStatus {
    DependencyResourceStatus {
        lifecycle_status: Some(DependencyLifecycleStatus::Provisioning),
        ..refused(dependency, reason, message, now)
    }
}

/// The status of a dependency whose spec is refused while what runs is left alone: `Ready`
/// is `False` with why, the rest as it was.
pub fn refused(
    dependency: &DependencyResource,
    reason: &str,
    message: String,
    now: Timestamp,
) -> DependencyResourceStatus {
    let current = dependency.status.clone().unwrap_or_default();
    let generation = dependency.metadata.generation;
    let mut conditions = current.conditions.clone();
    condition::merge(
        &mut conditions,
        Condition::new(
            READY,
            ConditionStatus::False,
            reason,
            message,
            generation,
            now,
        ),
    );
    DependencyResourceStatus {
        observed_generation: generation,
        conditions,
        ..current
    }
}

fn wire(now: Timestamp) -> String {
    now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dependency(kind: &str) -> DependencyResource {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "DependencyResource",
            "metadata": {"name": "db", "namespace": "org-acme", "generation": 2},
            "spec": {"kind": kind, "projectId": "p", "environmentId": "e", "serverId": "local",
                     "name": "Main"},
        }))
        .unwrap()
    }

    #[test]
    fn names_are_per_namespace_and_object() {
        let names = Names::of(&dependency("postgres"));
        assert_eq!(names.container, "berth-dep-org-acme-db");
        assert_eq!(names.network, "berth-dep-org-acme-db");
        assert_eq!(names.volume, "berth-dep-org-acme-db-data");
        assert_eq!(names.secret, "db-connection");
    }

    #[test]
    fn passwords_are_random_letters_and_digits() {
        let (a, b) = (generate_password(), generate_password());
        assert_eq!(a.len(), PASSWORD_LEN);
        assert_ne!(a, b);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
    }

    #[test]
    fn the_container_keeps_its_data_on_the_volume_and_publishes_no_port() {
        let postgres = dependency("postgres");
        let names = Names::of(&postgres);
        let tls = Pem {
            cert: "CERT".into(),
            key: "KEY".into(),
        };
        let body = container_body(&postgres, &names, "pw-1234", Some(&tls), None);
        assert_eq!(body.image.as_deref(), Some("postgres:16"));
        let command = body.cmd.clone().unwrap().join(" ");
        assert!(command.starts_with("postgres -c ssl=on"), "{command}");
        let labels = body.labels.clone().unwrap();
        assert_eq!(labels.get(TLS_LABEL), Some(&tls::fingerprint(&tls)));
        let host = body.host_config.unwrap();
        assert_eq!(host.network_mode.as_deref(), Some("berth-dep-org-acme-db"));
        assert!(host.port_bindings.is_none());
        let mount = &host.mounts.unwrap()[0];
        assert_eq!(mount.source.as_deref(), Some("berth-dep-org-acme-db-data"));
        assert_eq!(mount.target.as_deref(), Some("/var/lib/postgresql/data"));

        let redis = dependency("redis");
        let body = container_body(&redis, &Names::of(&redis), "pw-1234", None, None);
        let cmd = body.cmd.unwrap().join(" ");
        assert!(
            !cmd.contains("pw-1234"),
            "the password is not on the command line"
        );
        assert!(
            body.env
                .unwrap()
                .contains(&"REDIS_PASSWORD=pw-1234".to_string())
        );
        assert!(
            !health_command(DependencyKind::Redis)
                .join(" ")
                .contains("pw-1234")
        );
    }

    #[test]
    fn a_postgres_records_its_data_version_once_it_serves() {
        let mut db = dependency("postgres");
        db.spec.image = Some("127.0.0.1:5000/berth/postgres:15".into());
        let names = Names::of(&db);
        let starting = decide(
            &db,
            &names,
            &Observed::Unhealthy("starting".into()),
            Timestamp::now(),
        );
        assert_eq!(starting.data_version, None, "not served yet");
        let serving = decide(&db, &names, &Observed::Healthy, Timestamp::now());
        assert_eq!(serving.data_version.as_deref(), Some("15"));
        db.status = Some(serving);
        db.spec.image = Some("postgres:15.6".into());
        let kept = decide(&db, &names, &Observed::Healthy, Timestamp::now());
        assert_eq!(kept.data_version.as_deref(), Some("15"));
        let redis = dependency("redis");
        let status = decide(
            &redis,
            &Names::of(&redis),
            &Observed::Healthy,
            Timestamp::now(),
        );
        assert_eq!(status.data_version, None);
    }

    #[test]
    fn another_major_version_is_refused_unless_an_upgrade_path_is_named() {
        let mut db = dependency("postgres");
        db.spec.image = Some("postgres:15".into());
        let names = Names::of(&db);
        db.status = Some(decide(&db, &names, &Observed::Healthy, Timestamp::now()));
        assert_eq!(version_change(&db), VersionChange::Same);
        db.spec.image = Some("postgres:15.6-bookworm".into());
        assert_eq!(version_change(&db), VersionChange::Same, "a minor version");
        db.spec.image = Some("postgres:16".into());
        let VersionChange::Refused { reason, message } = version_change(&db) else {
            panic!("refused without an upgrade path");
        };
        assert_eq!(reason, reason::MAJOR_VERSION_REFUSED);
        assert!(
            message.contains("spec.majorVersionUpgrade: dump-restore"),
            "{message}"
        );
        assert!(message.contains("PostgreSQL 15 data"), "{message}");

        db.spec.major_version_upgrade = Some(MajorVersionUpgrade::DumpRestore);
        assert_eq!(
            version_change(&db),
            VersionChange::Upgrade { from: 15, to: 16 }
        );
        db.spec.image = Some("postgres:latest".into());
        assert!(
            matches!(version_change(&db), VersionChange::Refused { .. }),
            "no version"
        );
        db.spec.image = Some("postgres:14".into());
        let VersionChange::Refused { message, .. } = version_change(&db) else {
            panic!("a downgrade is refused");
        };
        assert!(message.contains("downgrade"), "{message}");

        let refused = refused(
            &db,
            reason::MAJOR_VERSION_REFUSED,
            message,
            Timestamp::now(),
        );
        let ready = condition::find(&refused.conditions, READY).unwrap();
        assert_eq!(ready.status, ConditionStatus::False);
        assert_eq!(
            refused.lifecycle_status,
            Some(DependencyLifecycleStatus::Ready)
        );
        assert_eq!(refused.data_version.as_deref(), Some("15"));
    }

    #[test]
    fn an_exposure_publishes_the_port_only_behind_its_rules() {
        let mut db = dependency("postgres");
        db.spec.exposure = serde_json::from_value(
            serde_json::json!({"hostPort": 15432, "allowFrom": ["203.0.113.0/24"]}),
        )
        .unwrap();
        let names = Names::of(&db);
        let rules = Rules::of(&names.container, db.spec.exposure.as_ref().unwrap());
        let body = container_body(&db, &names, "pw-1234", None, Some(&rules));
        assert_eq!(body.labels.as_ref().unwrap()[EXPOSURE_LABEL], "15432");
        let bindings = body.host_config.unwrap().port_bindings.unwrap();
        let published = bindings["5432/tcp"].clone().unwrap();
        assert_eq!(published.len(), 1, "IPv4 only: no IPv6 source is allowed");
        assert_eq!(published[0].host_ip.as_deref(), Some("0.0.0.0"));
        assert_eq!(published[0].host_port.as_deref(), Some("15432"));
        let withheld = container_body(&db, &names, "pw-1234", None, None);
        assert!(withheld.host_config.unwrap().port_bindings.is_none());
        assert!(!withheld.labels.unwrap().contains_key(EXPOSURE_LABEL));

        let now = Timestamp::now();
        let mut status = decide(&db, &names, &Observed::Healthy, now);
        assert!(!exposure_settled(&db), "asked for, not recorded yet");
        record_exposure(&db, &mut status, &Exposure::Published(rules), now);
        let exposed = condition::find(&status.conditions, EXPOSED).unwrap();
        assert_eq!(exposed.status, ConditionStatus::True);
        assert!(
            exposed.message.contains("only 203.0.113.0/24"),
            "{}",
            exposed.message
        );
        db.status = Some(status.clone());
        assert!(exposure_settled(&db));
        let failed = Exposure::Withheld("iptables is not installed".into());
        record_exposure(&db, &mut status, &failed, now);
        let exposed = condition::find(&status.conditions, EXPOSED).unwrap();
        assert_eq!(exposed.reason, reason::FIREWALL_FAILED);
        db.status = Some(status.clone());
        assert!(!exposure_settled(&db), "a withheld port is looked at again");

        db.spec.exposure = None;
        assert!(was_exposed(&db) && !exposure_settled(&db));
        record_exposure(&db, &mut status, &Exposure::Private, now);
        assert!(condition::find(&status.conditions, EXPOSED).is_none());
        db.status = Some(status);
        assert!(exposure_settled(&db) && !was_exposed(&db));
    }

    #[test]
    fn health_decides_ready_provisioning_and_degraded() {
        let now = Timestamp::now();
        let mut db = dependency("postgres");
        let names = Names::of(&db);
        let first = decide(&db, &names, &Observed::Unhealthy("no answer".into()), now);
        assert_eq!(
            first.lifecycle_status,
            Some(DependencyLifecycleStatus::Provisioning)
        );
        assert_eq!(first.conditions[0].reason, reason::PROVISIONING);
        db.status = Some(first);
        let ready = decide(&db, &names, &Observed::Healthy, now);
        assert_eq!(
            ready.lifecycle_status,
            Some(DependencyLifecycleStatus::Ready)
        );
        assert_eq!(ready.conditions[0].status, ConditionStatus::True);
        assert_eq!(ready.observed_generation, Some(2));
        let connection = ready.connection.clone().unwrap();
        assert_eq!(
            connection.masked_connection,
            "postgres://berth:****@berth-dep-org-acme-db:5432/app\
             ?sslmode=verify-full&sslrootcert=/etc/berth/database-ca.crt"
        );
        assert_eq!(connection.secret_ref.as_deref(), Some("db-connection"));
        db.status = Some(ready);
        let degraded = decide(&db, &names, &Observed::Unhealthy("refused".into()), now);
        assert_eq!(
            degraded.lifecycle_status,
            Some(DependencyLifecycleStatus::Degraded)
        );
        assert_eq!(degraded.conditions[0].reason, reason::DEGRADED);
        assert_eq!(degraded.conditions[0].message, "refused");
        assert!(degraded.provider_realization.unwrap().realized_at.is_some());
    }
}

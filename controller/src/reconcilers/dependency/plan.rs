//! What a managed dependency is on its server, decided without I/O: the names of its container,
//! volume and network, the container's settings, the health check, and the status a reconcile
//! writes from what it observed.

use std::collections::HashMap;
use std::time::Duration;

use berth_crds::condition::{self, Condition, ConditionStatus, READY};
use berth_crds::dependency_resource::{
    DependencyCredentials, DependencyKind, DependencyLifecycleStatus, DependencyResource,
    DependencyResourceStatus, POSTGRES_DATABASE, POSTGRES_USER, ProviderRealization,
    RealizationStatus, current_user, major_version, managed_connection,
};
use berth_crds::{MANAGED_LABEL, NAMESPACE_LABEL};
use bollard::models::{
    ContainerCreateBody, HealthConfig, HostConfig, Mount, MountType, RestartPolicy,
    RestartPolicyNameEnum,
};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use rand::Rng;
use rand::distr::Alphanumeric;

use super::tls::{self, Pem};

pub use berth_crds::DEPENDENCY_LABEL;
/// Label holding the image reference the container was created from: a changed `spec.image`
/// recreates it (the data volume stays).
pub const IMAGE_LABEL: &str = "berth.dev/dependency-image";
/// Label holding the fingerprint of the server certificate a PostgreSQL was created with: a
/// container without it (made before Berth served TLS) or with another is made again.
pub const TLS_LABEL: &str = "berth.dev/dependency-tls";
/// The labels that say a container runs as declared; any difference recreates it.
pub const SETTINGS_LABELS: [&str; 2] = [IMAGE_LABEL, TLS_LABEL];
/// Condition type present while `spec.exposure` asks for a host port: `False` for now.
pub const EXPOSED: &str = "Exposed";
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
    /// `Exposed=False`: no host port is published until Berth can enforce `allowFrom`.
    pub const ALLOW_LIST_NOT_ENFORCED: &str = "AllowListNotEnforced";
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
        Self {
            container: base.clone(),
            network: base.clone(),
            volume: format!("{base}-data"),
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
/// path, on its private network only (no port published), restarted by Docker unless stopped.
/// The password goes in as an environment variable, never on a command line. A PostgreSQL with
/// `tls` serves it with the files `tls::server_files` puts in before the container starts.
pub fn container_body(
    dependency: &DependencyResource,
    names: &Names,
    password: &str,
    tls: Option<&Pem>,
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
    if let Some(tls) = tls {
        labels.insert(TLS_LABEL.to_string(), tls::fingerprint(tls));
    }
    ContainerCreateBody {
        image: Some(image),
        env: Some(env),
        cmd,
        labels: Some(labels),
        healthcheck: Some(health_config(kind)),
        host_config: Some(HostConfig {
            network_mode: Some(names.network.clone()),
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
    exposure(dependency, &mut conditions, now);
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

/// Why `spec.image` is refused, if it is: PostgreSQL cannot read the data of another major
/// version (the new container would stop at start and the app lose its database).
pub fn version_refusal(dependency: &DependencyResource) -> Option<String> {
    if dependency.spec.kind != DependencyKind::Postgres {
        return None;
    }
    let data = dependency.status.as_ref()?.data_version.as_deref()?;
    let image = dependency.spec.image();
    let wanted = major_version(image).map(|version| version.to_string());
    if wanted.as_deref() == Some(data) {
        return None;
    }
    let what = match wanted {
        Some(version) => format!("PostgreSQL {version}"),
        None => "a PostgreSQL whose major version its tag does not name".to_string(),
    };
    Some(format!(
        "spec.image {image} is {what}, and the data volume holds PostgreSQL {data} data, which          it cannot read: set spec.image back to a PostgreSQL {data} image. A major version          upgrade needs a dump and restore, which Berth does not do yet; the running container          is left as it is"
    ))
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

/// `Exposed=False` while `spec.exposure` asks for a host port: publishing one through Docker
/// bypasses the server's firewall, so the port stays closed until Berth enforces `allowFrom`
/// (a public toggle that does not do what it says is worse than none).
fn exposure(dependency: &DependencyResource, conditions: &mut Vec<Condition>, now: Timestamp) {
    let Some(exposure) = &dependency.spec.exposure else {
        conditions.retain(|c| c.type_ != EXPOSED);
        return;
    };
    let message = format!(
        "host port {} is not published: Berth cannot enforce allowFrom on the server yet; \
         the dependency is reachable on its private network only",
        exposure.host_port
    );
    condition::merge(
        conditions,
        Condition::new(
            EXPOSED,
            ConditionStatus::False,
            reason::ALLOW_LIST_NOT_ENFORCED,
            message,
            dependency.metadata.generation,
            now,
        ),
    );
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
        let body = container_body(&postgres, &names, "pw-1234", Some(&tls));
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
        let body = container_body(&redis, &Names::of(&redis), "pw-1234", None);
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
    fn another_major_version_is_refused_and_leaves_the_rest_of_the_status() {
        let mut db = dependency("postgres");
        db.spec.image = Some("postgres:15".into());
        let names = Names::of(&db);
        db.status = Some(decide(&db, &names, &Observed::Healthy, Timestamp::now()));
        assert_eq!(version_refusal(&db), None);
        db.spec.image = Some("postgres:15.6-bookworm".into());
        assert_eq!(version_refusal(&db), None, "a minor version is fine");
        db.spec.image = Some("postgres:16".into());
        let message = version_refusal(&db).unwrap();
        assert!(
            message.contains("spec.image postgres:16 is PostgreSQL 16"),
            "{message}"
        );
        assert!(message.contains("PostgreSQL 15 data"), "{message}");
        db.spec.image = Some("postgres:latest".into());
        assert!(version_refusal(&db).is_some(), "an unknown major version");

        let refused = refused(
            &db,
            reason::MAJOR_VERSION_REFUSED,
            message,
            Timestamp::now(),
        );
        let ready = condition::find(&refused.conditions, READY).unwrap();
        assert_eq!(ready.status, ConditionStatus::False);
        assert_eq!(ready.reason, reason::MAJOR_VERSION_REFUSED);
        assert_eq!(
            refused.lifecycle_status,
            Some(DependencyLifecycleStatus::Ready)
        );
        assert_eq!(refused.data_version.as_deref(), Some("15"));
    }

    #[test]
    fn an_exposure_is_reported_not_published() {
        let mut db = dependency("postgres");
        db.spec.exposure = serde_json::from_value(
            serde_json::json!({"hostPort": 15432, "allowFrom": ["203.0.113.0/24"]}),
        )
        .unwrap();
        let names = Names::of(&db);
        let body = container_body(&db, &names, "pw-1234", None);
        assert!(body.host_config.unwrap().port_bindings.is_none());
        let status = decide(&db, &names, &Observed::Healthy, Timestamp::now());
        let exposed = condition::find(&status.conditions, EXPOSED).unwrap();
        assert_eq!(exposed.status, ConditionStatus::False);
        assert_eq!(exposed.reason, reason::ALLOW_LIST_NOT_ENFORCED);
        db.spec.exposure = None;
        db.status = Some(status);
        let status = decide(&db, &names, &Observed::Healthy, Timestamp::now());
        assert!(condition::find(&status.conditions, EXPOSED).is_none());
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

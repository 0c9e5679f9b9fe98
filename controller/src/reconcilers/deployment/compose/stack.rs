//! What a Compose file becomes on a Berth server, decided without I/O: one network of the
//! stack's own where every service answers to its name; the routed service run like any
//! resource's container (a new one per attempt, on the edge network, health-checked before
//! it takes traffic); every other service one long-lived container, replaced only when its
//! settings or image change (a database is not restarted by a push that changes the web app).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use berth_crds::{SIDECAR_LABEL, owner_labels};
use bollard::models::{HealthConfig, Mount, MountType, MountVolumeOptions};
use sha2::{Digest, Sha256};

use super::file::{ComposeError, ComposeFile, Dependency, Service, start_order};
use crate::reconcilers::deployment::container_settings::ContainerSettings;
use crate::reconcilers::deployment::plan::Plan;

/// Label of a container naming the Compose service it runs.
pub const SERVICE_LABEL: &str = "berth.dev/service";
/// The variable naming the attempt, which a kept service keeps from the attempt that
/// started it.
const DEPLOYMENT_ID_VARIABLE: &str = "BERTH_DEPLOYMENT_ID";
/// Label holding the digest of a sidecar's settings and image.
pub const SETTINGS_LABEL: &str = "berth.dev/settings";

/// A Compose stack as it runs on the server.
#[derive(Clone, Debug, PartialEq)]
pub struct Stack {
    /// The stack's own network.
    pub network: String,
    /// The service the edge proxy routes to.
    pub routed: String,
    /// Every service, dependencies first.
    pub services: Vec<StackService>,
}

/// One service of a stack.
#[derive(Clone, Debug, PartialEq)]
pub struct StackService {
    pub name: String,
    pub image: ServiceImage,
    /// The container's name: the attempt's own for the routed service, the stack's for others.
    pub container: String,
    pub settings: ContainerSettings,
    pub depends_on: Vec<Dependency>,
}

/// Where a service's image comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServiceImage {
    /// Built from `context` (relative to the source's base directory) into `tag`.
    Built {
        context: PathBuf,
        dockerfile: Option<String>,
        args: HashMap<String, String>,
        target: Option<String>,
        tag: String,
    },
    /// A prebuilt image, pulled when missing.
    Pulled(String),
}

impl ServiceImage {
    /// The reference the container runs.
    pub fn reference(&self) -> &str {
        match self {
            Self::Built { tag, .. } => tag,
            Self::Pulled(reference) => reference,
        }
    }
}

/// Plans `file` (found in `compose_dir`, relative to the base directory) for the attempt
/// `plan` of a resource whose routed service is `target` (`networkProfile.targetServiceName`).
pub fn plan_stack(
    file: &ComposeFile,
    compose_dir: &Path,
    target: Option<&str>,
    plan: &Plan,
) -> Result<Stack, ComposeError> {
    let routed = routed_service(file, target)?;
    let namespace = plan
        .labels
        .get(berth_crds::NAMESPACE_LABEL)
        .cloned()
        .unwrap_or_default();
    let resource = plan
        .labels
        .get(berth_crds::RESOURCE_LABEL)
        .cloned()
        .unwrap_or_default();
    let network = stack_network(&namespace, &resource);
    let services = start_order(file)?
        .into_iter()
        .map(|service| {
            let is_routed = service.name == routed;
            let container = match is_routed {
                true => plan.container_name.clone(),
                false => sidecar_name(&namespace, &resource, &service.name),
            };
            StackService {
                name: service.name.clone(),
                image: image_of(service, is_routed, compose_dir, plan, &namespace, &resource),
                container,
                settings: settings_of(service, is_routed, plan, &network, &namespace, &resource),
                depends_on: service.depends_on.clone(),
            }
        })
        .collect();
    Ok(Stack {
        network,
        routed,
        services,
    })
}

fn routed_service(file: &ComposeFile, target: Option<&str>) -> Result<String, ComposeError> {
    let names: Vec<&str> = file.services.iter().map(|s| s.name.as_str()).collect();
    match (target, names.as_slice()) {
        (Some(target), _) if names.contains(&target) => Ok(target.to_string()),
        (Some(target), _) => Err(ComposeError {
            path: "networkProfile.targetServiceName".into(),
            message: format!(
                "no service {target} in the Compose file (it has {})",
                names.join(", ")
            ),
        }),
        (None, [only]) => Ok(only.to_string()),
        (None, _) => Err(ComposeError {
            path: "networkProfile.targetServiceName".into(),
            message: format!(
                "name the service the edge proxy routes to: one of {}",
                names.join(", ")
            ),
        }),
    }
}

/// The stack's network: one per resource, a DNS label.
pub fn stack_network(namespace: &str, resource: &str) -> String {
    format!(
        "berth-stack-{}",
        short_hash(&format!("{namespace}/{resource}"))
    )
}

/// The long-lived container of a service that is not routed.
pub fn sidecar_name(namespace: &str, resource: &str, service: &str) -> String {
    let full = format!("berth-{namespace}-{resource}-{service}");
    if full.len() <= 63 {
        return full;
    }
    let hash = short_hash(&full);
    format!(
        "{}-{hash}",
        full[..63 - hash.len() - 1].trim_end_matches('-')
    )
}

/// A compose volume's Docker volume: kept per resource, across deploys and deletion.
pub fn volume_name(namespace: &str, resource: &str, volume: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    };
    format!(
        "berth-{}-{}-{}",
        clean(namespace),
        clean(resource),
        clean(volume)
    )
}

fn short_hash(text: &str) -> String {
    hex::encode(&Sha256::digest(text.as_bytes())[..6])
}

/// The routed service's image is the attempt's own image (so it is kept and pruned like any
/// resource's); the others are tagged per service.
fn image_of(
    service: &Service,
    routed: bool,
    compose_dir: &Path,
    plan: &Plan,
    namespace: &str,
    resource: &str,
) -> ServiceImage {
    let Some(build) = &service.build else {
        return ServiceImage::Pulled(service.image.clone().unwrap_or_default());
    };
    let deployment = plan
        .labels
        .get(berth_crds::DEPLOYMENT_LABEL)
        .cloned()
        .unwrap_or_default();
    let tag = match routed {
        true => plan.image.clone(),
        false => crate::reconcilers::deployment::plan::built_service_tag(
            namespace,
            resource,
            &service.name,
            &deployment,
        ),
    };
    ServiceImage::Built {
        context: normalize(&compose_dir.join(&build.context)),
        dockerfile: build.dockerfile.clone(),
        args: build.args.clone().into_iter().collect(),
        target: build.target.clone(),
        tag,
    }
}

/// `a/./b/../c` as `a/c`; a context leaving the source keeps its `..` (refused later).
fn normalize(path: &Path) -> PathBuf {
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir if clean.file_name().is_some() => {
                clean.pop();
            }
            other => clean.push(other),
        }
    }
    clean
}

fn settings_of(
    service: &Service,
    routed: bool,
    plan: &Plan,
    network: &str,
    namespace: &str,
    resource: &str,
) -> ContainerSettings {
    let own: Vec<String> = service
        .environment
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    let own_keys: Vec<&str> = service
        .environment
        .iter()
        .map(|(k, _)| k.as_str())
        .collect();
    let inherited = plan
        .env
        .iter()
        .filter(|entry| !own_keys.contains(&entry.split('=').next().unwrap_or_default()));
    let mut labels: HashMap<String, String> = service.labels.clone().into_iter().collect();
    labels.extend(plan.labels.clone());
    labels.insert(SERVICE_LABEL.into(), service.name.clone());
    if !routed {
        labels.insert(SIDECAR_LABEL.into(), "true".into());
    }
    ContainerSettings {
        command: service.command.clone(),
        entrypoint: service.entrypoint.clone(),
        env: inherited.cloned().chain(own).collect(),
        mounts: service
            .volumes
            .iter()
            .map(|mount| Mount {
                typ: Some(MountType::VOLUME),
                source: Some(volume_name(namespace, resource, &mount.volume)),
                target: Some(mount.target.clone()),
                read_only: Some(mount.read_only),
                // Docker labels the volume when this mount creates it: a preview's goes with it.
                volume_options: Some(MountVolumeOptions {
                    labels: Some(owner_labels(&plan.labels)),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect(),
        healthcheck: service.healthcheck.as_ref().map(|check| HealthConfig {
            test: Some(check.test.clone()),
            interval: check.interval.map(nanos),
            timeout: check.timeout.map(nanos),
            retries: check.retries.map(i64::from),
            start_period: check.start_period.map(nanos),
            ..Default::default()
        }),
        restart: service.restart.clone(),
        user: service.user.clone(),
        working_dir: service.working_dir.clone(),
        exposed: service.expose.clone(),
        labels,
        network: Some((network.to_string(), vec![service.name.clone()])),
        stop_grace_seconds: service
            .stop_grace_period
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
    }
}

fn nanos(duration: std::time::Duration) -> i64 {
    i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX)
}

/// The digest a sidecar carries: its settings and the image it runs (by id), so an unchanged
/// service keeps its container across deploys.
pub fn settings_digest(service: &StackService, image_id: &str) -> String {
    let mut settings = service.settings.clone();
    // The attempt that started it is no setting of its own.
    settings.labels.remove(berth_crds::DEPLOYMENT_LABEL);
    settings
        .env
        .retain(|entry| !entry.starts_with(&format!("{DEPLOYMENT_ID_VARIABLE}=")));
    // A volume's labels are the container's own (digested below, sorted): a map's debug text
    // has no stable order.
    for options in settings
        .mounts
        .iter_mut()
        .filter_map(|m| m.volume_options.as_mut())
    {
        options.labels = None;
    }
    let mut labels: Vec<_> = settings.labels.iter().collect();
    labels.sort();
    let text = format!(
        "{image_id}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{labels:?}\n{:?}",
        settings.command,
        settings.entrypoint,
        settings.env,
        settings.mounts,
        settings.healthcheck,
        settings.restart,
        settings.user,
        settings.working_dir,
        settings.exposed,
        settings.network,
    );
    hex::encode(&Sha256::digest(text.as_bytes())[..16])
}

impl Stack {
    pub fn service(&self, name: &str) -> Option<&StackService> {
        self.services.iter().find(|s| s.name == name)
    }

    /// The routed service.
    pub fn routed(&self) -> &StackService {
        self.service(&self.routed)
            .expect("the routed service is planned")
    }

    /// The services other than the routed one, dependencies first.
    pub fn sidecars(&self) -> impl Iterator<Item = &StackService> {
        self.services.iter().filter(|s| s.name != self.routed)
    }

    /// The stack as the attempt's status records it.
    pub fn record(&self) -> berth_crds::deployment::StackStatus {
        berth_crds::deployment::StackStatus {
            routed_service: self.routed.clone(),
            services: self
                .services
                .iter()
                .map(|s| berth_crds::deployment::StackServiceStatus {
                    name: s.name.clone(),
                    container: s.container.clone(),
                    image: s.image.reference().to_string(),
                })
                .collect(),
        }
    }

    /// The names of the stack's sidecar containers.
    pub fn sidecar_containers(&self) -> Vec<String> {
        self.sidecars().map(|s| s.container.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcilers::deployment::compose::file::parse;
    use crate::reconcilers::deployment::plan::tests::sample_plan;

    const STACK: &str = "services:\n  web:\n    build: ./web\n    environment: { GREETING: compose }\n    depends_on: [db]\n    volumes: ['data:/data']\n  db:\n    image: berth/busybox:1\n    command: sleep 3600\nvolumes:\n  data:\n";

    #[test]
    fn the_routed_service_runs_as_the_attempt_and_the_others_as_the_stack() {
        let file = parse(STACK, &HashMap::new()).unwrap();
        let mut plan = sample_plan();
        plan.env = vec!["GREETING=berth".into(), "PORT=8080".into()];
        let stack = plan_stack(&file, Path::new("deploy"), Some("web"), &plan).unwrap();
        assert_eq!(
            stack
                .services
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["db", "web"]
        );
        let web = stack.routed();
        assert_eq!(web.container, plan.container_name);
        let ServiceImage::Built { context, tag, .. } = &web.image else {
            panic!("web is built")
        };
        assert_eq!(context, Path::new("deploy/web"));
        assert_eq!(tag, &plan.image);
        // The service's own variable wins over Berth's of the same name; Berth's others join.
        assert_eq!(web.settings.env, ["PORT=8080", "GREETING=compose"]);
        assert_eq!(
            web.settings.mounts[0].source.as_deref(),
            Some("berth-org-acme-web-data")
        );
        assert!(!web.settings.labels.contains_key(SIDECAR_LABEL));
        let db = stack.service("db").unwrap();
        assert_eq!(db.container, "berth-org-acme-web-db");
        assert_eq!(db.image, ServiceImage::Pulled("berth/busybox:1".into()));
        assert_eq!(db.settings.labels[SIDECAR_LABEL], "true");
        assert_eq!(db.settings.network.as_ref().unwrap().1, ["db"]);
        assert_eq!(stack.network, stack_network("org-acme", "web"));
    }

    #[test]
    fn an_unchanged_sidecar_keeps_its_digest_across_attempts() {
        let file = parse(STACK, &HashMap::new()).unwrap();
        let first = plan_stack(&file, Path::new("."), Some("web"), &sample_plan()).unwrap();
        let mut next_plan = sample_plan();
        next_plan
            .labels
            .insert(berth_crds::DEPLOYMENT_LABEL.into(), "dep-web-2".into());
        let next = plan_stack(&file, Path::new("."), Some("web"), &next_plan).unwrap();
        let digest = |stack: &Stack| settings_digest(stack.service("db").unwrap(), "sha256:1");
        assert_eq!(digest(&first), digest(&next));
        assert_ne!(
            digest(&first),
            settings_digest(first.service("db").unwrap(), "sha256:2")
        );
    }

    #[test]
    fn a_service_with_a_volume_keeps_its_digest_from_plan_to_plan() {
        let file = parse(STACK, &HashMap::new()).unwrap();
        let digests: std::collections::BTreeSet<String> = (0..8)
            .map(|_| {
                let stack = plan_stack(&file, Path::new("."), Some("web"), &sample_plan());
                settings_digest(stack.unwrap().service("web").unwrap(), "sha256:1")
            })
            .collect();
        assert_eq!(digests.len(), 1, "{digests:?}");
    }

    #[test]
    fn the_routed_service_must_be_named_when_there_are_several() {
        let file = parse(STACK, &HashMap::new()).unwrap();
        let error = plan_stack(&file, Path::new("."), None, &sample_plan()).unwrap_err();
        assert_eq!(error.path, "networkProfile.targetServiceName");
        let error = plan_stack(&file, Path::new("."), Some("api"), &sample_plan()).unwrap_err();
        assert!(error.message.contains("web, db"), "{}", error.message);
    }
}

//! Which spec fields take effect for which source and strategy: a field Berth cannot honour
//! for the resource as declared is refused, by name — a 422 over REST, `Ready=False
//! InvalidSpec` for an object applied with kubectl — never accepted and ignored.

use berth_vocabulary::build::{
    BuildStrategy, SourceFields, SourceKind, check_source, relative_path,
};
use berth_vocabulary::validate::FieldError;

use super::{ExposureMode, GeneratedAccessMode, ResourceKind, ResourceSpec, RuntimeProfile};
use crate::common::SourceDescriptor;

/// The strategy `auto` stands for, where the spec alone decides it; `None` when only the
/// source's files can (a Dockerfile, else an `index.html`).
pub fn resolved_strategy(spec: &ResourceSpec, kind: SourceKind) -> Option<BuildStrategy> {
    let profile = spec.runtime_profile.as_ref();
    let declared = profile.and_then(|p| p.strategy).unwrap_or_default();
    if declared != BuildStrategy::Auto {
        return Some(declared);
    }
    let has = |f: fn(&RuntimeProfile) -> bool| profile.is_some_and(f);
    if kind == SourceKind::DockerImage {
        Some(BuildStrategy::PrebuiltImage)
    } else if spec.kind == ResourceKind::ComposeStack {
        Some(BuildStrategy::DockerCompose)
    } else if spec.kind == ResourceKind::StaticSite || has(|p| p.publish_directory.is_some()) {
        Some(BuildStrategy::Static)
    } else if has(|p| p.base_image.is_some()) {
        Some(BuildStrategy::WorkspaceCommands)
    } else if has(|p| p.dockerfile_path.is_some() || p.build_target.is_some()) {
        Some(BuildStrategy::Dockerfile)
    } else {
        None
    }
}

impl ResourceSpec {
    /// The first field the resource declares that Berth would not honour, with what to do
    /// instead; `Ok` when every field takes effect.
    pub fn check_support(&self) -> Result<(), FieldError> {
        if self.kind == ResourceKind::External {
            return self.check_external();
        }
        // Without a source, the runtime profile is checked as for a source Berth builds.
        let kind = match &self.source {
            Some(source) => check_source(source_fields(source))?,
            None => SourceKind::LocalFolder,
        };
        self.check_runtime(kind)?;
        self.check_network()?;
        self.check_auto_deploy()
    }

    /// Auto-deploy answers git pushes and tags; other triggers are not built.
    fn check_auto_deploy(&self) -> Result<(), FieldError> {
        let policy = &self.auto_deploy;
        if policy.trigger_kind != "git-push" {
            return Err(FieldError::not_one_of(
                "autoDeploy.triggerKind",
                &["git-push"],
            ));
        }
        for (index, kind) in policy.event_kinds.iter().enumerate() {
            if !["push", "tag"].contains(&kind.as_str()) {
                return Err(FieldError::not_one_of(
                    &format!("autoDeploy.eventKinds[{index}]"),
                    &["push", "tag"],
                ));
            }
        }
        for (index, git_ref) in policy.refs.iter().enumerate() {
            if !git_ref.starts_with("refs/") {
                let field = format!("autoDeploy.refs[{index}]");
                return Err(FieldError::new(
                    &field,
                    format!("{field} must be a full ref such as refs/heads/main or refs/tags/v*"),
                ));
            }
        }
        Ok(())
    }

    /// An external resource is something Berth lists but does not run.
    fn check_external(&self) -> Result<(), FieldError> {
        let runs = [
            ("source", self.source.is_some()),
            ("runtimeProfile", self.runtime_profile.is_some()),
            ("serverId", self.server_id.is_some()),
        ];
        match runs.into_iter().find(|(_, set)| *set) {
            Some((field, _)) => Err(FieldError::new(
                field,
                format!(
                    "{field}: an external resource is not deployed by Berth; use another kind \
                     (application, service, database…) to run it"
                ),
            )),
            None => Ok(()),
        }
    }

    fn check_runtime(&self, kind: SourceKind) -> Result<(), FieldError> {
        let profile = self.runtime_profile.clone().unwrap_or_default();
        let strategy = resolved_strategy(self, kind);
        check_strategy_fits(self, kind, profile.strategy.unwrap_or_default(), strategy)?;
        for (field, set) in profile_fields(&profile) {
            if set && !takes(strategy, field) {
                return Err(not_taken(field, strategy, kind));
            }
        }
        for (field, value) in [
            (
                "runtimeProfile.publishDirectory",
                &profile.publish_directory,
            ),
            ("runtimeProfile.dockerfilePath", &profile.dockerfile_path),
            (
                "runtimeProfile.dockerComposeFilePath",
                &profile.docker_compose_file_path,
            ),
        ] {
            if let Some(path) = value {
                relative_path(field, path)?;
            }
        }
        requires(strategy, &profile)
    }

    fn check_network(&self) -> Result<(), FieldError> {
        let Some(network) = &self.network_profile else {
            return Ok(());
        };
        if network.target_service_name.is_some() && self.kind != ResourceKind::ComposeStack {
            return Err(FieldError::new(
                "networkProfile.targetServiceName",
                "networkProfile.targetServiceName picks the routed service of a compose-stack; \
                 this resource runs one container",
            ));
        }
        let proxied = network.exposure_mode == ExposureMode::ReverseProxy;
        if network.upstream_protocol == super::UpstreamProtocol::Tcp && proxied {
            return Err(FieldError::new(
                "networkProfile.upstreamProtocol",
                "networkProfile.upstreamProtocol tcp: the edge proxy routes HTTP only; use \
                 exposureMode direct-port or none",
            ));
        }
        match (network.exposure_mode, network.host_port) {
            (ExposureMode::DirectPort, None) => Err(FieldError::new(
                "networkProfile.hostPort",
                "networkProfile.hostPort is required with exposureMode direct-port",
            )),
            (ExposureMode::DirectPort, Some(_)) => Ok(()),
            (_, Some(_)) => Err(FieldError::new(
                "networkProfile.hostPort",
                "networkProfile.hostPort publishes a port only with exposureMode direct-port",
            )),
            (_, None) => self.check_access(proxied),
        }
    }

    /// The access profile shapes the edge proxy's route; without one it has nothing to shape.
    fn check_access(&self, proxied: bool) -> Result<(), FieldError> {
        let Some(access) = &self.access_profile else {
            return Ok(());
        };
        if proxied {
            return Ok(());
        }
        if access.path_prefix != "/" {
            return Err(FieldError::new(
                "accessProfile.pathPrefix",
                "accessProfile.pathPrefix shapes the edge proxy's route, which a resource \
                 without exposureMode reverse-proxy has not",
            ));
        }
        if access.generated_access_mode == GeneratedAccessMode::Disabled {
            return Err(FieldError::new(
                "accessProfile.generatedAccessMode",
                "accessProfile.generatedAccessMode: only a reverse-proxy resource has a generated \
                 route to disable",
            ));
        }
        Ok(())
    }
}

fn source_fields(source: &SourceDescriptor) -> SourceFields<'_> {
    SourceFields {
        kind: &source.kind,
        locator: &source.locator,
        base_directory: source.base_directory.as_deref(),
        git_ref: source.git_ref.as_deref(),
        commit_sha: source.commit_sha.as_deref(),
        metadata: &source.metadata,
    }
}

/// The runtime profile's build and run directives, and whether each is set.
fn profile_fields(profile: &RuntimeProfile) -> [(&'static str, bool); 8] {
    [
        (
            "runtimeProfile.installCommand",
            profile.install_command.is_some(),
        ),
        (
            "runtimeProfile.buildCommand",
            profile.build_command.is_some(),
        ),
        ("runtimeProfile.baseImage", profile.base_image.is_some()),
        (
            "runtimeProfile.startCommand",
            profile.start_command.is_some(),
        ),
        (
            "runtimeProfile.publishDirectory",
            profile.publish_directory.is_some(),
        ),
        (
            "runtimeProfile.dockerfilePath",
            profile.dockerfile_path.is_some(),
        ),
        ("runtimeProfile.buildTarget", profile.build_target.is_some()),
        (
            "runtimeProfile.dockerComposeFilePath",
            profile.docker_compose_file_path.is_some(),
        ),
    ]
}

/// Whether a build with `strategy` (`None`: still to be decided from the source's files)
/// carries out `field`.
fn takes(strategy: Option<BuildStrategy>, field: &str) -> bool {
    use BuildStrategy::*;
    let field = field.trim_start_matches("runtimeProfile.");
    match strategy {
        // A Dockerfile or a folder of static files: only a start command may apply, and the
        // package phase refuses it for static files.
        None => field == "startCommand",
        Some(Auto) => unreachable!("auto is resolved before"),
        Some(Dockerfile) => matches!(field, "startCommand" | "dockerfilePath" | "buildTarget"),
        Some(PrebuiltImage) => field == "startCommand",
        Some(WorkspaceCommands) => matches!(
            field,
            "installCommand" | "buildCommand" | "baseImage" | "startCommand"
        ),
        Some(Static) => matches!(
            field,
            "installCommand" | "buildCommand" | "baseImage" | "publishDirectory"
        ),
        Some(DockerCompose) => field == "dockerComposeFilePath",
    }
}

fn not_taken(field: &str, strategy: Option<BuildStrategy>, kind: SourceKind) -> FieldError {
    let why = match (field.trim_start_matches("runtimeProfile."), strategy) {
        ("installCommand" | "buildCommand", _) => {
            "the commands run on a base image: set runtimeProfile.baseImage (strategy \
             workspace-commands or static), or put them in the Dockerfile's RUN steps"
                .to_string()
        }
        ("startCommand", Some(BuildStrategy::Static)) => {
            "a static site is served by Berth's file server; it runs no start command".to_string()
        }
        (_, Some(BuildStrategy::PrebuiltImage)) => format!(
            "a {} source is a prebuilt image; nothing of it is built",
            kind.as_str()
        ),
        (_, Some(strategy)) => format!("strategy {} does not use it", strategy.as_str()),
        (_, None) => "it needs strategy dockerfile, workspace-commands or static".to_string(),
    };
    FieldError::new(field, format!("{field} is not used: {why}"))
}

/// Declared strategies that cannot build this source or kind of resource.
fn check_strategy_fits(
    spec: &ResourceSpec,
    kind: SourceKind,
    declared: BuildStrategy,
    strategy: Option<BuildStrategy>,
) -> Result<(), FieldError> {
    let field = "runtimeProfile.strategy";
    let refuse = |message: String| Err(FieldError::new(field, format!("{field}: {message}")));
    let compose = spec.kind == ResourceKind::ComposeStack;
    match (declared, strategy) {
        (BuildStrategy::PrebuiltImage, _) if kind.is_built() => refuse(format!(
            "prebuilt-image needs a docker-image source, not {}",
            kind.as_str()
        )),
        (declared, _)
            if !kind.is_built()
                && !matches!(declared, BuildStrategy::Auto | BuildStrategy::PrebuiltImage) =>
        {
            refuse(format!(
                "{} builds from source; a docker-image source is prebuilt (use prebuilt-image or auto)",
                declared.as_str()
            ))
        }
        (_, Some(BuildStrategy::DockerCompose)) if !compose => refuse(
            "docker-compose runs the services of a compose-stack resource; set kind compose-stack"
                .into(),
        ),
        (_, Some(other)) if compose && other != BuildStrategy::DockerCompose => refuse(format!(
            "a compose-stack runs its Compose file (docker-compose), not {}",
            other.as_str()
        )),
        _ => Ok(()),
    }
}

/// What a strategy cannot do without.
fn requires(strategy: Option<BuildStrategy>, profile: &RuntimeProfile) -> Result<(), FieldError> {
    let commands = profile.install_command.is_some() || profile.build_command.is_some();
    let missing = |field: &str, why: &str| {
        Err(FieldError::new(
            field,
            format!("{field} is required: {why}"),
        ))
    };
    match strategy {
        Some(BuildStrategy::WorkspaceCommands) if profile.base_image.is_none() => missing(
            "runtimeProfile.baseImage",
            "the image the install, build and start commands run on",
        ),
        Some(BuildStrategy::WorkspaceCommands) if profile.start_command.is_none() => missing(
            "runtimeProfile.startCommand",
            "workspace-commands runs the app with it",
        ),
        Some(BuildStrategy::Static) if commands && profile.base_image.is_none() => missing(
            "runtimeProfile.baseImage",
            "the image the install and build commands run on before the files are served",
        ),
        Some(BuildStrategy::Static) if profile.base_image.is_some() && !commands => {
            Err(FieldError::new(
                "runtimeProfile.baseImage",
                "runtimeProfile.baseImage is not used: a static site without install or build \
                 commands serves its files as they are",
            ))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn spec(extra: Value) -> ResourceSpec {
        let mut spec = json!({
            "projectId": "p", "environmentId": "e", "name": "web", "kind": "application",
        });
        for (key, value) in extra.as_object().unwrap() {
            spec[key] = value.clone();
        }
        serde_json::from_value(spec).unwrap()
    }

    fn refused(extra: Value) -> String {
        spec(extra).check_support().expect_err("refused").field
    }

    #[test]
    fn commands_need_a_base_image_with_or_without_a_source() {
        let profile =
            json!({ "strategy": "static", "buildCommand": "make", "publishDirectory": "dist" });
        assert_eq!(
            refused(json!({ "runtimeProfile": profile })),
            "runtimeProfile.baseImage"
        );
        let folder = json!({ "kind": "local-folder", "locator": "/srv/app" });
        assert_eq!(
            refused(json!({ "runtimeProfile": profile, "source": folder })),
            "runtimeProfile.baseImage"
        );
    }
}

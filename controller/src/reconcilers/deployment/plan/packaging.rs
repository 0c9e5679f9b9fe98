//! How the package phase will get an attempt's image onto the server, decided without touching
//! the filesystem or the network: pull a prebuilt image, or build one from a folder or a git
//! commit by a recipe (the source's Dockerfile, Berth's Dockerfile around workspace commands,
//! or static files served by the proxy's Caddy).

use std::path::{Component, Path, PathBuf};

use berth_crds::common::SourceDescriptor;
use berth_crds::deployment::DeploymentErrorCode as Code;
use berth_crds::resource::{Resource, RuntimeProfile, resolved_strategy};
use berth_crds::server::Server;
use berth_vocabulary::build::{BuildStrategy, CREDENTIAL_ID, HOST_KEY_FINGERPRINT, SourceKind};
use berth_vocabulary::repository::RepoLocator;

use super::{PlanError, plan_error};

/// Repository prefix of every image Berth builds; pruning touches nothing else.
pub const BUILT_REPOSITORY_PREFIX: &str = "berth-built/";
/// The Dockerfile a source builds when `runtimeProfile.dockerfilePath` names none.
pub const DEFAULT_DOCKERFILE: &str = "Dockerfile";

/// How the package phase gets the planned image onto the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Packaging {
    /// A prebuilt image, pulled when missing with the credentials of `pull_secret` (the name
    /// of a `kubernetes.io/dockerconfigjson` Secret in the Resource's namespace).
    Pull { pull_secret: Option<String> },
    /// An image built on the server from a folder or a git commit.
    Build(Box<BuildPlan>),
}

/// What a build starts from and what it does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildPlan {
    pub origin: Origin,
    /// The directory inside the source the build runs in (relative; empty for its root).
    pub base_directory: PathBuf,
    pub recipe: Recipe,
    /// Registry credentials the build pulls base images with (as a pull does).
    pub pull_secret: Option<String>,
}

/// Where the source's files come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A folder on the controller's filesystem, read in place.
    Folder(PathBuf),
    Git(GitOrigin),
}

/// A git repository, the ref it follows and the commit to build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitOrigin {
    pub repository: RepoLocator,
    pub git_ref: Option<String>,
    /// The commit to build; the ref's newest when `None`.
    pub commit: Option<String>,
    /// The SshCredential holding the deploy key (SSH repositories).
    pub credential_id: Option<String>,
    /// The host key the git host must show: the source's pin, else the one a previous attempt
    /// recorded (filled in by the plan phase); any, recorded, when `None`.
    pub pinned_host_key: Option<String>,
}

/// How the image is made from the source's files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recipe {
    /// The source's own Dockerfile (relative to the base directory), and its stage to build.
    Dockerfile {
        path: String,
        target: Option<String>,
    },
    /// Install and build commands run on `base_image`, in a Dockerfile Berth writes.
    Commands(Commands),
    /// The files of `publish` served by `server_image`'s Caddy file server; built first by
    /// `stage` when the site has build commands.
    Static {
        publish: PathBuf,
        server_image: String,
        stage: Option<Commands>,
    },
    /// `auto` with nothing declared: the Dockerfile when the source has one, otherwise its
    /// files served as a static site when it holds an `index.html`.
    Detect { server_image: String },
    /// The services of a Compose file (`runtimeProfile.dockerComposeFilePath`, else the first
    /// of Compose's own names), routing `networkProfile.targetServiceName`.
    Compose {
        file: Option<String>,
        target: Option<String>,
    },
}

/// The workspace commands of a build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Commands {
    pub base_image: String,
    pub install: Option<String>,
    pub build: Option<String>,
}

/// Decides how to package `source` (the attempt's snapshot of the resource's source).
pub fn packaging_of(
    resource: &Resource,
    server: &Server,
    source: &SourceDescriptor,
) -> Result<Packaging, PlanError> {
    let mut spec = resource.spec.clone();
    spec.source = Some(source.clone());
    spec.check_support().map_err(refusal)?;
    let kind = SourceKind::parse("source.kind", &source.kind).map_err(refusal)?;
    let strategy = resolved_strategy(&spec, kind);
    let pull_secret = resource.spec.image_pull_secret_ref.as_ref();
    let pull_secret = pull_secret.map(|r| r.name.clone());
    if strategy == Some(BuildStrategy::PrebuiltImage) {
        return Ok(Packaging::Pull { pull_secret });
    }
    let profile = spec.runtime_profile.clone().unwrap_or_default();
    let base = source.base_directory.as_deref().unwrap_or(".");
    let plan = BuildPlan {
        origin: origin(kind, source),
        base_directory: relative(base, Code::BaseDirectoryInvalid, "source.baseDirectory")?,
        recipe: with_target(recipe(strategy, &profile, server)?, &spec),
        pull_secret,
    };
    Ok(Packaging::Build(Box::new(plan)))
}

/// A field the spec declares but the build would not honour; the shim refuses such a spec
/// before it is stored, so this meets only objects applied with kubectl.
fn refusal(error: berth_vocabulary::validate::FieldError) -> PlanError {
    let code = match error.field.as_str() {
        "source.kind" => Code::SourceKindUnsupported,
        "source.locator" => Code::SourceLocatorInvalid,
        "source.baseDirectory" => Code::BaseDirectoryInvalid,
        "runtimeProfile.publishDirectory" => Code::PublishDirectoryInvalid,
        "runtimeProfile.dockerfilePath" => Code::DockerfilePathInvalid,
        "networkProfile.upstreamProtocol" => Code::TcpReverseProxyUnsupported,
        "networkProfile.hostPort" => Code::HostPortMissing,
        _ => Code::FieldNotSupported,
    };
    plan_error(code, error.message)
}

fn origin(kind: SourceKind, source: &SourceDescriptor) -> Origin {
    let repository = kind
        .is_git()
        .then(|| RepoLocator::parse(&source.locator).ok())
        .flatten();
    match repository {
        Some(repository) => Origin::Git(GitOrigin {
            repository,
            git_ref: source.git_ref.clone(),
            commit: source.commit_sha.clone(),
            credential_id: source.metadata.get(CREDENTIAL_ID).cloned(),
            pinned_host_key: source.metadata.get(HOST_KEY_FINGERPRINT).cloned(),
        }),
        None => Origin::Folder(PathBuf::from(&source.locator)),
    }
}

/// A Compose recipe learns the service the edge proxy routes to.
fn with_target(recipe: Recipe, spec: &berth_crds::resource::ResourceSpec) -> Recipe {
    match recipe {
        Recipe::Compose { file, .. } => Recipe::Compose {
            file,
            target: spec
                .network_profile
                .as_ref()
                .and_then(|n| n.target_service_name.clone()),
        },
        other => other,
    }
}

fn recipe(
    strategy: Option<BuildStrategy>,
    profile: &RuntimeProfile,
    server: &Server,
) -> Result<Recipe, PlanError> {
    let commands = || {
        profile.base_image.clone().map(|base_image| Commands {
            base_image,
            install: profile.install_command.clone(),
            build: profile.build_command.clone(),
        })
    };
    match strategy {
        Some(BuildStrategy::Dockerfile) => {
            let path = profile
                .dockerfile_path
                .as_deref()
                .unwrap_or(DEFAULT_DOCKERFILE);
            let path = relative(
                path,
                Code::DockerfilePathInvalid,
                "runtimeProfile.dockerfilePath",
            )?;
            Ok(Recipe::Dockerfile {
                path: slash_path(&path),
                target: profile.build_target.clone(),
            })
        }
        Some(BuildStrategy::WorkspaceCommands) => {
            commands().map(Recipe::Commands).ok_or_else(|| {
                plan_error(
                    Code::FieldNotSupported,
                    "runtimeProfile.baseImage is required",
                )
            })
        }
        Some(BuildStrategy::Static) => {
            let publish = profile.publish_directory.as_deref().unwrap_or(".");
            Ok(Recipe::Static {
                publish: relative(
                    publish,
                    Code::PublishDirectoryInvalid,
                    "runtimeProfile.publishDirectory",
                )?,
                server_image: file_server_image(server)?,
                stage: commands(),
            })
        }
        None => Ok(Recipe::Detect {
            server_image: file_server_image(server)?,
        }),
        Some(BuildStrategy::DockerCompose) => Ok(Recipe::Compose {
            file: profile.docker_compose_file_path.clone(),
            target: None,
        }),
        Some(BuildStrategy::Auto | BuildStrategy::PrebuiltImage) => {
            unreachable!("auto is resolved and prebuilt images are pulled")
        }
    }
}

/// The server's proxy image, whose Caddy serves static sites (it is on every server already).
fn file_server_image(server: &Server) -> Result<String, PlanError> {
    let image = server.spec.proxy.image.clone();
    if image.is_empty() || image.contains(char::is_whitespace) {
        return Err(plan_error(
            Code::ProxyImageInvalid,
            format!("the server's proxy image `{image}` is not an image reference"),
        ));
    }
    Ok(image)
}

/// `path` as a relative path that stays inside its parent: no root, no `..`.
fn relative(path: &str, code: Code, field: &str) -> Result<PathBuf, PlanError> {
    let mut clean = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(plan_error(
                    code,
                    format!(
                        "{field} `{path}` must be a relative path inside the source folder (no `..`, not absolute)"
                    ),
                ));
            }
        }
    }
    Ok(clean)
}

/// A relative path as the tar archive and Docker's `dockerfile` parameter spell it.
pub fn slash_path(path: &Path) -> String {
    let parts: Vec<_> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect();
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// The repository of the images built for a resource: `berth-built/<namespace>/<resource>`,
/// reduced to what a Docker reference allows. Builds carry no labels (Docker's classic builder
/// adds a step per label, most of a small rebuild's time): pruning and reuse find a resource's
/// images by this name, and a Compose service's under it (`…/<resource>/<service>`).
pub fn built_repository(namespace: &str, resource: &str) -> String {
    let (namespace, resource) = (reference_part(namespace, 63), reference_part(resource, 100));
    format!("{BUILT_REPOSITORY_PREFIX}{namespace}/{resource}")
}

/// The tag of the image an attempt builds: `berth-built/<namespace>/<resource>:<deployment>`.
pub fn built_tag(namespace: &str, resource: &str, deployment: &str) -> String {
    let tag = reference_part(deployment, 128);
    format!("{}:{tag}", built_repository(namespace, resource))
}

/// The tag of a Compose service's image: `berth-built/<namespace>/<resource>/<service>:<deployment>`.
pub fn built_service_tag(
    namespace: &str,
    resource: &str,
    service: &str,
    deployment: &str,
) -> String {
    let (service, tag) = (reference_part(service, 63), reference_part(deployment, 128));
    format!("{}/{service}:{tag}", built_repository(namespace, resource))
}

/// Lowercase letters, digits, `.` and `-`, starting and ending with a letter or digit.
fn reference_part(name: &str, max: usize) -> String {
    let mapped: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(max)
        .collect();
    let trimmed = mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if trimmed.is_empty() {
        "x".into()
    } else {
        trimmed.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn resource(extra: Value) -> Resource {
        let mut spec = json!({
            "projectId": "p", "environmentId": "e", "serverId": "local",
            "name": "Site", "kind": "application",
            "source": { "kind": "local-folder", "locator": "/srv/app" },
        });
        if let (Value::Object(spec), Value::Object(extra)) = (&mut spec, extra) {
            spec.extend(extra);
        }
        let mut resource = Resource::new("site", serde_json::from_value(spec).unwrap());
        resource.metadata.namespace = Some("org-acme".into());
        resource
    }

    fn server() -> Server {
        let spec = serde_json::from_value(json!({
            "host": "127.0.0.1", "username": "root", "credentialId": "key",
            "proxy": { "image": "berth/edge-caddy:2.6.2" },
        }))
        .unwrap();
        Server::new("local", spec)
    }

    fn packaging(resource: &Resource) -> Result<Packaging, PlanError> {
        packaging_of(resource, &server(), resource.spec.source.as_ref().unwrap())
    }

    fn build(resource: &Resource) -> BuildPlan {
        match packaging(resource).unwrap() {
            Packaging::Build(plan) => *plan,
            other => panic!("not a build: {other:?}"),
        }
    }

    #[test]
    fn a_folder_builds_its_dockerfile_inside_the_base_directory() {
        let plan = build(&resource(json!({
            "source": { "kind": "local-folder", "locator": "/srv/app", "baseDirectory": "./web" },
            "runtimeProfile": { "dockerfilePath": "docker/prod.Dockerfile", "buildTarget": "run" },
        })));
        assert_eq!(plan.origin, Origin::Folder("/srv/app".into()));
        assert_eq!(plan.base_directory, PathBuf::from("web"));
        assert_eq!(
            plan.recipe,
            Recipe::Dockerfile {
                path: "docker/prod.Dockerfile".into(),
                target: Some("run".into()),
            }
        );
        // Nothing declared: the files decide (a Dockerfile, else an index.html).
        let plain = build(&resource(json!({})));
        assert!(matches!(plain.recipe, Recipe::Detect { .. }));
    }

    #[test]
    fn a_git_source_names_its_repository_ref_commit_and_key() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let plan = build(&resource(json!({
            "source": {
                "kind": "git-deploy-key", "locator": "git@github.com:acme/shop.git",
                "gitRef": "main", "commitSha": sha,
                "metadata": { "credentialId": "deploy", "hostKeyFingerprint": "SHA256:abc" },
            },
        })));
        let Origin::Git(git) = plan.origin else {
            panic!("not git")
        };
        assert_eq!(git.repository.identity(), "github.com/acme/shop");
        assert_eq!(
            (git.git_ref.as_deref(), git.commit.as_deref()),
            (Some("main"), Some(sha))
        );
        assert_eq!(git.credential_id.as_deref(), Some("deploy"));
        assert_eq!(git.pinned_host_key.as_deref(), Some("SHA256:abc"));
    }

    #[test]
    fn commands_run_on_their_base_image_and_static_sites_may_build_first() {
        let commands = build(&resource(json!({
            "runtimeProfile": {
                "baseImage": "node:22", "installCommand": "npm ci", "startCommand": "node ."
            },
        })));
        assert_eq!(
            commands.recipe,
            Recipe::Commands(Commands {
                base_image: "node:22".into(),
                install: Some("npm ci".into()),
                build: None,
            })
        );
        let site = build(&resource(json!({
            "kind": "static-site",
            "runtimeProfile": {
                "publishDirectory": "dist", "baseImage": "node:22", "buildCommand": "npm run build"
            },
        })));
        let Recipe::Static {
            publish,
            server_image,
            stage,
        } = site.recipe
        else {
            panic!("not static")
        };
        assert_eq!(publish, PathBuf::from("dist"));
        assert_eq!(server_image, "berth/edge-caddy:2.6.2");
        assert_eq!(stage.unwrap().build.as_deref(), Some("npm run build"));
    }

    #[test]
    fn an_image_is_pulled_with_its_secret() {
        let image = resource(json!({
            "source": { "kind": "docker-image", "locator": "registry:5000/app:1" },
            "imagePullSecretRef": { "name": "regcred" },
            "runtimeProfile": { "startCommand": "app --serve" },
        }));
        assert_eq!(
            packaging(&image).unwrap(),
            Packaging::Pull {
                pull_secret: Some("regcred".into())
            }
        );
    }

    #[test]
    fn fields_a_build_would_not_use_are_refused_with_codes() {
        let cases = [
            (
                json!({ "runtimeProfile": { "buildCommand": "make" } }),
                "field_not_supported",
            ),
            (
                json!({ "source": { "kind": "docker-image", "locator": "app:1" },
                        "runtimeProfile": { "installCommand": "npm ci", "baseImage": "node" } }),
                "field_not_supported",
            ),
            (
                json!({ "source": { "kind": "local-folder", "locator": "/srv/app", "baseDirectory": "../x" } }),
                "base_directory_invalid",
            ),
            (
                json!({ "source": { "kind": "git", "locator": "x" } }),
                "source_kind_unsupported",
            ),
            (
                json!({ "source": { "kind": "local-folder", "locator": "app" } }),
                "source_locator_invalid",
            ),
            (
                json!({ "kind": "static-site", "runtimeProfile": { "publishDirectory": "../up" } }),
                "publish_directory_invalid",
            ),
            (
                json!({ "runtimeProfile": { "dockerfilePath": "../Dockerfile" } }),
                "dockerfile_path_invalid",
            ),
        ];
        for (extra, code) in cases {
            let error = packaging(&resource(extra.clone())).unwrap_err();
            assert_eq!(error.code, code, "{extra}: {}", error.message);
        }
    }

    #[test]
    fn built_tags_are_valid_docker_references() {
        assert_eq!(
            built_tag("org-acme", "web", "dep-web-3"),
            "berth-built/org-acme/web:dep-web-3"
        );
        assert_eq!(
            built_tag("Org_A", "my.app", "Dep_1"),
            "berth-built/org-a/my.app:dep-1"
        );
        // Namespace and resource stay apart: `a` + `b-c` is not `a-b` + `c`.
        assert_ne!(built_repository("a", "b-c"), built_repository("a-b", "c"));
        assert_eq!(
            built_service_tag("ns", "shop", "Worker_1", "dep-shop-2"),
            "berth-built/ns/shop/worker-1:dep-shop-2"
        );
        let long = "d".repeat(300);
        let tag = built_tag("ns", "r", &long);
        assert_eq!(tag.split(':').nth(1).unwrap().len(), 128);
    }
}

//! How the package phase will get an attempt's image onto the server, decided without touching
//! the filesystem: pull a prebuilt image, build a folder's Dockerfile, or serve a static site.

use std::path::{Component, Path, PathBuf};

use berth_crds::common::SourceDescriptor;
use berth_crds::deployment::DeploymentErrorCode as Code;
use berth_crds::resource::Resource;
use berth_crds::server::Server;

use super::{DOCKER_IMAGE_SOURCE, PlanError, is_static_site, plan_error};

/// Repository prefix of every image Berth builds; pruning touches nothing else.
pub const BUILT_REPOSITORY_PREFIX: &str = "berth-built/";

/// How the package phase gets the planned image onto the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Packaging {
    /// A prebuilt image, pulled when missing with the credentials of `pull_secret` (the name
    /// of a `kubernetes.io/dockerconfigjson` Secret in the Resource's namespace).
    Pull { pull_secret: Option<String> },
    /// Built from `dockerfile` (a relative path inside `context`) in the folder `context`.
    Dockerfile {
        context: PathBuf,
        dockerfile: String,
    },
    /// The files of `context` served by `server_image`'s Caddy file server.
    StaticSite {
        context: PathBuf,
        server_image: String,
    },
}

/// Decides how to package `source`, checking its paths without touching the filesystem.
pub fn packaging_of(
    resource: &Resource,
    server: &Server,
    source: &SourceDescriptor,
) -> Result<Packaging, PlanError> {
    if source.kind == DOCKER_IMAGE_SOURCE {
        let secret_ref = resource.spec.image_pull_secret_ref.as_ref();
        return Ok(Packaging::Pull {
            pull_secret: secret_ref.map(|r| r.name.clone()),
        });
    }
    let folder = Path::new(&source.locator);
    if !folder.is_absolute() {
        return Err(plan_error(
            Code::SourceLocatorInvalid,
            format!(
                "a local-folder locator must be an absolute directory path on the controller, not `{}`",
                source.locator
            ),
        ));
    }
    let base = source.base_directory.as_deref().unwrap_or(".");
    let base = folder.join(relative(base, Code::BaseDirectoryInvalid, "baseDirectory")?);
    if is_static_site(resource) && !wants_dockerfile(resource) {
        let runtime = resource.spec.runtime_profile.as_ref();
        let publish = runtime
            .and_then(|r| r.publish_directory.as_deref())
            .unwrap_or(".");
        let publish = relative(
            publish,
            Code::PublishDirectoryInvalid,
            "runtimeProfile.publishDirectory",
        )?;
        let server_image = server.spec.proxy.image.clone();
        if server_image.is_empty() || server_image.contains(char::is_whitespace) {
            return Err(plan_error(
                Code::ProxyImageInvalid,
                format!("the server's proxy image `{server_image}` is not an image reference"),
            ));
        }
        return Ok(Packaging::StaticSite {
            context: base.join(publish),
            server_image,
        });
    }
    let dockerfile = source
        .metadata
        .get("dockerfile")
        .map_or("Dockerfile", String::as_str);
    let dockerfile = relative(
        dockerfile,
        Code::DockerfilePathInvalid,
        "metadata.dockerfile",
    )?;
    Ok(Packaging::Dockerfile {
        context: base,
        dockerfile: slash_path(&dockerfile),
    })
}

/// A static-site resource that explicitly asks for its own Dockerfile gets one.
fn wants_dockerfile(resource: &Resource) -> bool {
    let strategy = resource.spec.runtime_profile.as_ref();
    strategy.and_then(|r| r.strategy.as_deref()) == Some("dockerfile")
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
fn slash_path(path: &Path) -> String {
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

/// The tag of the image an attempt builds: `berth-built/<namespace>-<resource>:<deployment>`,
/// reduced to what a Docker reference allows.
pub fn built_tag(namespace: &str, resource: &str, deployment: &str) -> String {
    let repository = reference_part(&format!("{namespace}-{resource}"), 200);
    let tag = reference_part(deployment, 128);
    format!("{BUILT_REPOSITORY_PREFIX}{repository}:{tag}")
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

    fn source(base: Option<&str>, dockerfile: Option<&str>) -> SourceDescriptor {
        let mut metadata = std::collections::BTreeMap::new();
        if let Some(dockerfile) = dockerfile {
            metadata.insert("dockerfile".to_string(), dockerfile.to_string());
        }
        SourceDescriptor {
            kind: "local-folder".into(),
            locator: "/srv/app".into(),
            display_name: None,
            base_directory: base.map(str::to_string),
            metadata,
        }
    }

    #[test]
    fn a_local_folder_builds_its_dockerfile_inside_the_base_directory() {
        let packaging = packaging_of(
            &resource(json!({})),
            &server(),
            &source(Some("./web"), None),
        )
        .unwrap();
        assert_eq!(
            packaging,
            Packaging::Dockerfile {
                context: PathBuf::from("/srv/app/web"),
                dockerfile: "Dockerfile".into(),
            }
        );
        let custom = source(None, Some("docker/prod.Dockerfile"));
        let packaging = packaging_of(&resource(json!({})), &server(), &custom).unwrap();
        assert!(
            matches!(packaging, Packaging::Dockerfile { dockerfile, .. } if dockerfile == "docker/prod.Dockerfile")
        );
    }

    #[test]
    fn escaping_paths_are_refused_with_codes() {
        let resource = resource(json!({}));
        for base in ["../other", "/etc", "a/../../b"] {
            let error = packaging_of(&resource, &server(), &source(Some(base), None)).unwrap_err();
            assert_eq!(error.code, "base_directory_invalid", "{base}");
        }
        let error =
            packaging_of(&resource, &server(), &source(None, Some("../Dockerfile"))).unwrap_err();
        assert_eq!(error.code, "dockerfile_path_invalid");
        let mut relative_locator = source(None, None);
        relative_locator.locator = "app".into();
        let error = packaging_of(&resource, &server(), &relative_locator).unwrap_err();
        assert_eq!(error.code, "source_locator_invalid");
        let site = super::tests::resource(json!({
            "kind": "static-site", "runtimeProfile": { "publishDirectory": "../up" },
        }));
        let error = packaging_of(&site, &server(), &source(None, None)).unwrap_err();
        assert_eq!(error.code, "publish_directory_invalid");
    }

    #[test]
    fn a_static_site_serves_its_publish_directory_with_the_proxy_image() {
        let site = resource(json!({
            "kind": "static-site", "runtimeProfile": { "publishDirectory": "public" },
        }));
        let packaging = packaging_of(&site, &server(), &source(Some("site"), None)).unwrap();
        assert_eq!(
            packaging,
            Packaging::StaticSite {
                context: PathBuf::from("/srv/app/site/public"),
                server_image: "berth/edge-caddy:2.6.2".into(),
            }
        );
        let by_strategy = resource(json!({ "runtimeProfile": { "strategy": "static" } }));
        let packaging = packaging_of(&by_strategy, &server(), &source(None, None)).unwrap();
        assert!(matches!(packaging, Packaging::StaticSite { .. }));
    }

    #[test]
    fn built_tags_are_valid_docker_references() {
        assert_eq!(
            built_tag("org-acme", "web", "dep-web-3"),
            "berth-built/org-acme-web:dep-web-3"
        );
        assert_eq!(
            built_tag("Org_A", "my.app", "Dep_1"),
            "berth-built/org-a-my.app:dep-1"
        );
        let long = "d".repeat(300);
        let tag = built_tag("ns", "r", &long);
        assert_eq!(tag.split(':').nth(1).unwrap().len(), 128);
    }
}

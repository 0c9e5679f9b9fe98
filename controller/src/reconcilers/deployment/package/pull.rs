//! A `docker-image` source missing on the server is pulled there through Docker's API over the
//! SSH tunnel, with the credentials the Resource's `imagePullSecretRef` holds for the image's
//! registry. The Secret is read only when a pull is needed: an image already on the server needs
//! no credentials. Credentials never reach a log line, status, event or error message.

use std::collections::HashMap;
use std::time::Instant;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use berth_crds::progress::OutputStream;
use bollard::auth::DockerCredentials;
use bollard::query_parameters::CreateImageOptionsBuilder;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use serde::Deserialize;

use berth_crds::masking::Masker;

use super::{BUILD_TIMEOUT, Code};
use crate::reconcilers::deployment::package_failure::{PackageFailure, failure};
use crate::reconcilers::deployment::progress::OutputSink;
use crate::reconcilers::deployment::server_target::Target;
use berth_remote::docker::docker_over_ssh_within;

/// Registry of references that name none.
const DOCKER_HUB: &str = "docker.io";
/// Address Docker Hub credentials are stored under by `docker login`.
const DOCKER_HUB_ADDRESS: &str = "https://index.docker.io/v1/";
/// Key of a `kubernetes.io/dockerconfigjson` Secret.
const DOCKER_CONFIG_KEY: &str = ".dockerconfigjson";

/// An image reference split as Docker's pull API takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageReference {
    /// Registry host (and port); `docker.io` when the reference names none.
    pub registry: String,
    /// The reference without tag or digest: Docker's `fromImage`.
    pub repository: String,
    /// Tag or digest; `latest` when the reference has neither, since Docker would otherwise
    /// pull every tag of the repository.
    pub tag: String,
}

/// Splits `image` like Docker does: the first path component is a registry when it has a `.`
/// or `:` or is `localhost`.
pub fn parse_reference(image: &str) -> ImageReference {
    let (name, tag) = match image.split_once('@') {
        Some((name, digest)) => (name, digest.to_string()),
        None => match image.rsplit_once(':') {
            Some((name, tag)) if !tag.contains('/') => (name, tag.to_string()),
            _ => (image, "latest".to_string()),
        },
    };
    let registry = match name.split_once('/') {
        Some((first, _)) if first.contains(['.', ':']) || first == "localhost" => {
            canonical_registry(first)
        }
        _ => DOCKER_HUB.to_string(),
    };
    ImageReference {
        registry,
        repository: name.to_string(),
        tag,
    }
}

/// A registry key as `docker login` or a reference spells it, reduced to `host[:port]`
/// (lowercase); Docker Hub's aliases become `docker.io`.
fn canonical_registry(key: &str) -> String {
    let host = key
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => {
            DOCKER_HUB.to_string()
        }
        _ => host,
    }
}

/// What the pull Secret gave for the image's registry.
pub struct RegistryAuth {
    /// Name of the Secret, for messages.
    pub secret: String,
    /// `None` when the Secret has no entry for the registry: the pull goes anonymously.
    pub credentials: Option<DockerCredentials>,
}

/// The standard Docker client configuration a `kubernetes.io/dockerconfigjson` Secret holds.
#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: HashMap<String, AuthEntry>,
}

#[derive(Deserialize)]
struct AuthEntry {
    username: Option<String>,
    password: Option<String>,
    /// base64 of `username:password`, as `docker login` writes it.
    auth: Option<String>,
    identitytoken: Option<String>,
}

/// Reads the credentials for `registry` from the Secret `name`.
pub async fn registry_auth(
    secrets: &Api<Secret>,
    name: &str,
    registry: &str,
) -> Result<RegistryAuth, PackageFailure> {
    let secret = match secrets.get_opt(name).await {
        Ok(Some(secret)) => secret,
        Ok(None) => {
            return Err(failure(
                Code::ImagePullSecretMissing,
                format!(
                    "Secret {name} named by imagePullSecretRef does not exist in the Resource's namespace"
                ),
            ));
        }
        Err(error) => {
            return Err(failure(
                Code::ImagePullSecretUnreadable,
                format!("could not read Secret {name} named by imagePullSecretRef: {error}"),
            ));
        }
    };
    let data = secret.data.unwrap_or_default();
    let Some(config) = data.get(DOCKER_CONFIG_KEY) else {
        return Err(failure(
            Code::ImagePullSecretInvalid,
            format!(
                "Secret {name} has no `{DOCKER_CONFIG_KEY}` key (a Secret of type kubernetes.io/dockerconfigjson is expected)"
            ),
        ));
    };
    let credentials = credentials_for(&config.0, registry).map_err(|problem| {
        failure(
            Code::ImagePullSecretInvalid,
            format!("Secret {name}: {problem}"),
        )
    })?;
    Ok(RegistryAuth {
        secret: name.to_string(),
        credentials,
    })
}

/// The credentials a Docker config JSON holds for `registry`. A problem is described without
/// quoting the content (serde's messages may quote values).
fn credentials_for(config: &[u8], registry: &str) -> Result<Option<DockerCredentials>, String> {
    let config: DockerConfig = serde_json::from_slice(config).map_err(|error| {
        format!(
            "`{DOCKER_CONFIG_KEY}` is not a Docker config JSON (line {}, column {})",
            error.line(),
            error.column()
        )
    })?;
    let Some(entry) = config
        .auths
        .into_iter()
        .find_map(|(key, entry)| (canonical_registry(&key) == registry).then_some(entry))
    else {
        return Ok(None);
    };
    let (username, password) = match (entry.username, entry.password, entry.auth) {
        (Some(user), Some(password), _) => (Some(user), Some(password)),
        (_, _, Some(auth)) => {
            let (user, password) = decode_auth(&auth).ok_or_else(|| {
                format!("the `auth` of registry {registry} is not base64 of `username:password`")
            })?;
            (Some(user), Some(password))
        }
        _ if entry.identitytoken.is_some() => (None, None),
        _ => {
            return Err(format!(
                "the entry for registry {registry} has neither username and password nor auth"
            ));
        }
    };
    let serveraddress = if registry == DOCKER_HUB {
        DOCKER_HUB_ADDRESS.to_string()
    } else {
        registry.to_string()
    };
    Ok(Some(DockerCredentials {
        username,
        password,
        identitytoken: entry.identitytoken,
        serveraddress: Some(serveraddress),
        ..Default::default()
    }))
}

fn decode_auth(auth: &str) -> Option<(String, String)> {
    let decoded = STANDARD.decode(auth.trim()).ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// Hides every form a credential could take in Docker's or the registry's words.
fn masker(credentials: Option<&DockerCredentials>) -> Masker {
    let Some(c) = credentials else {
        return Masker::default();
    };
    let mut values: Vec<String> = [&c.password, &c.auth, &c.identitytoken]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    if let (Some(user), Some(password)) = (&c.username, &c.password) {
        values.push(STANDARD.encode(format!("{user}:{password}")));
    }
    Masker::new(values.iter())
}

/// Pulls `image` onto the server, following Docker's progress to its end.
pub async fn pull(
    target: &Target,
    docker_socket: &str,
    image: &str,
    auth: Option<RegistryAuth>,
    output: &OutputSink,
) -> Result<(), PackageFailure> {
    let reference = parse_reference(image);
    let (secret, credentials) = match auth {
        Some(auth) => (Some(auth.secret), auth.credentials),
        None => (None, None),
    };
    let masker = masker(credentials.as_ref());
    let how = match (&secret, &credentials) {
        (Some(secret), Some(_)) => format!("with the credentials of Secret {secret}"),
        (Some(secret), None) => {
            format!("anonymously: Secret {secret} has no entry for this registry")
        }
        (None, _) => "anonymously: the Resource has no imagePullSecretRef".to_string(),
    };
    tracing::info!(image, registry = %reference.registry, %how, "pulling an image");
    output.line(OutputStream::Stdout, &format!("pulling {image} {how}"));
    let started = Instant::now();
    let options = CreateImageOptionsBuilder::new()
        .from_image(&reference.repository)
        .tag(&reference.tag)
        .build();
    // A pull streams for as long as its layers download: the phase deadline bounds it.
    let docker = docker_over_ssh_within(target.connection.clone(), docker_socket, BUILD_TIMEOUT);
    let mut progress = docker.create_image(Some(options), None, credentials);
    let mut layers: HashMap<String, String> = HashMap::new();
    while let Some(item) = progress.next().await {
        let info = item.map_err(|error| pull_failure(&error, &reference, image, &how, &masker))?;
        let (Some(status), id) = (info.status, info.id.unwrap_or_default()) else {
            continue;
        };
        // Download and extract ticks repeat one status per layer; log each change once.
        if layers.get(&id) != Some(&status) {
            let status_masked = masker.mask(&status);
            tracing::debug!(image, layer = %id, status = %status_masked, "pull progress");
            let line = if id.is_empty() {
                status_masked
            } else {
                format!("{id}: {status_masked}")
            };
            output.line(OutputStream::Stdout, &line);
            layers.insert(id, status);
        }
    }
    tracing::info!(
        image,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "pulled an image"
    );
    Ok(())
}

/// A failed pull, naming the image, the registry, Docker's HTTP status and its reason; a broken
/// transport is `docker_error`.
fn pull_failure(
    error: &bollard::errors::Error,
    reference: &ImageReference,
    image: &str,
    how: &str,
    masker: &Masker,
) -> PackageFailure {
    use bollard::errors::Error::{DockerResponseServerError, DockerStreamError};
    let registry = &reference.registry;
    let (code, reason) = match error {
        DockerResponseServerError {
            status_code,
            message,
        } => (
            Code::ImagePullFailed,
            format!("HTTP {status_code}: {}", message.trim()),
        ),
        DockerStreamError { error } => (Code::ImagePullFailed, error.trim().to_string()),
        other => (Code::DockerError, other.to_string()),
    };
    let message = format!("pulling image {image} from registry {registry} {how} failed: {reason}");
    failure(code, masker.mask(&message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(registry: &str, repository: &str, tag: &str) -> ImageReference {
        ImageReference {
            registry: registry.into(),
            repository: repository.into(),
            tag: tag.into(),
        }
    }

    #[test]
    fn references_split_into_registry_repository_and_tag() {
        assert_eq!(
            parse_reference("127.0.0.1:5000/berth/sample-app:2"),
            reference("127.0.0.1:5000", "127.0.0.1:5000/berth/sample-app", "2")
        );
        assert_eq!(
            parse_reference("nginx"),
            reference("docker.io", "nginx", "latest")
        );
        assert_eq!(
            parse_reference("library/nginx:1.25"),
            reference("docker.io", "library/nginx", "1.25")
        );
        assert_eq!(
            parse_reference("localhost:5000/app"),
            reference("localhost:5000", "localhost:5000/app", "latest")
        );
        assert_eq!(
            parse_reference("ghcr.io/Org/app@sha256:abc"),
            reference("ghcr.io", "ghcr.io/Org/app", "sha256:abc")
        );
    }

    fn config(auths: serde_json::Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({ "auths": auths })).unwrap()
    }

    #[test]
    fn credentials_match_the_registry_host_in_either_form() {
        let auth = STANDARD.encode("alice:pa:ss");
        let json = config(serde_json::json!({
            "http://127.0.0.1:5000/v2/": { "auth": auth },
            "https://index.docker.io/v1/": { "username": "bob", "password": "hub" },
        }));
        let local = credentials_for(&json, "127.0.0.1:5000").unwrap().unwrap();
        assert_eq!(local.username.as_deref(), Some("alice"));
        assert_eq!(local.password.as_deref(), Some("pa:ss"));
        assert_eq!(local.serveraddress.as_deref(), Some("127.0.0.1:5000"));
        let hub = credentials_for(&json, "docker.io").unwrap().unwrap();
        assert_eq!(hub.username.as_deref(), Some("bob"));
        assert_eq!(hub.serveraddress.as_deref(), Some(DOCKER_HUB_ADDRESS));
        assert!(credentials_for(&json, "ghcr.io").unwrap().is_none());
    }

    #[test]
    fn broken_configs_are_described_without_their_content() {
        let error = credentials_for(br#"{"auths": "hunter2"}"#, "docker.io").unwrap_err();
        assert!(!error.contains("hunter2"), "{error}");
        let json = config(serde_json::json!({ "ghcr.io": { "auth": "not base64!" } }));
        let error = credentials_for(&json, "ghcr.io").unwrap_err();
        assert!(error.contains("ghcr.io"), "{error}");
        let json = config(serde_json::json!({ "ghcr.io": { "email": "a@b" } }));
        assert!(credentials_for(&json, "ghcr.io").is_err());
    }

    #[test]
    fn pull_failures_name_image_registry_and_status_but_no_secret() {
        let credentials = DockerCredentials {
            username: Some("alice".into()),
            password: Some("s3cr3t-pw".into()),
            ..Default::default()
        };
        let masker = masker(Some(&credentials));
        let error = bollard::errors::Error::DockerResponseServerError {
            status_code: 500,
            message: "unauthorized: bad password s3cr3t-pw".into(),
        };
        let image = "127.0.0.1:5000/app:1";
        let how = "with the credentials of Secret regcred";
        let failure = pull_failure(&error, &parse_reference(image), image, how, &masker);
        assert_eq!(failure.code, Code::ImagePullFailed);
        assert!(
            !failure.message.contains("s3cr3t-pw"),
            "{}",
            failure.message
        );
        for part in [
            image,
            "registry 127.0.0.1:5000",
            "HTTP 500",
            "unauthorized",
            "regcred",
        ] {
            assert!(
                failure.message.contains(part),
                "{part}: {}",
                failure.message
            );
        }
    }
}

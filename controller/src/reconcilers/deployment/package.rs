//! The package phase: gets the image an attempt runs onto the server, by source kind.
//!
//! - `docker-image`: used when already there, otherwise pulled from its registry with the
//!   credentials of the Resource's `imagePullSecretRef` (see `pull`).
//! - `local-folder`: the folder is uploaded as a build context and built through Docker's build
//!   API over the SSH tunnel, from its Dockerfile; a static site instead gets a generated
//!   Dockerfile that serves its publish directory with the edge proxy's Caddy (that image is on
//!   every server already). The locator is an absolute directory on the controller's own
//!   filesystem: the controller reads it. (A CLI deploying from a workstation uploads the folder
//!   first and names where it put it.)
//!
//! Built images are tagged `berth-built/<namespace>-<resource>:<deployment>` and labelled like
//! containers; after a successful attempt all but the newest few are removed.

mod context;
mod pull;

use berth_crds::{NAMESPACE_LABEL, RESOURCE_LABEL};
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::time::Duration;

use berth_crds::deployment::DeploymentErrorCode as Code;
use berth_crds::masking::Masker;
use berth_crds::progress::OutputStream;
use bollard::models::ImageSummary;
use bollard::query_parameters::{
    BuildImageOptionsBuilder, ListImagesOptionsBuilder, RemoveImageOptionsBuilder,
};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use self::context::{Ignore, Listing};
use super::plan::{BUILT_REPOSITORY_PREFIX, Packaging, Plan};
use super::progress::OutputSink;
use super::runtime::Target;
use berth_remote::RemoteError;
use berth_remote::docker::{docker_call, docker_over_ssh_within};

/// Built images kept per resource (besides the serving one), so a recent version can be
/// started again without a rebuild.
pub const KEEP_BUILT_IMAGES: usize = 3;
/// Deadline of a package phase that builds (upload plus every Dockerfile step) or pulls (every
/// layer download): either may take minutes.
const BUILD_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// Name of the generated Dockerfile in a static site's context; a file of that name in the
/// publish directory is left out, so the two cannot clash.
const GENERATED_DOCKERFILE: &str = ".berth.Dockerfile";
/// Build output lines a failure message quotes.
const TAIL_LINES: usize = 10;
/// Longest quoted build output line, in characters.
const MAX_LINE_CHARS: usize = 300;

/// Why the package phase failed; `code` and `message` go into the attempt's `lastError`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageFailure {
    pub code: Code,
    pub message: String,
}

fn failure(code: Code, message: impl Into<String>) -> PackageFailure {
    PackageFailure {
        code,
        message: message.into(),
    }
}

/// Deadline of the package phase, whatever the source: a build or a pull may take minutes
/// (an image already present is found in one call, well within it).
pub fn phase_timeout() -> Duration {
    BUILD_TIMEOUT
}

/// What the package step says it does.
pub fn step_label(plan: &Plan) -> String {
    match plan.packaging {
        Packaging::Pull { .. } => {
            format!(
                "Checking image {} on the server, pulling it if missing",
                plan.image
            )
        }
        Packaging::Dockerfile { .. } => {
            format!("Building image {} from the Dockerfile", plan.image)
        }
        Packaging::StaticSite { .. } => format!("Building static site image {}", plan.image),
    }
}

/// Runs the package phase: afterwards `plan.image` is on the server, or the failure says why.
/// `secrets` is the Resource's namespace, where a pull Secret is read.
pub async fn package(
    target: &Target,
    docker_socket: &str,
    plan: &Plan,
    secrets: &Api<Secret>,
    output: &OutputSink,
) -> Result<(), PackageFailure> {
    let build = match &plan.packaging {
        Packaging::Pull { pull_secret } => {
            let credentials = (pull_secret.as_deref(), secrets);
            return ensure_pulled(target, docker_socket, &plan.image, credentials, output).await;
        }
        Packaging::Dockerfile {
            context,
            dockerfile,
        } => dockerfile_build(context, dockerfile, &plan.build_args).await?,
        Packaging::StaticSite {
            context,
            server_image,
        } => static_site_build(context, server_image, plan.internal_port).await?,
    };
    run_build(target, docker_socket, plan, build, output).await?;
    match target.image_present(&plan.image).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(failure(
            Code::BuildFailed,
            format!("the build finished without producing image {}", plan.image),
        )),
        Err(error) => Err(failure(Code::DockerError, error.to_string())),
    }
}

/// Uses `image` when the server has it, otherwise pulls it; the Secret is read only then.
async fn ensure_pulled(
    target: &Target,
    docker_socket: &str,
    image: &str,
    (pull_secret, secrets): (Option<&str>, &Api<Secret>),
    output: &OutputSink,
) -> Result<(), PackageFailure> {
    match target.image_present(image).await {
        Ok(true) => return Ok(()),
        Ok(false) => {}
        Err(error) => return Err(failure(Code::DockerError, error.to_string())),
    }
    let auth = match pull_secret {
        Some(name) => {
            let registry = pull::parse_reference(image).registry;
            Some(pull::registry_auth(secrets, name, &registry).await?)
        }
        None => None,
    };
    pull::pull(target, docker_socket, image, auth, output).await?;
    match target.image_present(image).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(failure(
            Code::ImagePullFailed,
            format!("the pull finished without image {image} on the server"),
        )),
        Err(error) => Err(failure(Code::DockerError, error.to_string())),
    }
}

/// A build ready to upload: the listed files, generated files, and its parameters.
struct Build {
    listing: Listing,
    generated: Vec<(String, Vec<u8>)>,
    dockerfile: String,
    build_args: HashMap<String, String>,
}

/// Lists a folder's context for its own Dockerfile (always sent, like `.dockerignore`).
async fn dockerfile_build(
    context: &Path,
    dockerfile: &str,
    build_args: &HashMap<String, String>,
) -> Result<Build, PackageFailure> {
    let (context, name) = (context.to_path_buf(), dockerfile.to_string());
    let listing = blocking(move || {
        folder_present(&context)?;
        if !context.join(&name).is_file() {
            return Err(failure(
                Code::DockerfileNotFound,
                format!("no Dockerfile at {}", context.join(&name).display()),
            ));
        }
        let ignore = Ignore::read(&context)?;
        context::list(&context, &ignore, &[], &[name.as_str(), ".dockerignore"])
    })
    .await?;
    Ok(Build {
        listing,
        generated: Vec::new(),
        dockerfile: dockerfile.to_string(),
        build_args: build_args.clone(),
    })
}

/// Lists a static site's publish directory and generates the Dockerfile that serves it.
async fn static_site_build(
    context: &Path,
    server_image: &str,
    port: u16,
) -> Result<Build, PackageFailure> {
    let context = context.to_path_buf();
    let listing = blocking(move || {
        folder_present(&context)?;
        let ignore = Ignore::read(&context)?;
        // The site's own `.dockerignore` filters here; the generated one replaces it.
        let skipped = [GENERATED_DOCKERFILE, ".dockerignore"];
        context::list(&context, &ignore, &skipped, &[])
    })
    .await?;
    // Docker drops the files this `.dockerignore` names after reading the Dockerfile, so
    // neither is copied into the served directory.
    let ignore = format!(".dockerignore\n{GENERATED_DOCKERFILE}\n");
    Ok(Build {
        listing,
        generated: vec![
            (
                GENERATED_DOCKERFILE.to_string(),
                static_dockerfile(server_image, port).into_bytes(),
            ),
            (".dockerignore".to_string(), ignore.into_bytes()),
        ],
        dockerfile: GENERATED_DOCKERFILE.to_string(),
        build_args: HashMap::new(),
    })
}

/// The Dockerfile of a static site: the edge proxy's image (Caddy, on every server) serving
/// the copied files.
fn static_dockerfile(server_image: &str, port: u16) -> String {
    format!(
        "FROM {server_image}\n\
         COPY . /srv\n\
         EXPOSE {port}\n\
         ENTRYPOINT [\"caddy\", \"file-server\", \"--root\", \"/srv\", \"--listen\", \":{port}\"]\n"
    )
}

fn folder_present(folder: &Path) -> Result<(), PackageFailure> {
    if folder.is_dir() {
        Ok(())
    } else {
        Err(failure(
            Code::SourceFolderNotFound,
            format!(
                "{} is not a directory the controller can read",
                folder.display()
            ),
        ))
    }
}

/// Runs filesystem work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, PackageFailure> + Send + 'static,
) -> Result<T, PackageFailure> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| Err(failure(Code::BuildContextUnreadable, error.to_string())))
}

/// Uploads the context and follows the build's output to its end.
async fn run_build(
    target: &Target,
    docker_socket: &str,
    plan: &Plan,
    build: Build,
    sink: &OutputSink,
) -> Result<(), PackageFailure> {
    let masker = Masker::new(build.build_args.values());
    let options = BuildImageOptionsBuilder::new()
        .dockerfile(&build.dockerfile)
        .t(&plan.image)
        .rm(true)
        .forcerm(true)
        // The container's labels, so images can be attributed and pruned like containers.
        .labels(&plan.labels)
        .buildargs(&build.build_args)
        .build();
    tracing::info!(
        image = %plan.image,
        files = build.listing.files.len(),
        bytes = build.listing.bytes,
        "building an image"
    );
    let (body, writer) = context::stream(build.listing, build.generated);
    // Docker answers only once it has read the whole context: the deadline covers the upload.
    let docker = docker_over_ssh_within(target.connection.clone(), docker_socket, BUILD_TIMEOUT);
    let mut output = docker.build_image(options, None, Some(bollard::body_try_stream(body)));
    let mut log = BuildLog::new(&masker, &plan.image, sink);
    let mut failed = None;
    while let Some(item) = output.next().await {
        match item {
            Ok(info) => {
                log.push(info.stream.as_deref().unwrap_or_default());
                if let Some(status) = info.status {
                    log.push(&format!("{status}\n"));
                }
            }
            Err(error) => {
                failed = Some(error);
                break;
            }
        }
    }
    drop(output);
    log.finish();
    // A context that could not be read explains a failed upload better than the upload error.
    if let Ok(Err(error)) = writer.await {
        let message = format!("could not read the build context: {error}");
        return Err(failure(Code::BuildContextUnreadable, masker.mask(&message)));
    }
    match failed {
        None => Ok(()),
        Some(error) => Err(build_failure(&error, &log, &masker)),
    }
}

/// A failed build: Docker's own refusals are the user's to fix (`build_failed`); a broken
/// transport is not (`docker_error`).
fn build_failure(
    error: &bollard::errors::Error,
    log: &BuildLog<'_>,
    masker: &Masker,
) -> PackageFailure {
    use bollard::errors::Error::{DockerResponseServerError, DockerStreamError};
    let (code, reason) = match error {
        DockerStreamError { error } => (Code::BuildFailed, error.clone()),
        DockerResponseServerError { message, .. } => (Code::BuildFailed, message.clone()),
        other => (Code::DockerError, other.to_string()),
    };
    let mut message = masker.mask(reason.trim());
    let tail = log.tail();
    if !tail.is_empty() {
        message.push_str("\nlast build output:\n");
        message.push_str(&tail.join("\n"));
    }
    failure(code, message)
}

/// Build output cut into masked lines: recorded in the attempt's timeline, logged at debug
/// level, the last few kept for a failure.
struct BuildLog<'a> {
    masker: &'a Masker,
    image: &'a str,
    output: &'a OutputSink,
    partial: String,
    tail: VecDeque<String>,
}

impl<'a> BuildLog<'a> {
    fn new(masker: &'a Masker, image: &'a str, output: &'a OutputSink) -> Self {
        Self {
            masker,
            image,
            output,
            partial: String::new(),
            tail: VecDeque::new(),
        }
    }

    /// Adds output; only whole lines are masked, so a value split across chunks still is.
    fn push(&mut self, text: &str) {
        self.partial.push_str(text);
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            self.line(&line);
        }
        // A line this long without an end is flushed anyway.
        if self.partial.len() > 64 * 1024 {
            let line = std::mem::take(&mut self.partial);
            self.line(&line);
        }
    }

    fn finish(&mut self) {
        let line = std::mem::take(&mut self.partial);
        self.line(&line);
    }

    fn line(&mut self, line: &str) {
        let line = line.trim_end();
        if line.trim().is_empty() {
            return;
        }
        let masked = self.masker.mask(line);
        tracing::debug!(image = %self.image, line = %masked, "build output");
        self.output.line(OutputStream::Stdout, &masked);
        if self.tail.len() == TAIL_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back(shorten(&masked));
    }

    fn tail(&self) -> Vec<String> {
        self.tail.iter().cloned().collect()
    }
}

fn shorten(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_string();
    }
    let mut short: String = line.chars().take(MAX_LINE_CHARS).collect();
    short.push('…');
    short
}

/// Removes the resource's built images beyond the newest [`KEEP_BUILT_IMAGES`], never
/// `serving`; failures are only logged, the attempt has succeeded already.
pub async fn prune_built_images(target: &Target, namespace: &str, resource: &str, serving: &str) {
    prune(target, namespace, resource, KEEP_BUILT_IMAGES, serving).await;
}

/// Removes every image built for a resource that is going away; failures are only logged.
pub async fn remove_built_images(target: &Target, namespace: &str, resource: &str) {
    prune(target, namespace, resource, 0, "").await;
}

async fn prune(target: &Target, namespace: &str, resource: &str, keep: usize, serving: &str) {
    let filters = HashMap::from([(
        "label".to_string(),
        vec![
            format!("{}=true", berth_crds::MANAGED_LABEL),
            format!("{NAMESPACE_LABEL}={namespace}"),
            format!("{RESOURCE_LABEL}={resource}"),
        ],
    )]);
    let options = ListImagesOptionsBuilder::new().filters(&filters).build();
    let listed = docker_call(
        &target.connection,
        "listing built images",
        target.docker.list_images(Some(options)),
    )
    .await;
    let images = match listed {
        Ok(images) => images,
        Err(error) => {
            tracing::warn!(%error, resource, "could not list built images to prune");
            return;
        }
    };
    for reference in images_to_prune(&images, keep, serving) {
        match remove_image(target, &reference).await {
            Ok(()) => tracing::info!(image = %reference, resource, "removed an old built image"),
            // An image a container still uses (a newer attempt's, say) is refused: fine.
            Err(error) => {
                tracing::warn!(%error, image = %reference, "could not remove an old built image")
            }
        }
    }
}

async fn remove_image(target: &Target, reference: &str) -> Result<(), RemoteError> {
    let options = RemoveImageOptionsBuilder::new().force(false).build();
    docker_call(
        &target.connection,
        "removing a built image",
        target.docker.remove_image(reference, Some(options), None),
    )
    .await
    .map(drop)
}

/// What pruning removes: tags of built images beyond the newest `keep` (by creation time,
/// ties by tag), never the serving one, and every untagged leftover of a rebuilt tag (by id).
fn images_to_prune(images: &[ImageSummary], keep: usize, serving: &str) -> Vec<String> {
    let built_tag = |image: &ImageSummary| {
        image
            .repo_tags
            .iter()
            .find(|t| t.starts_with(BUILT_REPOSITORY_PREFIX))
            .cloned()
    };
    let mut tagged: Vec<(i64, String)> = Vec::new();
    let mut doomed = Vec::new();
    for image in images {
        match built_tag(image) {
            Some(tag) => tagged.push((image.created, tag)),
            None if image.id.is_empty() => {}
            None => doomed.push(image.id.clone()),
        }
    }
    tagged.sort_by(|a, b| b.cmp(a));
    doomed.extend(
        tagged
            .into_iter()
            .skip(keep)
            .map(|(_, tag)| tag)
            .filter(|tag| tag != serving),
    );
    doomed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_static_site_dockerfile_serves_the_copied_files() {
        let dockerfile = static_dockerfile("berth/edge-caddy:2.6.2", 8080);
        assert!(dockerfile.starts_with("FROM berth/edge-caddy:2.6.2\nCOPY . /srv\n"));
        assert!(
            dockerfile.contains(r#""--listen", ":8080"]"#),
            "{dockerfile}"
        );
    }

    #[test]
    fn build_arg_values_are_masked_in_output_and_failures() {
        let args = HashMap::from([
            ("TOKEN".to_string(), "s3cr3t-value".to_string()),
            ("SHORT".to_string(), "s3cr3t".to_string()),
            ("EMPTY".to_string(), String::new()),
        ]);
        let masker = Masker::new(args.values());
        assert_eq!(
            masker.mask("echo s3cr3t-value and s3cr3t"),
            "echo **** and ****"
        );
        let sink = OutputSink::disabled();
        let mut log = BuildLog::new(&masker, "img", &sink);
        // A value split across two output chunks is still masked.
        log.push("Step 2/3 : RUN echo s3cr");
        log.push("3t-value\nok\n");
        log.finish();
        assert_eq!(log.tail(), vec!["Step 2/3 : RUN echo ****", "ok"]);
        let error = bollard::errors::Error::DockerStreamError {
            error: "The command '/bin/sh -c test s3cr3t' returned a non-zero code: 1".into(),
        };
        let failure = build_failure(&error, &log, &masker);
        assert_eq!(failure.code, "build_failed");
        assert!(!failure.message.contains("s3cr3t"), "{}", failure.message);
        assert!(failure.message.contains("last build output:\nStep 2/3"));
    }

    #[test]
    fn the_failure_tail_keeps_the_last_lines() {
        let masker = Masker::default();
        let sink = OutputSink::disabled();
        let mut log = BuildLog::new(&masker, "img", &sink);
        for i in 0..25 {
            log.push(&format!("line {i}\n"));
        }
        let tail = log.tail();
        assert_eq!(tail.len(), TAIL_LINES);
        assert_eq!(tail.last().unwrap(), "line 24");
    }

    fn image(id: &str, tag: Option<&str>, created: i64) -> ImageSummary {
        ImageSummary {
            id: id.into(),
            repo_tags: tag.map_or(vec!["<none>:<none>".into()], |t| vec![t.into()]),
            created,
            ..Default::default()
        }
    }

    #[test]
    fn pruning_keeps_the_newest_three_and_the_serving_image() {
        let tag = |n: u32| format!("berth-built/ns-web:dep-web-{n}");
        let images: Vec<_> = (1..=6)
            .map(|n| image(&format!("sha256:{n}"), Some(&tag(n)), i64::from(n) * 10))
            .chain([image("sha256:old", None, 5)])
            .collect();
        let doomed = images_to_prune(&images, 3, &tag(6));
        assert_eq!(
            doomed,
            vec!["sha256:old".to_string(), tag(3), tag(2), tag(1)]
        );
        // A rollback target older than the newest three survives while it serves.
        let doomed = images_to_prune(&images, 3, &tag(2));
        assert_eq!(doomed, vec!["sha256:old".to_string(), tag(3), tag(1)]);
        assert!(images_to_prune(&images[..3], 3, "x").is_empty());
    }
}

//! The package phase: gets the image an attempt runs onto the server.
//!
//! - A prebuilt image (`docker-image`) is used when already there, otherwise pulled from its
//!   registry with the credentials of the Resource's `imagePullSecretRef` (see `pull`).
//! - A git source's commit is fetched into the controller's copy of the repository
//!   (`source`); an image already built from the same commit and build inputs is reused
//!   (`reuse`), otherwise the commit's files are exported to a folder.
//! - A folder (exported, or a `local-folder` on the controller's own filesystem) is built by
//!   its recipe (`recipe`: its Dockerfile, Berth's around the workspace commands, or static
//!   files served by the edge proxy's Caddy, on every server already) through Docker's build
//!   API over the SSH tunnel (`build`).
//!
//! Built images are tagged `berth-built/<namespace>/<resource>:<deployment>` (a commit's build
//! also `…:key-<build key>`), without labels; after a successful attempt all but the newest few
//! are removed.

mod build;
mod context;
mod pull;
pub mod recipe;
pub mod reuse;
mod services;
pub mod source;

use berth_crds::{NAMESPACE_LABEL, RESOURCE_LABEL};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use berth_crds::deployment::DeploymentErrorCode as Code;
use berth_crds::progress::OutputStream;
use bollard::auth::DockerCredentials;
use bollard::models::ImageSummary;
use bollard::query_parameters::{ListImagesOptionsBuilder, RemoveImageOptionsBuilder};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use self::build::{Destination, run_build};
use self::recipe::Build;
use self::source::{FetchedSource, SourceAccess, short};
use super::compose::stack::Stack;
use super::package_failure::{PackageFailure, failure};
use super::plan::{
    BUILT_REPOSITORY_PREFIX, BuildPlan, Origin, Packaging, Plan, Recipe, built_repository,
};
use super::progress::OutputSink;
use super::server_target::Target;
use berth_remote::RemoteError;
use berth_remote::docker::docker_call;

/// Built images kept per resource (besides the serving one), so a recent version can be
/// started again without a rebuild.
pub const KEEP_BUILT_IMAGES: usize = 3;
/// Deadline of a package phase that builds (upload plus every Dockerfile step) or pulls (every
/// layer download): either may take minutes.
const BUILD_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Deadline of the package phase, whatever the source: a fetch, a build or a pull may take
/// minutes (an image already present is found in one call, well within it).
pub fn phase_timeout() -> Duration {
    BUILD_TIMEOUT
}

/// What the package step says it does.
pub fn step_label(plan: &Plan) -> String {
    let Packaging::Build(build) = &plan.packaging else {
        return format!(
            "Checking image {} on the server, pulling it if missing",
            plan.image
        );
    };
    match &build.origin {
        Origin::Git(git) => format!(
            "Fetching {} and building image {}",
            git.repository.identity(),
            plan.image
        ),
        Origin::Folder(folder) => {
            format!("Building image {} from {}", plan.image, folder.display())
        }
    }
}

/// The server an image goes to, and what reaching it needs.
pub struct Server<'a> {
    pub target: &'a Target,
    pub docker_socket: &'a str,
    /// The Resource's namespace, where a pull Secret is read.
    pub secrets: &'a Api<Secret>,
}

/// Runs the package phase: afterwards `plan.image` is on the server (and, for a Compose
/// stack, every service's image: the stack is returned), or the failure says why. `fetched`
/// is the commit of a git source ([`source::fetch`]).
pub async fn package(
    server: Server<'_>,
    plan: &Plan,
    fetched: Option<&FetchedSource>,
    sources: &SourceAccess,
    output: &OutputSink,
) -> Result<Option<Stack>, PackageFailure> {
    let build = match &plan.packaging {
        Packaging::Pull { pull_secret } => {
            let credentials = (pull_secret.as_deref(), server.secrets);
            ensure_pulled(&server, &plan.image, credentials, output).await?;
            return Ok(None);
        }
        Packaging::Build(build) => build,
    };
    let compose = matches!(build.recipe, Recipe::Compose { .. });
    let mut key_tag = None;
    if let Some(fetched) = fetched.filter(|_| !compose) {
        let key = reuse::build_key(build, &fetched.fetched.commit.sha, &plan.build_args);
        let tag = reuse::key_tag(plan, &key);
        if reused(&server, plan, &tag, fetched, output).await? {
            return Ok(None);
        }
        key_tag = Some(tag);
    }
    // An exported commit stays on disk until the build has read it. What the attempt's tag
    // names now (an earlier try's image) is read meanwhile.
    let (files, before) = tokio::join!(
        source_root(build, fetched, sources),
        server.target.image_id(&plan.image)
    );
    let (root, _exported) = files?;
    let before = before.map_err(|error| failure(Code::DockerError, error.to_string()))?;
    if let Recipe::Compose { file, target } = &build.recipe {
        let stack = services::load(root.clone(), file.clone(), target.clone(), plan).await?;
        services::package(&server, build, &stack, plan, &root, output).await?;
        return Ok(Some(stack));
    }
    let prepared = prepare(build, root, plan).await?;
    let credentials = build_credentials(&server, build, &build.recipe, &prepared).await?;
    let destination = Destination {
        target: server.target,
        docker_socket: server.docker_socket,
        plan,
        credentials,
    };
    build_in_place(&server, destination, prepared, before, output).await?;
    if let Some(key_tag) = key_tag {
        let tagged = reuse::tag(server.target, &plan.image, &key_tag).await;
        tagged.map_err(|error| failure(Code::DockerError, error.to_string()))?;
    }
    Ok(None)
}

/// The folder a build reads: a local folder's base directory, or the fetched commit exported
/// (kept on disk while the returned value lives).
async fn source_root(
    build: &BuildPlan,
    fetched: Option<&FetchedSource>,
    sources: &SourceAccess,
) -> Result<(PathBuf, Option<berth_source::Exported>), PackageFailure> {
    match (&build.origin, fetched) {
        (Origin::Folder(folder), _) => Ok((folder.join(&build.base_directory), None)),
        (Origin::Git(_), Some(fetched)) => {
            let exported = export(sources, build, fetched).await?;
            Ok((exported.path().to_path_buf(), Some(exported)))
        }
        (Origin::Git(_), None) => Err(failure(
            Code::SourceFetchFailed,
            "the commit was not fetched",
        )),
    }
}

/// Builds the destination's image. An image its tag named `before` (an earlier try of the same
/// attempt) is removed once the new one holds the tag: it would stay behind untagged, where
/// pruning by name cannot see it.
async fn build_in_place(
    server: &Server<'_>,
    destination: Destination<'_>,
    prepared: Build,
    before: Option<String>,
    output: &OutputSink,
) -> Result<(), PackageFailure> {
    let image = destination.plan.image.clone();
    let docker = |error: RemoteError| failure(Code::DockerError, error.to_string());
    run_build(destination, prepared, output).await?;
    let Some(after) = server.target.image_id(&image).await.map_err(docker)? else {
        return Err(failure(
            Code::BuildFailed,
            format!("the build finished without producing image {image}"),
        ));
    };
    if let Some(replaced) = before.filter(|id| *id != after) {
        match remove_image(server.target, &replaced).await {
            Ok(()) => tracing::info!(%image, %replaced, "removed the image a rebuild replaced"),
            Err(error) => tracing::warn!(%error, %replaced, "could not remove a replaced image"),
        }
    }
    Ok(())
}

/// Tags the image an earlier attempt built from the same commit and inputs (`key_tag`), if
/// the server has it; whether it did.
async fn reused(
    server: &Server<'_>,
    plan: &Plan,
    key_tag: &str,
    fetched: &FetchedSource,
    output: &OutputSink,
) -> Result<bool, PackageFailure> {
    let docker = |error: RemoteError| failure(Code::DockerError, error.to_string());
    if !server.target.image_present(key_tag).await.map_err(docker)? {
        return Ok(false);
    }
    reuse::adopt(server.target, key_tag, plan)
        .await
        .map_err(docker)?;
    output.line(
        OutputStream::Stdout,
        &format!(
            "Reusing the image built from commit {} with the same build inputs: no rebuild",
            short(&fetched.fetched.commit.sha)
        ),
    );
    Ok(true)
}

async fn export(
    sources: &SourceAccess,
    build: &BuildPlan,
    fetched: &FetchedSource,
) -> Result<berth_source::Exported, PackageFailure> {
    let base = build.base_directory.to_str().filter(|b| !b.is_empty());
    let exported = sources
        .cache
        .export(&fetched.repository, &fetched.fetched.commit.sha, base)
        .await;
    exported.map_err(|error| failure(Code::SourceFetchFailed, error.to_string()))
}

/// The recipe decided from the files, and the build ready to upload.
async fn prepare(build: &BuildPlan, root: PathBuf, plan: &Plan) -> Result<Build, PackageFailure> {
    let recipe = build.recipe.clone();
    // Only a static site's file server uses the port, and a static site always has one.
    let port = plan
        .internal_port
        .unwrap_or(crate::routes::STATIC_SITE_PORT);
    let args = plan.build_args.clone();
    let start = plan.start_command.clone();
    blocking(move || {
        let recipe = recipe::decide(&recipe, &root)?;
        recipe::prepare(&recipe, &root, port, &args, start.as_deref())
    })
    .await
}

/// Credentials for the registries of the build's base images, from the pull Secret.
async fn build_credentials(
    server: &Server<'_>,
    build: &BuildPlan,
    recipe: &Recipe,
    prepared: &Build,
) -> Result<Option<HashMap<String, DockerCredentials>>, PackageFailure> {
    let Some(secret) = &build.pull_secret else {
        return Ok(None);
    };
    let mut credentials = HashMap::new();
    for image in base_images(recipe, prepared) {
        let registry = pull::parse_reference(&image).registry;
        let auth = pull::registry_auth(server.secrets, secret, &registry).await?;
        if let Some(found) = auth.credentials {
            let address = found.serveraddress.clone().unwrap_or(registry);
            credentials.insert(address, found);
        }
    }
    Ok(Some(credentials))
}

/// The images a build starts from: the recipe's base image, or the `FROM` lines of the
/// source's Dockerfile (stages named earlier excepted).
fn base_images(recipe: &Recipe, prepared: &Build) -> Vec<String> {
    match recipe {
        Recipe::Commands(commands) => vec![commands.base_image.clone()],
        Recipe::Static {
            stage: Some(stage), ..
        } => vec![stage.base_image.clone()],
        _ => {
            let dockerfile = prepared
                .listing
                .files
                .iter()
                .find(|entry| entry.name == Path::new(&prepared.dockerfile))
                .and_then(|entry| std::fs::read_to_string(&entry.path).ok())
                .unwrap_or_default();
            recipe::from_images(&dockerfile)
        }
    }
}

/// Uses `image` when the server has it, otherwise pulls it; the Secret is read only then.
async fn ensure_pulled(
    server: &Server<'_>,
    image: &str,
    (pull_secret, secrets): (Option<&str>, &Api<Secret>),
    output: &OutputSink,
) -> Result<(), PackageFailure> {
    let target = server.target;
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
    pull::pull(target, server.docker_socket, image, auth, output).await?;
    match target.image_present(image).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(failure(
            Code::ImagePullFailed,
            format!("the pull finished without image {image} on the server"),
        )),
        Err(error) => Err(failure(Code::DockerError, error.to_string())),
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
    let images = match built_images(target, namespace, resource).await {
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

/// The images built for a resource: those in its repository (its Compose services' below it),
/// and those an earlier Berth labelled instead (`berth-built/<namespace>-<resource>`).
async fn built_images(
    target: &Target,
    namespace: &str,
    resource: &str,
) -> Result<Vec<ImageSummary>, RemoteError> {
    let repository = built_repository(namespace, resource);
    let by_name = (
        "reference",
        vec![repository.clone(), format!("{repository}/*")],
    );
    let labelled = (
        "label",
        vec![
            format!("{}=true", berth_crds::MANAGED_LABEL),
            format!("{NAMESPACE_LABEL}={namespace}"),
            format!("{RESOURCE_LABEL}={resource}"),
        ],
    );
    let mut images: Vec<ImageSummary> = Vec::new();
    for (key, values) in [by_name, labelled] {
        let filters = HashMap::from([(key.to_string(), values)]);
        let options = ListImagesOptionsBuilder::new().filters(&filters).build();
        let listed = docker_call(
            &target.connection,
            "listing built images",
            target.docker.list_images(Some(options)),
        )
        .await?;
        for image in listed {
            if !images.iter().any(|known| known.id == image.id) {
                images.push(image);
            }
        }
    }
    Ok(images)
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

/// What pruning removes: every built tag of the images beyond the newest `keep` (by creation
/// time, ties by id) — their deployments' tags and build keys, so the last removal deletes the
/// image — never an image tagged `serving`, and untagged leftovers by id.
fn images_to_prune(images: &[ImageSummary], keep: usize, serving: &str) -> Vec<String> {
    let mut newest_first: Vec<&ImageSummary> =
        images.iter().filter(|image| !image.id.is_empty()).collect();
    newest_first.sort_by(|a, b| (b.created, &b.id).cmp(&(a.created, &a.id)));
    let mut doomed = Vec::new();
    for image in newest_first.into_iter().skip(keep) {
        let tags: Vec<&String> = image
            .repo_tags
            .iter()
            .filter(|tag| tag.starts_with(BUILT_REPOSITORY_PREFIX))
            .collect();
        if tags.iter().any(|tag| *tag == serving) {
            continue;
        }
        match tags.is_empty() {
            true => doomed.push(image.id.clone()),
            false => doomed.extend(tags.into_iter().cloned()),
        }
    }
    doomed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(id: &str, tags: &[&str], created: i64) -> ImageSummary {
        let repo_tags = match tags.is_empty() {
            true => vec!["<none>:<none>".into()],
            false => tags.iter().map(|t| t.to_string()).collect(),
        };
        ImageSummary {
            id: id.into(),
            repo_tags,
            created,
            ..Default::default()
        }
    }

    #[test]
    fn pruning_keeps_the_newest_three_and_the_serving_image() {
        let tag = |n: u32| format!("berth-built/ns/web:dep-web-{n}");
        let images: Vec<_> = (1..=6)
            .map(|n| image(&format!("sha256:{n}"), &[&tag(n)], i64::from(n) * 10))
            .chain([image("sha256:old", &[], 5)])
            .collect();
        let doomed = images_to_prune(&images, 3, &tag(6));
        assert_eq!(
            doomed,
            vec![tag(3), tag(2), tag(1), "sha256:old".to_string()]
        );
        // A rollback target older than the newest three survives while it serves.
        let doomed = images_to_prune(&images, 3, &tag(2));
        assert_eq!(doomed, vec![tag(3), tag(1), "sha256:old".to_string()]);
        assert!(images_to_prune(&images[..3], 3, "x").is_empty());
    }

    #[test]
    fn a_pruned_image_loses_every_tag_and_a_kept_one_none() {
        let key = "berth-built/ns/web:key-abc";
        // One image built once and reused by two later attempts: one image, three tags.
        let reused = image(
            "sha256:a",
            &[
                "berth-built/ns/web:dep-web-1",
                "berth-built/ns/web:dep-web-2",
                key,
            ],
            10,
        );
        let newer = image("sha256:b", &["berth-built/ns/web:dep-web-3"], 20);
        let images = [reused, newer];
        assert!(images_to_prune(&images, 2, "x").is_empty());
        assert_eq!(
            images_to_prune(&images, 1, "berth-built/ns/web:dep-web-3"),
            vec![
                "berth-built/ns/web:dep-web-1",
                "berth-built/ns/web:dep-web-2",
                key
            ]
        );
        // Serving under any of its tags keeps it whole.
        assert!(images_to_prune(&images, 1, "berth-built/ns/web:dep-web-2").is_empty());
    }
}

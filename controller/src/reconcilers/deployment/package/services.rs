//! The package phase of a Compose stack: its Compose file read and planned, then every
//! service's image built (from its build context in the source, by its Dockerfile) or pulled.
//! The routed service's image is also the attempt's own image.

use std::path::{Component, Path, PathBuf};

use berth_crds::deployment::DeploymentErrorCode as Code;
use berth_crds::progress::OutputStream;

use super::build::Destination;
use super::{Server, blocking, build_in_place, ensure_pulled, recipe, reuse};
use crate::reconcilers::deployment::compose::{self, stack::ServiceImage, stack::Stack};
use crate::reconcilers::deployment::package_failure::{PackageFailure, failure};
use crate::reconcilers::deployment::plan::{BuildPlan, DEFAULT_DOCKERFILE, Plan, Recipe};
use crate::reconcilers::deployment::progress::OutputSink;

/// Reads and plans the stack of the Compose file in `root`.
pub async fn load(
    root: PathBuf,
    file: Option<String>,
    target: Option<String>,
    plan: &Plan,
) -> Result<Stack, PackageFailure> {
    let plan = plan.clone();
    blocking(move || compose::load(&root, file.as_deref(), target.as_deref(), &plan)).await
}

/// Gets every service's image onto the server.
pub async fn package(
    server: &Server<'_>,
    build: &BuildPlan,
    stack: &Stack,
    plan: &Plan,
    root: &Path,
    output: &OutputSink,
) -> Result<(), PackageFailure> {
    for service in &stack.services {
        let routed = service.name == stack.routed;
        match &service.image {
            ServiceImage::Built {
                context,
                dockerfile,
                args,
                target,
                tag,
            } => {
                output.line(
                    OutputStream::Stdout,
                    &format!("Service {}: building {}", service.name, context.display()),
                );
                let recipe = Recipe::Dockerfile {
                    path: dockerfile
                        .clone()
                        .unwrap_or_else(|| DEFAULT_DOCKERFILE.into()),
                    target: target.clone(),
                };
                let context = inside(root, context, &service.name)?;
                let mut service_plan = plan.clone();
                service_plan.image = tag.clone();
                service_plan.build_args.extend(args.clone());
                build_one(server, build, &service_plan, &recipe, context, output).await?;
            }
            ServiceImage::Pulled(reference) => {
                output.line(
                    OutputStream::Stdout,
                    &format!("Service {}: image {reference}", service.name),
                );
                let credentials = (build.pull_secret.as_deref(), server.secrets);
                ensure_pulled(server, reference, credentials, output).await?;
                if routed {
                    let tagged = reuse::adopt(server.target, reference, plan).await;
                    tagged.map_err(|e| failure(Code::DockerError, e.to_string()))?;
                }
            }
        }
    }
    Ok(())
}

async fn build_one(
    server: &Server<'_>,
    build: &BuildPlan,
    plan: &Plan,
    recipe: &Recipe,
    context: PathBuf,
    output: &OutputSink,
) -> Result<(), PackageFailure> {
    let (recipe_, args) = (recipe.clone(), plan.build_args.clone());
    let prepared = blocking(move || recipe::prepare(&recipe_, &context, 0, &args, None)).await?;
    let credentials = super::build_credentials(server, build, recipe, &prepared).await?;
    let destination = Destination {
        target: server.target,
        docker_socket: server.docker_socket,
        plan,
        credentials,
    };
    let before = server.target.image_id(&plan.image).await;
    let before = before.map_err(|error| failure(Code::DockerError, error.to_string()))?;
    build_in_place(server, destination, prepared, before, output).await
}

/// A service's build context inside the source (a context that leaves it is refused).
fn inside(root: &Path, context: &Path, service: &str) -> Result<PathBuf, PackageFailure> {
    let escapes = context.components().any(|c| {
        matches!(
            c,
            Component::ParentDir | Component::RootDir | Component::Prefix(_)
        )
    });
    if escapes {
        return Err(failure(
            Code::ComposeFileInvalid,
            format!(
                "services.{service}.build.context {} leaves the source",
                context.display()
            ),
        ));
    }
    Ok(root.join(context))
}

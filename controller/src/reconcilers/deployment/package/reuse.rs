//! No rebuild of what was built already: an image built from a commit carries a key over
//! everything its build read (the commit, the base directory, the recipe, the build-time
//! configuration); an attempt whose key finds an image on the server tags that image instead
//! of building. A change of start command, port, health check or runtime variables changes no
//! key, so it restarts the app without a build.

use std::collections::HashMap;

use berth_crds::MANAGED_LABEL;
use bollard::query_parameters::{ListImagesOptionsBuilder, TagImageOptionsBuilder};
use sha2::{Digest, Sha256};

use super::super::plan::{BuildPlan, Plan};
use super::super::server_target::Target;
use berth_remote::RemoteError;
use berth_remote::docker::docker_call;

/// Label of a built image holding its build key.
pub const BUILD_KEY_LABEL: &str = "berth.dev/build-key";

/// The key of building `build` from `commit` with `build_args` (build-time variables).
pub fn build_key(build: &BuildPlan, commit: &str, build_args: &HashMap<String, String>) -> String {
    let mut args: Vec<_> = build_args.iter().collect();
    args.sort();
    let inputs = format!(
        "v1\n{commit}\n{}\n{:?}\n{:?}\n{args:?}",
        build.base_directory.display(),
        build.recipe,
        build.pull_secret,
    );
    hex::encode(Sha256::digest(inputs.as_bytes()))
}

/// An image on the server built with `key` (its id), if any.
pub async fn find(target: &Target, key: &str) -> Result<Option<String>, RemoteError> {
    let filters = HashMap::from([(
        "label".to_string(),
        vec![
            format!("{MANAGED_LABEL}=true"),
            format!("{BUILD_KEY_LABEL}={key}"),
        ],
    )]);
    let options = ListImagesOptionsBuilder::new().filters(&filters).build();
    let images = docker_call(
        &target.connection,
        "listing built images",
        target.docker.list_images(Some(options)),
    )
    .await?;
    Ok(images.into_iter().next().map(|image| image.id))
}

/// Tags `image` (an id) as the plan's image, so the attempt runs it under its own name.
pub async fn adopt(target: &Target, image: &str, plan: &Plan) -> Result<(), RemoteError> {
    // Built images are tagged `berth-built/<name>:<deployment>`, never by digest.
    let (repository, tag) = plan
        .image
        .rsplit_once(':')
        .unwrap_or((&plan.image, "latest"));
    let options = TagImageOptionsBuilder::new()
        .repo(repository)
        .tag(tag)
        .build();
    docker_call(
        &target.connection,
        "tagging a built image",
        target.docker.tag_image(image, Some(options)),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcilers::deployment::plan::{Origin, Recipe};

    fn build(dockerfile: &str) -> BuildPlan {
        BuildPlan {
            origin: Origin::Folder("/srv".into()),
            base_directory: "web".into(),
            recipe: Recipe::Dockerfile {
                path: dockerfile.into(),
                target: None,
            },
            pull_secret: None,
        }
    }

    #[test]
    fn the_key_moves_with_what_the_build_reads_and_nothing_else() {
        let args = HashMap::from([("API".to_string(), "1".to_string())]);
        let key = build_key(&build("Dockerfile"), "abc", &args);
        assert_eq!(key, build_key(&build("Dockerfile"), "abc", &args.clone()));
        assert_ne!(key, build_key(&build("Dockerfile"), "abd", &args));
        assert_ne!(key, build_key(&build("prod.Dockerfile"), "abc", &args));
        let other = HashMap::from([("API".to_string(), "2".to_string())]);
        assert_ne!(key, build_key(&build("Dockerfile"), "abc", &other));
        assert_eq!(key.len(), 64);
    }
}

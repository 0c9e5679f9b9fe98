//! No rebuild of what was built already: an image built from a commit carries a key over
//! everything its build read (the commit, the base directory, the recipe, the build-time
//! configuration); an attempt whose key finds an image on the server tags that image instead
//! of building. A change of start command, port, health check or runtime variables changes no
//! key, so it restarts the app without a build.
//!
//! The key is a tag of the image beside its deployment's (`…/<resource>:key-<key>`), not a
//! label: Docker's classic builder adds a build step for every label.

use std::collections::HashMap;

use bollard::query_parameters::TagImageOptionsBuilder;
use sha2::{Digest, Sha256};

use super::super::plan::{BuildPlan, Plan};
use super::super::server_target::Target;
use berth_remote::RemoteError;
use berth_remote::docker::docker_call;

/// What starts the tag holding a build key.
pub const BUILD_KEY_TAG_PREFIX: &str = "key-";

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

/// The tag marking the image of `plan` as built with `key`: in the repository of the
/// resource's built images, so only its own attempts reuse it.
pub fn key_tag(plan: &Plan, key: &str) -> String {
    let repository = plan.image.rsplit_once(':').map_or(&*plan.image, |(r, _)| r);
    format!("{repository}:{BUILD_KEY_TAG_PREFIX}{key}")
}

/// Tags `image` (an id or a reference) as `reference` (`repository:tag`).
pub async fn tag(target: &Target, image: &str, reference: &str) -> Result<(), RemoteError> {
    let (repository, tag) = reference.rsplit_once(':').unwrap_or((reference, "latest"));
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

/// Tags `image` as the plan's image, so the attempt runs it under its own name.
pub async fn adopt(target: &Target, image: &str, plan: &Plan) -> Result<(), RemoteError> {
    tag(target, image, &plan.image).await
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

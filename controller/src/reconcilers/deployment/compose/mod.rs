//! Compose stacks (`kind: compose-stack`): the services of a Compose file run as one Resource
//! on one server. `file` reads what Berth honours of the Compose format, `stack` plans the
//! containers without I/O, `run` brings them up on the server's Docker. The routed service
//! goes through the attempt's own zero-downtime path; the others are kept when unchanged.

pub mod file;
pub mod run;
pub mod stack;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use berth_crds::deployment::DeploymentErrorCode as Code;

use self::file::ComposeFile;
use self::stack::Stack;
use super::package_failure::{PackageFailure, failure};
use super::plan::Plan;

/// The file names Compose looks for, in its order.
pub const COMPOSE_FILES: [&str; 4] = [
    "compose.yaml",
    "compose.yml",
    "docker-compose.yaml",
    "docker-compose.yml",
];

/// Reads the Compose file in `root` (`declared`, else the first of [`COMPOSE_FILES`]) and
/// plans its stack for `plan`, routing `target`. Reads files: run it off the async threads.
pub fn load(
    root: &Path,
    declared: Option<&str>,
    target: Option<&str>,
    plan: &Plan,
) -> Result<Stack, PackageFailure> {
    let path = match declared {
        Some(path) => PathBuf::from(path),
        None => COMPOSE_FILES
            .iter()
            .map(PathBuf::from)
            .find(|name| root.join(name).is_file())
            .ok_or_else(|| {
                failure(
                    Code::ComposeFileInvalid,
                    format!(
                        "the source has no Compose file ({}); name it in \
                         runtimeProfile.dockerComposeFilePath",
                        COMPOSE_FILES.join(", ")
                    ),
                )
            })?,
    };
    let text = std::fs::read_to_string(root.join(&path)).map_err(|error| {
        failure(
            Code::ComposeFileInvalid,
            format!("cannot read the Compose file {}: {error}", path.display()),
        )
    })?;
    let compose_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let invalid = |error: file::ComposeError| {
        failure(
            Code::ComposeFileInvalid,
            format!("{}: {error}", path.display()),
        )
    };
    let mut file = file::parse(&text, &variables(plan)).map_err(invalid)?;
    read_env_files(&mut file, root, &compose_dir).map_err(invalid)?;
    stack::plan_stack(&file, &compose_dir, target, plan).map_err(invalid)
}

/// What `${…}` in the Compose file stands for: the resource's configuration.
fn variables(plan: &Plan) -> HashMap<String, String> {
    let runtime = plan
        .env
        .iter()
        .filter_map(|entry| entry.split_once('='))
        .map(|(key, value)| (key.to_string(), value.to_string()));
    let build = plan
        .build_args
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()));
    runtime.chain(build).collect()
}

/// Puts each service's `env_file` entries before its own `environment` (which wins).
fn read_env_files(
    file: &mut ComposeFile,
    root: &Path,
    compose_dir: &Path,
) -> Result<(), file::ComposeError> {
    for service in &mut file.services {
        let mut entries = Vec::new();
        for name in &service.env_files {
            let path = compose_dir.join(name);
            let escapes = path.components().any(|c| {
                matches!(
                    c,
                    std::path::Component::ParentDir | std::path::Component::RootDir
                )
            });
            let text = match escapes {
                true => None,
                false => std::fs::read_to_string(root.join(&path)).ok(),
            };
            let text = text.ok_or_else(|| file::ComposeError {
                path: format!("services.{}.env_file", service.name),
                message: format!("{name} is not a file of the source"),
            })?;
            entries.extend(env_lines(&text));
        }
        entries.retain(|(key, _)| !service.environment.iter().any(|(k, _)| k == key));
        entries.append(&mut service.environment);
        service.environment = entries;
    }
    Ok(())
}

/// `KEY=value` lines of an env file (`#` comments, blank lines and `export ` skipped, one
/// level of quotes removed).
fn env_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.strip_prefix("export ").unwrap_or(line).split_once('='))
        .map(|(key, value)| {
            let value = value.trim();
            let unquoted = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(value);
            (key.trim().to_string(), unquoted.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcilers::deployment::plan::tests::sample_plan;

    #[test]
    fn the_compose_file_is_found_and_its_env_files_read_before_its_environment() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("deploy")).unwrap();
        std::fs::write(
            root.path().join("deploy/compose.yml"),
            "services:\n  web:\n    image: app:${TAG:-1}\n    env_file: [web.env]\n    environment: { MODE: compose }\n",
        )
        .unwrap();
        std::fs::write(
            root.path().join("deploy/web.env"),
            "# settings\nexport MODE=file\nLIMIT=\"10\"\n",
        )
        .unwrap();
        let mut plan = sample_plan();
        plan.env = vec!["TAG=7".into()];
        let stack = load(root.path(), Some("deploy/compose.yml"), None, &plan).unwrap();
        let web = stack.routed();
        assert_eq!(web.image.reference(), "app:7");
        assert!(web.settings.env.contains(&"LIMIT=10".to_string()));
        assert!(web.settings.env.contains(&"MODE=compose".to_string()));
        assert!(!web.settings.env.contains(&"MODE=file".to_string()));
        let missing = load(root.path(), None, None, &plan).unwrap_err();
        assert_eq!(missing.code, "compose_file_invalid");
    }
}

//! From a recipe and the source's files to a build Docker can run: which files go into the
//! context, which Dockerfile builds them (the source's own, or one Berth writes around the
//! workspace commands or static files), and the stage to build. `auto` is decided here, from
//! what the files hold.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use berth_crds::deployment::DeploymentErrorCode as Code;

use super::context::{self, Ignore, Listing};
use crate::reconcilers::deployment::package_failure::{PackageFailure, failure};
use crate::reconcilers::deployment::plan::{Commands, DEFAULT_DOCKERFILE, Recipe};

/// Name of the Dockerfile Berth writes into a context; a file of that name in the source is
/// left out, so the two cannot clash.
pub const GENERATED_DOCKERFILE: &str = ".berth.Dockerfile";
/// Where the workspace commands run inside the build.
const WORKSPACE: &str = "/workspace";

/// A build ready to upload: the listed files, generated files, and its parameters.
pub struct Build {
    pub listing: Listing,
    pub generated: Vec<(String, Vec<u8>)>,
    pub dockerfile: String,
    pub target: Option<String>,
    pub build_args: HashMap<String, String>,
    /// What was built, for the output (`the Dockerfile`, `workspace commands on node:22`…).
    pub what: String,
}

/// The recipe `auto` stands for in `root`: the Dockerfile when there is one, else the files
/// served as a static site when they hold an `index.html`.
pub fn decide(recipe: &Recipe, root: &Path) -> Result<Recipe, PackageFailure> {
    let Recipe::Detect { server_image } = recipe else {
        return Ok(recipe.clone());
    };
    if root.join(DEFAULT_DOCKERFILE).is_file() {
        return Ok(Recipe::Dockerfile {
            path: DEFAULT_DOCKERFILE.into(),
            target: None,
        });
    }
    if root.join("index.html").is_file() {
        return Ok(Recipe::Static {
            publish: PathBuf::new(),
            server_image: server_image.clone(),
            stage: None,
        });
    }
    Err(failure(
        Code::BuildStrategyUndetermined,
        "the source has no Dockerfile and no index.html, so Berth cannot tell how to build it: \
         add a Dockerfile, or set runtimeProfile.baseImage with install, build and start \
         commands (workspace-commands), or runtimeProfile.strategy static",
    ))
}

/// The build of `recipe` (decided) over the files of `root`. Runs on a blocking thread.
pub fn prepare(
    recipe: &Recipe,
    root: &Path,
    port: u16,
    build_args: &HashMap<String, String>,
    start_command: Option<&str>,
) -> Result<Build, PackageFailure> {
    folder_present(root)?;
    let args: Vec<&str> = sorted_keys(build_args);
    match recipe {
        Recipe::Dockerfile { path, target } => {
            if !root.join(path).is_file() {
                return Err(failure(
                    Code::DockerfileNotFound,
                    format!(
                        "no Dockerfile at {path} in the source (runtimeProfile.dockerfilePath)"
                    ),
                ));
            }
            let ignore = Ignore::read(root)?;
            let listing = context::list(root, &ignore, &[], &[path.as_str(), ".dockerignore"])?;
            Ok(Build {
                listing,
                generated: Vec::new(),
                dockerfile: path.clone(),
                target: target.clone(),
                build_args: build_args.clone(),
                what: format!("the Dockerfile {path}"),
            })
        }
        Recipe::Commands(commands) => {
            let dockerfile = commands_dockerfile(commands, &args);
            generated(root, dockerfile, build_args, commands_label(commands))
        }
        Recipe::Static {
            publish,
            server_image,
            stage: Some(stage),
        } => {
            let dockerfile = staged_site_dockerfile(stage, publish, server_image, port, &args);
            generated(root, dockerfile, build_args, commands_label(stage))
        }
        Recipe::Static {
            publish,
            server_image,
            stage: None,
        } => {
            if start_command.is_some() {
                return Err(failure(
                    Code::FieldNotSupported,
                    "runtimeProfile.startCommand is not used: the source is a static site \
                     (an index.html and no Dockerfile), served by Berth's file server",
                ));
            }
            let dockerfile = static_dockerfile(server_image, port);
            generated(
                &root.join(publish),
                dockerfile,
                &HashMap::new(),
                "static files".into(),
            )
        }
        Recipe::Detect { .. } => unreachable!("decided before"),
        Recipe::Compose { .. } => unreachable!("a stack builds its services one by one"),
    }
}

/// A build of every file of `root` (its `.dockerignore` applied) with a Dockerfile Berth wrote.
fn generated(
    root: &Path,
    dockerfile: String,
    build_args: &HashMap<String, String>,
    what: String,
) -> Result<Build, PackageFailure> {
    folder_present(root)?;
    let ignore = Ignore::read(root)?;
    // The source's own `.dockerignore` filters here; the generated one replaces it.
    let skipped = [GENERATED_DOCKERFILE, ".dockerignore"];
    let listing = context::list(root, &ignore, &skipped, &[])?;
    // Docker drops the files this `.dockerignore` names after reading the Dockerfile, so
    // neither is copied into the image.
    let ignore = format!(".dockerignore\n{GENERATED_DOCKERFILE}\n");
    Ok(Build {
        listing,
        generated: vec![
            (GENERATED_DOCKERFILE.to_string(), dockerfile.into_bytes()),
            (".dockerignore".to_string(), ignore.into_bytes()),
        ],
        dockerfile: GENERATED_DOCKERFILE.to_string(),
        target: None,
        build_args: build_args.clone(),
        what,
    })
}

fn commands_label(commands: &Commands) -> String {
    format!("workspace commands on {}", commands.base_image)
}

fn sorted_keys(build_args: &HashMap<String, String>) -> Vec<&str> {
    let mut keys: Vec<&str> = build_args.keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

/// The workspace and its commands on the base image; the build-time variables are declared
/// (`ARG`), so the commands see them. The start command is the container's, set when it runs.
fn commands_stage(commands: &Commands, args: &[&str], stage: Option<&str>) -> String {
    let mut dockerfile = match stage {
        Some(name) => format!("FROM {} AS {name}\n", commands.base_image),
        None => format!("FROM {}\n", commands.base_image),
    };
    for arg in args {
        dockerfile.push_str(&format!("ARG {arg}\n"));
    }
    dockerfile.push_str(&format!("WORKDIR {WORKSPACE}\nCOPY . .\n"));
    for command in [&commands.install, &commands.build].into_iter().flatten() {
        dockerfile.push_str(&format!("RUN {}\n", one_line(command)));
    }
    dockerfile
}

fn commands_dockerfile(commands: &Commands, args: &[&str]) -> String {
    commands_stage(commands, args, None)
}

/// A static site built by its commands first, then only its publish directory served.
fn staged_site_dockerfile(
    stage: &Commands,
    publish: &Path,
    server_image: &str,
    port: u16,
    args: &[&str],
) -> String {
    let published = Path::new(WORKSPACE).join(publish);
    format!(
        "{}FROM {server_image}\nCOPY --from=build {} /srv\n{}",
        commands_stage(stage, args, Some("build")),
        published.display(),
        file_server(port)
    )
}

/// The Dockerfile of a static site: the edge proxy's image (Caddy, on every server) serving
/// the copied files.
pub fn static_dockerfile(server_image: &str, port: u16) -> String {
    format!("FROM {server_image}\nCOPY . /srv\n{}", file_server(port))
}

fn file_server(port: u16) -> String {
    format!(
        "EXPOSE {port}\n\
         ENTRYPOINT [\"caddy\", \"file-server\", \"--root\", \"/srv\", \"--listen\", \":{port}\"]\n"
    )
}

/// The images a Dockerfile's `FROM` lines start from, without the stages it names itself
/// (`FROM build AS run` starts from its own stage) or `scratch`.
pub fn from_images(dockerfile: &str) -> Vec<String> {
    let mut stages: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for line in dockerfile.lines() {
        let mut words = line.split_whitespace();
        if !words.next().is_some_and(|w| w.eq_ignore_ascii_case("FROM")) {
            continue;
        }
        let mut words = words.skip_while(|w| w.starts_with("--"));
        let Some(image) = words.next() else { continue };
        let lowered = image.to_ascii_lowercase();
        if lowered != "scratch" && !stages.contains(&lowered) && !image.contains('$') {
            images.push(image.to_string());
        }
        if words.next().is_some_and(|w| w.eq_ignore_ascii_case("AS")) {
            stages.extend(words.next().map(str::to_ascii_lowercase));
        }
    }
    images
}

/// A command as one `RUN` line: line breaks would end the instruction.
fn one_line(command: &str) -> String {
    command.lines().collect::<Vec<_>>().join(" \\\n    ")
}

fn folder_present(folder: &Path) -> Result<(), PackageFailure> {
    if folder.is_dir() {
        return Ok(());
    }
    // Kubernetes sets this variable in every container it starts.
    let in_pod = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    Err(failure(
        Code::SourceFolderNotFound,
        folder_missing_message(folder, in_pod),
    ))
}

/// In a pod the controller sees only its image and its volumes, which a user may not expect.
fn folder_missing_message(folder: &Path, in_pod: bool) -> String {
    let message = format!(
        "{} is not a directory the controller can read",
        folder.display()
    );
    if in_pod {
        format!(
            "{message}: berth-controller runs in a pod, so mount the folder into it at that path \
             (a volume of its Deployment) or use a git or docker-image source"
        )
    } else {
        message
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_folder_in_a_pod_says_how_to_provide_it() {
        let folder = Path::new("/srv/app");
        let plain = folder_missing_message(folder, false);
        assert_eq!(plain, "/srv/app is not a directory the controller can read");
        let in_pod = folder_missing_message(folder, true);
        assert!(in_pod.starts_with(&plain), "{in_pod}");
        assert!(in_pod.contains("mount the folder"), "{in_pod}");
    }

    fn commands() -> Commands {
        Commands {
            base_image: "berth/busybox:1".into(),
            install: Some("echo installed > installed.txt".into()),
            build: Some("mkdir -p public &&\necho built > public/index.html".into()),
        }
    }

    #[test]
    fn workspace_commands_run_in_order_and_see_the_build_time_variables() {
        let dockerfile = commands_dockerfile(&commands(), &["API_URL", "NODE_ENV"]);
        assert_eq!(
            dockerfile,
            "FROM berth/busybox:1\nARG API_URL\nARG NODE_ENV\nWORKDIR /workspace\nCOPY . .\n\
             RUN echo installed > installed.txt\n\
             RUN mkdir -p public && \\\n    echo built > public/index.html\n"
        );
    }

    #[test]
    fn a_built_static_site_serves_only_its_publish_directory() {
        let dockerfile = staged_site_dockerfile(
            &commands(),
            Path::new("public"),
            "berth/edge-caddy:2.6.2",
            8080,
            &[],
        );
        assert!(
            dockerfile.starts_with("FROM berth/busybox:1 AS build\n"),
            "{dockerfile}"
        );
        assert!(
            dockerfile.contains(
                "FROM berth/edge-caddy:2.6.2\nCOPY --from=build /workspace/public /srv\n"
            )
        );
        assert!(
            dockerfile.contains(r#""--listen", ":8080"]"#),
            "{dockerfile}"
        );
        let plain = static_dockerfile("berth/edge-caddy:2.6.2", 8080);
        assert!(plain.starts_with("FROM berth/edge-caddy:2.6.2\nCOPY . /srv\n"));
    }

    #[test]
    fn base_images_are_the_from_lines_but_own_stages() {
        let dockerfile = "FROM --platform=linux/amd64 127.0.0.1:5000/base:1 AS build\n\
                          RUN make\nfrom build AS test\nFROM scratch\nFROM node:22\n";
        assert_eq!(
            from_images(dockerfile),
            vec!["127.0.0.1:5000/base:1", "node:22"]
        );
    }

    #[test]
    fn auto_builds_the_dockerfile_else_serves_an_index_else_says_what_to_declare() {
        let folder = tempfile::tempdir().unwrap();
        let detect = Recipe::Detect {
            server_image: "caddy".into(),
        };
        let error = decide(&detect, folder.path()).unwrap_err();
        assert_eq!(error.code, "build_strategy_undetermined");
        assert!(error.message.contains("runtimeProfile.baseImage"));
        std::fs::write(folder.path().join("index.html"), "hi").unwrap();
        assert!(matches!(
            decide(&detect, folder.path()).unwrap(),
            Recipe::Static { .. }
        ));
        std::fs::write(folder.path().join("Dockerfile"), "FROM scratch").unwrap();
        assert!(matches!(
            decide(&detect, folder.path()).unwrap(),
            Recipe::Dockerfile { .. }
        ));
    }
}

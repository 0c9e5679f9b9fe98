//! The bundle an adapter is building: what it found, what it could not express (warnings) and
//! what would change behaviour if dropped (blockers). Shared by the three adapters so their
//! refs, secret handling and messages follow one rule.

use std::collections::BTreeSet;

use berth_api::migrations::{
    BUNDLE_API_VERSION, BUNDLE_KIND, Blocker, BundleDependency, BundleDomain, BundleEnvironment,
    BundleMetadata, BundleOrigin, BundleProject, BundleResource, BundleRuntime, BundleSource,
    BundleSpec, BundleTarget, BundleVariable, BundleVolume, MigrationBundle,
};
use berth_api::validate::FieldError;

use super::Defaults;

/// Everything an adapter collected; [`Draft::finish`] turns it into a bundle.
#[derive(Default)]
pub(crate) struct Draft {
    /// Project name read from the source (Railway export name, app.json `name`, compose `name`).
    pub name: Option<String>,
    pub description: Option<String>,
    /// Environment and target a source names (only Appaloft's export has them).
    pub environment: Option<BundleEnvironment>,
    pub target: Option<BundleTarget>,
    pub resources: Vec<BundleResource>,
    pub variables: Vec<BundleVariable>,
    pub dependencies: Vec<BundleDependency>,
    pub volumes: Vec<BundleVolume>,
    pub domains: Vec<BundleDomain>,
    pub blockers: Vec<Blocker>,
    pub warnings: Vec<String>,
    pub resource_refs: Refs,
    pub volume_refs: Refs,
    pub dependency_refs: Refs,
}

impl Draft {
    pub fn warn(&mut self, message: impl Into<String>) {
        self.warnings.push(message.into());
    }

    pub fn block(&mut self, code: &str, path: impl Into<String>, message: impl Into<String>) {
        self.blockers.push(Blocker {
            code: code.to_string(),
            path: path.into(),
            message: message.into(),
        });
    }

    /// A resource with a fresh ref (slug of `name`, deduplicated); returns the ref.
    pub fn add_resource(&mut self, name: &str, kind: &str, source: BundleSource) -> String {
        let reference = self.resource_refs.allocate(name, "svc");
        self.resources.push(BundleResource {
            reference: reference.clone(),
            name: name.to_string(),
            kind: kind.to_string(),
            services: Vec::new(),
            description: None,
            source,
            runtime: BundleRuntime::default(),
            network: None,
        });
        reference
    }

    /// The resource with `reference` (it exists: adapters only pass refs they allocated).
    pub fn resource(&mut self, reference: &str) -> &mut BundleResource {
        let index = self
            .resources
            .iter()
            .position(|resource| resource.reference == reference)
            .expect("adapters only look up refs they allocated");
        &mut self.resources[index]
    }

    /// Assembles the bundle: the caller's project, environment and target win over what the
    /// source says; without either, the documented defaults (an empty target, which the
    /// planner reports as missing — never an invented one).
    pub fn finish(
        self,
        provider: &str,
        fallback_name: &str,
        defaults: &Defaults,
    ) -> Result<MigrationBundle, FieldError> {
        if self.resources.is_empty() {
            return Err(FieldError::new(
                "source.files",
                format!("the {provider} files describe no service to migrate"),
            ));
        }
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| fallback_name.to_string());
        let project = defaults.project.clone().unwrap_or(BundleProject {
            name: name.clone(),
            description: self.description.clone(),
            organization_id: None,
        });
        let environment = defaults
            .environment
            .clone()
            .or(self.environment)
            .unwrap_or_else(default_environment);
        let target = defaults
            .target
            .clone()
            .or(self.target)
            .unwrap_or(BundleTarget {
                deployment_target_id: String::new(),
                destination_id: None,
            });
        Ok(MigrationBundle {
            api_version: BUNDLE_API_VERSION.to_string(),
            kind: BUNDLE_KIND.to_string(),
            metadata: BundleMetadata {
                name,
                source: Some(BundleOrigin {
                    provider: provider.to_string(),
                    project_ref: None,
                }),
            },
            spec: BundleSpec {
                project,
                environment,
                target,
                resources: self.resources,
                variables: self.variables,
                dependencies: self.dependencies,
                volumes: self.volumes,
                domains: self.domains,
                source_blockers: self.blockers,
                source_warnings: self.warnings,
            },
        })
    }
}

/// `production`/`production`: what a platform's live app is.
pub(crate) fn default_environment() -> BundleEnvironment {
    BundleEnvironment {
        name: "production".into(),
        kind: "production".into(),
    }
}

/// Refs handed out so far, so two services named alike get `web` and `web-2`.
#[derive(Default)]
pub(crate) struct Refs {
    used: BTreeSet<String>,
}

impl Refs {
    /// A ref matching `^[a-z][a-z0-9-]*$`, at most 63 characters, not handed out before.
    pub fn allocate(&mut self, name: &str, prefix: &str) -> String {
        let base = slugify(name, prefix);
        let mut candidate = base.clone();
        let mut n = 2;
        while self.used.contains(&candidate) {
            let suffix = format!("-{n}");
            let keep = base.len().min(63 - suffix.len());
            candidate = format!("{}{suffix}", base[..keep].trim_end_matches('-'));
            n += 1;
        }
        self.used.insert(candidate.clone());
        candidate
    }
}

/// Lower-case, runs of non-alphanumerics → one `-`, `<prefix>-` before a leading digit (or for
/// an empty name), at most 63 characters.
pub(crate) fn slugify(name: &str, prefix: &str) -> String {
    let mut slug = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let mut slug = slug.trim_end_matches('-').to_string();
    if slug.is_empty() {
        slug = prefix.to_string();
    } else if !slug.starts_with(|c: char| c.is_ascii_lowercase()) {
        slug = format!("{prefix}-{slug}");
    }
    slug.truncate(63);
    slug.trim_end_matches('-').to_string()
}

/// `env://<NAME>` for a key: upper-case, other characters `_`, so the resolver's
/// `^[A-Z_][A-Z0-9_]*$` accepts it.
pub(crate) fn env_ref(key: &str) -> String {
    format!("env://{}", env_name(key))
}

/// A key as an environment variable name (`Postgres` + `DATABASE_URL` → `POSTGRES_DATABASE_URL`).
pub(crate) fn env_name(key: &str) -> String {
    let mut name: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    name
}

/// Keys people name secrets by. Their values are never copied: the variable becomes an
/// `env://KEY` reference the user supplies at apply.
pub(crate) fn is_secret_key(key: &str) -> bool {
    const WORDS: [&str; 7] = [
        "PASSWORD",
        "PASSWD",
        "SECRET",
        "TOKEN",
        "KEY",
        "CREDENTIALS",
        "PRIVATE",
    ];
    let upper = key.to_ascii_uppercase();
    upper == "DATABASE_URL"
        || upper
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| WORDS.contains(&word))
        || ["PASSWORD", "SECRET", "TOKEN", "KEY"]
            .iter()
            .any(|end| upper.ends_with(end))
}

/// A URL with `user:password@` in it: a credential even under an innocent key.
pub(crate) fn has_credentials(value: &str) -> bool {
    let Some((_, rest)) = value.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
}

/// Whether a plain value must not be copied (secret-looking key or a URL with credentials).
pub(crate) fn is_secret(key: &str, value: &str) -> bool {
    is_secret_key(key) || has_credentials(value)
}

/// A plain runtime variable.
pub(crate) fn plain(key: &str, value: &str, resource: Option<&str>) -> BundleVariable {
    BundleVariable {
        key: key.to_string(),
        value: Some(value.to_string()),
        secret_ref: None,
        exposure: "runtime".into(),
        kind: "plain-config".into(),
        resource_ref: resource.map(str::to_string),
    }
}

/// A secret runtime variable whose value the user supplies at apply as `env://KEY`.
pub(crate) fn secret(key: &str, resource: Option<&str>) -> BundleVariable {
    BundleVariable {
        key: key.to_string(),
        value: None,
        secret_ref: Some(env_ref(key)),
        exposure: "runtime".into(),
        kind: "secret".into(),
        resource_ref: resource.map(str::to_string),
    }
}

/// Database kind a service's image or name suggests (`postgres`, `mysql`, `redis`, `mongodb`).
pub(crate) fn database_kind(text: &str) -> Option<&'static str> {
    let text = text.to_ascii_lowercase();
    [
        ("postgres", "postgres"),
        ("mysql", "mysql"),
        ("mariadb", "mysql"),
        ("redis", "redis"),
        ("mongo", "mongodb"),
    ]
    .iter()
    .find(|(needle, _)| text.contains(needle))
    .map(|(_, kind)| *kind)
}

/// A `docker-image` source.
pub(crate) fn image_source(image: &str) -> BundleSource {
    source("docker-image", image)
}

pub(crate) fn source(kind: &str, locator: &str) -> BundleSource {
    BundleSource {
        kind: kind.to_string(),
        locator: locator.to_string(),
        git_ref: None,
        commit_sha: None,
        base_directory: None,
        image_digest: None,
    }
}

/// The FieldError of a file that is not what it should be.
pub(crate) fn file_error(name: &str, message: impl Into<String>) -> FieldError {
    FieldError::new(&format!("source.files.{name}"), message)
}

/// `a, b, c` for messages that list keys (never values).
pub(crate) fn list(items: &[String]) -> String {
    items.join(", ")
}

//! Vendor files → the neutral bundle (MIGRATION.md §3, §6). Pure: the caller reads the files
//! (CLI) or receives them (`POST /migrations/plan` with `{source}`); each adapter recognises a
//! file by its content first and only then by its conventional name, because people upload
//! what their platform's tools printed under whatever name they saved it.
//!
//! Nothing is dropped silently: what an adapter reads but cannot express is a sentence in
//! `spec.sourceWarnings`, what would change behaviour if dropped is a `spec.sourceBlockers`
//! entry. Variable values never appear in either, nor in an error.

use std::collections::BTreeMap;

use berth_api::migrations::{
    BundleEnvironment, BundleProject, BundleTarget, MigrationBundle, VendorSource,
};
use berth_api::validate::FieldError;

pub mod compose;
pub(crate) mod draft;
pub(crate) mod fields;
pub mod heroku;
pub mod railway;

/// The providers [`translate`] understands.
pub const PROVIDERS: [&str; 3] = ["railway", "heroku", "compose"];

/// What the caller says about the destination; it wins over what the files say.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Defaults {
    pub project: Option<BundleProject>,
    pub environment: Option<BundleEnvironment>,
    pub target: Option<BundleTarget>,
}

impl Defaults {
    /// The `project`, `environment` and `target` of a `{source}` request.
    pub fn from_source(source: &VendorSource) -> Self {
        Self {
            project: source.project.clone(),
            environment: source.environment.clone(),
            target: source.target.clone(),
        }
    }

    /// The environment whose settings apply (Railway's `environments.<name>` blocks).
    pub fn environment_name(&self) -> &str {
        self.environment
            .as_ref()
            .map_or("production", |environment| environment.name.as_str())
    }
}

/// Translates a `{source}` request: dispatch on the provider, then the overrides of
/// [`Defaults`].
pub fn translate(source: &VendorSource) -> Result<MigrationBundle, FieldError> {
    let defaults = Defaults::from_source(source);
    if source.files.is_empty() {
        return Err(FieldError::new(
            "source.files",
            "source.files must hold at least one file (name → content)",
        ));
    }
    match source.provider.trim().to_ascii_lowercase().as_str() {
        "railway" => railway::translate(&source.files, &defaults),
        "heroku" => heroku::translate(&source.files, &defaults),
        "compose" => compose::translate(&source.files, &defaults),
        _ => Err(FieldError::not_one_of("source.provider", &PROVIDERS)),
    }
}

/// The files of a source, by name.
pub type Files = BTreeMap<String, String>;

/// The last path segment of a file name (`web/railway.json` → `railway.json`).
pub(crate) fn base_name(name: &str) -> &str {
    name.rsplit(['/', '\\']).next().unwrap_or(name)
}

#[cfg(test)]
mod robustness_tests;
#[cfg(test)]
mod tests;

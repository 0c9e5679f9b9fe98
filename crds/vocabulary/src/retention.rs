//! What a scheduled retention run records (spec §2.2 "Retention default policy", beyond it):
//! stored in a RetentionPolicy's status and answered by `GET /retention-defaults`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One scheduled run of a policy over the observation store.
// `Instant` is how it holds an instant: Kubernetes `Time` in a RetentionPolicy's status, an
// RFC 3339 string in the REST API's answers (which cannot see Kubernetes types); the schema
// says `date-time` either way.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "RetentionRun")]
pub struct RetentionRun<Instant> {
    /// When the run finished.
    #[schemars(extend("format" = "date-time"))]
    pub at: Instant,
    /// Generation of the spec the run applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// `dry-run` (counted, deleted nothing) or `destructive` (deleted).
    pub mode: RetentionRunMode,
    /// History recorded before this instant was selected.
    #[schemars(extend("format" = "date-time"))]
    pub cutoff: Instant,
    /// Rows older than the cutoff, per history kept in this category (e.g.
    /// `monitoring-samples`); in a dry run, what a destructive run would delete.
    pub matched_rows: BTreeMap<String, i64>,
    /// Rows deleted (zero in a dry run).
    pub deleted_rows: i64,
    /// Organization namespaces the run covered (a system policy covers those without an
    /// enabled policy of their own for the category).
    pub namespaces: Vec<String>,
    /// Why a run found nothing to govern, or failed in part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// How a scheduled run treats what it finds.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RetentionRunMode {
    DryRun,
    Destructive,
}

impl<Instant> RetentionRun<Instant> {
    /// The same run with its instants held another way (`Time` as the REST API prints it).
    pub fn with_instants<Other>(self, convert: impl Fn(Instant) -> Other) -> RetentionRun<Other> {
        RetentionRun {
            at: convert(self.at),
            generation: self.generation,
            mode: self.mode,
            cutoff: convert(self.cutoff),
            matched_rows: self.matched_rows,
            deleted_rows: self.deleted_rows,
            namespaces: self.namespaces,
            message: self.message,
        }
    }
}

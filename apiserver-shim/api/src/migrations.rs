//! Platform migration (spec §4.9): the neutral bundle, the plan, receipts and the answers of
//! `POST /migrations/plan|apply|status|verify|cleanup`. Shapes follow Appaloft 1.10.5's
//! `platform-migration/v1` so its clients find the same wire; Berth's additions are optional
//! fields (`source` beside `bundle`, `secretValues`, `confirmDataLoss`, `migrationName`).
//! Every object is strict: an unknown key is refused, naming it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

// The plan, receipts, failures and verify result are shared with the Migration CRD, which
// stores them: defined in `berth-vocabulary`.
pub use berth_vocabulary::migrations::{
    Blocker, Evidence, MigrationPlan, PROTOCOL, PlanState, Receipt, Scalar, Step, StepCleanup,
    StepFailure, VariableReport, VerificationResult,
};

/// `apiVersion` of a neutral bundle.
pub const BUNDLE_API_VERSION: &str = "appaloft.io/migration/v1";
/// `kind` of a neutral bundle.
pub const BUNDLE_KIND: &str = "MigrationBundle";

// ---------------------------------------------------------------------------------------------
// The neutral bundle (Appaloft's `MigrationBundle`).

/// What to migrate, independent of the platform it came from.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MigrationBundle {
    /// Always `appaloft.io/migration/v1`.
    pub api_version: String,
    /// Always `MigrationBundle`.
    pub kind: String,
    pub metadata: BundleMetadata,
    pub spec: BundleSpec,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleMetadata {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<BundleOrigin>,
}

/// The platform a bundle was translated from.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleOrigin {
    /// Lower-cased platform name (`railway`, `heroku`, `compose`).
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_ref: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleSpec {
    pub project: BundleProject,
    pub environment: BundleEnvironment,
    pub target: BundleTarget,
    pub resources: Vec<BundleResource>,
    #[serde(default)]
    pub variables: Vec<BundleVariable>,
    #[serde(default)]
    pub dependencies: Vec<BundleDependency>,
    #[serde(default)]
    pub volumes: Vec<BundleVolume>,
    #[serde(default)]
    pub domains: Vec<BundleDomain>,
    /// Problems the adapter found; copied into the plan's blockers.
    #[serde(default)]
    pub source_blockers: Vec<Blocker>,
    /// Berth's addition: what the adapter read but did not migrate (fields it does not
    /// understand, variables kept out), copied into the plan's warnings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_warnings: Vec<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleProject {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organization_id: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleEnvironment {
    pub name: String,
    /// `local|development|test|staging|production|preview|custom`.
    pub kind: String,
}

/// Where the resources run: a Berth server id.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleTarget {
    pub deployment_target_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_id: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleResource {
    /// `^[a-z][a-z0-9-]*$`, unique in the bundle.
    #[serde(rename = "ref")]
    pub reference: String,
    pub name: String,
    /// `application|service|database|cache|compose-stack|worker|static-site|external`.
    #[serde(default = "default_resource_kind")]
    pub kind: String,
    #[serde(default)]
    pub services: Vec<BundleService>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub source: BundleSource,
    #[serde(default)]
    pub runtime: BundleRuntime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<BundleNetwork>,
}

fn default_resource_kind() -> String {
    "application".into()
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleService {
    pub name: String,
    /// `web|api|worker|database|cache|service`.
    pub kind: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleSource {
    /// A source kind of `POST /resources` (`docker-image`, `remote-git`, `git-public`, …).
    pub kind: String,
    pub locator: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_sha: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_directory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_digest: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleRuntime {
    /// `auto|dockerfile|docker-compose|prebuilt-image|workspace-commands|static|helm`.
    #[serde(default = "default_strategy")]
    pub strategy: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish_directory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dockerfile_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docker_compose_file_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_path: Option<String>,
}

impl Default for BundleRuntime {
    fn default() -> Self {
        Self {
            strategy: default_strategy(),
            install_command: None,
            build_command: None,
            start_command: None,
            publish_directory: None,
            dockerfile_path: None,
            docker_compose_file_path: None,
            health_check_path: None,
        }
    }
}

fn default_strategy() -> String {
    "auto".into()
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleNetwork {
    pub internal_port: u16,
    /// `http|tcp`.
    #[serde(default = "default_protocol")]
    pub upstream_protocol: String,
    /// `none|reverse-proxy|direct-port`.
    #[serde(default = "default_exposure")]
    pub exposure_mode: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_service_name: Option<String>,
}

fn default_protocol() -> String {
    "http".into()
}

fn default_exposure() -> String {
    "reverse-proxy".into()
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleVariable {
    pub key: String,
    /// Exactly one of `value` and `secretRef`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `k8s://<secret>#<key>` or `env://NAME`; never a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<String>,
    /// `build-time|runtime`.
    pub exposure: String,
    /// `plain-config|secret|provider-specific|deployment-strategy`.
    #[serde(default = "default_variable_kind")]
    pub kind: String,
    /// The resource it belongs to; absent = the environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_ref: Option<String>,
}

fn default_variable_kind() -> String {
    "plain-config".into()
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleDependency {
    #[serde(rename = "ref")]
    pub reference: String,
    pub name: String,
    /// `postgres|mysql|redis|mongodb|clickhouse|generic`.
    pub kind: String,
    /// `appaloft-managed|imported-external`.
    #[serde(default = "default_source_mode")]
    pub source_mode: String,
    pub provider_key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_secret_ref: Option<String>,
    /// The image a managed `postgres` or `redis` is provisioned from (Berth; a Compose
    /// service's `image`), or whose client checks an imported one from the target server;
    /// Berth's default for the kind without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default)]
    pub bindings: Vec<BundleBinding>,
}

impl BundleDependency {
    /// A `kind` database of the source platform (`provider_key`) that Berth provisions empty,
    /// from `image` or its default one, with no binding yet.
    pub fn provisioned(
        reference: String,
        name: &str,
        kind: &str,
        provider_key: String,
        image: Option<String>,
    ) -> Self {
        Self {
            reference,
            name: name.to_string(),
            kind: kind.to_string(),
            source_mode: default_source_mode(),
            provider_key,
            connection_secret_ref: None,
            image,
            bindings: Vec::new(),
        }
    }
}

fn default_source_mode() -> String {
    "appaloft-managed".into()
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleBinding {
    pub resource_ref: String,
    /// The environment variable the connection URL is injected as.
    pub target_name: String,
    /// `runtime-only|build-and-runtime`.
    #[serde(default = "default_scope")]
    pub scope: String,
    /// `env|file`.
    #[serde(default = "default_injection")]
    pub injection_mode: String,
}

fn default_scope() -> String {
    "runtime-only".into()
}

fn default_injection() -> String {
    "env".into()
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleVolume {
    #[serde(rename = "ref")]
    pub reference: String,
    pub name: String,
    pub resource_ref: String,
    pub mount_path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_mb: Option<u64>,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleDomain {
    pub hostname: String,
    pub resource_ref: String,
    /// `automatic|manual|disabled`.
    #[serde(default = "default_tls_policy")]
    pub tls_policy: String,
}

fn default_tls_policy() -> String {
    "automatic".into()
}

// ---------------------------------------------------------------------------------------------
// Requests.

/// `POST /migrations/plan`: a neutral bundle, or (Berth) the vendor files to translate.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<VendorSource>,
}

/// Vendor files, recognised by content.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VendorSource {
    /// `railway`, `heroku` or `compose`.
    pub provider: String,
    /// File name → content.
    pub files: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<BundleTarget>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<BundleProject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<BundleEnvironment>,
}

/// `POST /migrations/apply`.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplyRequest {
    pub plan: MigrationPlan,
    pub confirmed_plan_digest: String,
    #[serde(default)]
    pub prior_receipts: Vec<Receipt>,
    /// Berth: values of the plan's `env://NAME` references, read by the client from its own
    /// environment; used for this request only, never stored or echoed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub secret_values: BTreeMap<String, String>,
}

/// `POST /migrations/status` and `/migrations/verify`.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadbackRequest {
    pub plan: MigrationPlan,
    pub receipts: Vec<Receipt>,
}

/// `POST /migrations/cleanup`.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CleanupRequest {
    pub plan: MigrationPlan,
    pub receipts: Vec<Receipt>,
    pub confirmed_plan_digest: String,
    /// Berth: delete a volume or database that received data after apply.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confirm_data_loss: bool,
}

// ---------------------------------------------------------------------------------------------
// Answers.

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resume {
    pub remaining_step_ids: Vec<String>,
    pub cleanup_step_ids: Vec<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplyResult {
    pub protocol: String,
    pub plan_digest: String,
    /// `completed` | `partial` | `failed`.
    pub state: String,
    pub receipts: Vec<Receipt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<StepFailure>,
    pub resume: Resume,
    /// Berth: the `Migration` object that holds this task (`kubectl get bmig NAME`).
    pub migration_name: String,
}

/// What an event of `POST /migrations/apply/stream` says.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ApplyProgressKind {
    /// The task is open and its lease taken, before the first step runs.
    Started,
    /// A step finished; its receipt is already recorded in the task.
    StepCompleted,
    /// The run ended: `result` holds what `POST /migrations/apply` answers.
    Finished,
    /// The run stopped before its end for a reason outside the plan (the task could not be
    /// written); `message` says why. Applying again resumes after the last receipt.
    Interrupted,
}

/// Berth: one event of `POST /migrations/apply/stream`, sent as each step of the run lands.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplyProgress {
    pub kind: ApplyProgressKind,
    /// The `Migration` object that holds the task.
    pub migration_name: String,
    pub plan_digest: String,
    /// Steps with a receipt so far, of `totalSteps`.
    pub completed_steps: usize,
    pub total_steps: usize,
    /// `step-completed`: the step's receipt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<Receipt>,
    /// `finished`: the answer of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ApplyResult>,
    /// `interrupted`: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusResult {
    pub protocol: String,
    pub plan_digest: String,
    /// `complete` | `partial` | `unavailable`.
    pub state: String,
    pub completed_step_ids: Vec<String>,
    pub pending_step_ids: Vec<String>,
    pub evidence: Vec<Evidence>,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CleanupAction {
    pub step_id: String,
    pub operation_key: String,
    pub command_name: String,
    pub state: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CleanupResult {
    pub protocol: String,
    pub plan_digest: String,
    /// `completed` | `partial` | `failed`.
    pub state: String,
    pub actions: Vec<CleanupAction>,
    pub skipped_step_ids: Vec<String>,
    pub remaining_step_ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<StepFailure>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeCleaned {
    pub id: String,
    pub runtime_cleaned: bool,
    /// `cancelled` (it was running), `stopped` (it served the resource) or `none` (nothing
    /// of it runs).
    pub action: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CleanupRuntime {
    /// The deployment's id again.
    pub confirm: String,
    /// The deployment's resource, if given, must be the deployment's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
}

//! The closed set of environment kinds, checked by the CRD schema, the shim and the CLI.

/// Every value an environment's `kind` may take (a closed set, checked by the API server and
/// the shim).
pub const ENVIRONMENT_KINDS: &[&str] = &[
    "local",
    "development",
    "test",
    "staging",
    "production",
    "preview",
    "custom",
];

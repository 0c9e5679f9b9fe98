//! The limits the request checks of this crate apply: the values of `berth_crds::limits`, the
//! ones the CRDs' schemas hold, repeated here because the CLI does not depend on `berth-crds`.
//! The shim's tests assert each equals its CRD twin, so a REST call, a YAML apply and the
//! CLI's own check accept the same values.

/// Largest integer a JSON number holds exactly (2^53 - 1).
pub const JSON_SAFE_INTEGER_MAX: i64 = 9_007_199_254_740_991;
/// Largest port of a network profile (spec §8).
pub const MAX_PORT_NUMBER: i64 = JSON_SAFE_INTEGER_MAX;
/// Largest TCP port (a health check's container port).
pub const TCP_PORT_MAX: i64 = 65_535;
/// Longest display name.
pub const NAME_MAX: usize = 120;
/// Longest DNS label (slugs, service names).
pub const DNS_LABEL_MAX: usize = 63;
/// Longest organization slug.
pub const ORGANIZATION_SLUG_MAX: usize = 58;
/// Longest Kubernetes object name (ids).
pub const OBJECT_NAME_MAX: usize = 253;
/// Longest description.
pub const DESCRIPTION_MAX: usize = 2000;
/// Longest free text: commands, locators, paths.
pub const TEXT_MAX: usize = 2048;
/// Longest URL path.
pub const URL_PATH_MAX: usize = 1024;
/// Longest source kind.
pub const SOURCE_KIND_MAX: usize = 63;
/// Longest source display name.
pub const SOURCE_DISPLAY_NAME_MAX: usize = 253;
/// Smallest and largest HTTP status a health check may expect.
pub const HTTP_STATUS_MIN: i64 = 100;
pub const HTTP_STATUS_MAX: i64 = 599;
/// Largest number of seconds of a health check's timings.
pub const HEALTH_CHECK_SECONDS_MAX: i64 = 86_400;
/// Most retries of a health check.
pub const HEALTH_CHECK_RETRIES_MAX: i64 = 1_000;

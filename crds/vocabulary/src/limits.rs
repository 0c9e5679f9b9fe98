//! The limits of spec §8 and the field bounds Berth adds to them, named once. The CRD schemas
//! (`#[schemars(length(..), range(..), regex(..))]`, through `berth_crds::limits`), the shim's
//! request validation and the CLI's own checks all read these constants, so a YAML apply, a
//! REST call and a CLI command accept the same values.

/// Largest integer a JSON number holds exactly: the upper bound of ports (§8 network profile
/// `internalPort`, `hostPort`) and of the projects `offset`.
pub const JSON_SAFE_INTEGER_MAX: i64 = 9_007_199_254_740_991;

/// Largest `internalPort` / `hostPort` of a network profile (spec §8).
pub const MAX_PORT_NUMBER: i64 = JSON_SAFE_INTEGER_MAX;

/// Largest TCP port: a server's SSH port, a health check's container port.
pub const TCP_PORT_MAX: i64 = 65_535;

/// Longest display name (organization, project, environment, resource, server, token…).
pub const NAME_MAX: usize = 120;

/// Longest DNS label (RFC 1123): slugs and service names.
pub const DNS_LABEL_MAX: usize = 63;

/// A DNS label: lowercase letters, digits and inner dashes.
pub const DNS_LABEL_PATTERN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// Longest organization slug: its namespace `org-<slug>` must stay a DNS label (with one
/// character to spare).
pub const ORGANIZATION_SLUG_MAX: usize = 58;

/// Longest object name or id of another object (a DNS subdomain): ids, Secret names, hosts.
pub const OBJECT_NAME_MAX: usize = 253;

/// Longest email address.
pub const EMAIL_MAX: usize = 320;

/// Longest free-text description.
pub const DESCRIPTION_MAX: usize = 2000;

/// Longest single-line text: a source locator or base directory, a build or start command.
/// The shim refuses longer single-line strings anywhere in a request.
pub const TEXT_MAX: usize = 2048;

/// Longest URL path: an access profile's path prefix, a health check's path.
pub const URL_PATH_MAX: usize = 1024;

/// A path that starts with `/`.
pub const ABSOLUTE_PATH_PATTERN: &str = r"^/";

/// Longest source kind (`docker-image`, `local-folder`, `git`…).
pub const SOURCE_KIND_MAX: usize = 63;

/// A source kind: lowercase letters, digits and dashes.
pub const SOURCE_KIND_PATTERN: &str = r"^[a-z0-9-]+$";

/// Longest display name of a source.
pub const SOURCE_DISPLAY_NAME_MAX: usize = 253;

/// Lowest and highest status code a health check may expect.
pub const HTTP_STATUS_MIN: i64 = 100;
/// See [`HTTP_STATUS_MIN`].
pub const HTTP_STATUS_MAX: i64 = 599;

/// Longest health check interval, timeout or start period, in seconds (a day).
pub const HEALTH_CHECK_SECONDS_MAX: i64 = 86_400;

/// Most failed health probes in a row before a container counts as unhealthy.
pub const HEALTH_CHECK_RETRIES_MAX: i64 = 1_000;

/// Largest `limit` of the usage-intent, deployment-overlay, route-surface, SSH credential,
/// project, environment and server lists (spec §8).
pub const LIST_LIMIT_MAX: u64 = 500;

/// Largest `limit` of the deploy token list (spec §8).
pub const DEPLOY_TOKEN_LIST_LIMIT_MAX: u64 = 100;

/// Largest `limit` of the member, invitation and session lists (spec §8).
pub const MEMBER_LIST_LIMIT_MAX: u64 = 250;

/// Largest projects `offset` (spec §8).
pub const PROJECTS_OFFSET_MAX: u64 = JSON_SAFE_INTEGER_MAX as u64;

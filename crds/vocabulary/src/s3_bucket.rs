//! An S3-compatible bucket as a backup target names it: the same record in the BackupTarget
//! kind and in `POST /backup-targets`, with one rule for what is allowed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The region signed for when none is given (AWS's default; Garage and MinIO take any name
/// they are configured with).
pub const DEFAULT_REGION: &str = "us-east-1";
/// The keys of the credentials Secret a target names.
pub const ACCESS_KEY_ID_FIELD: &str = "accessKeyId";
pub const SECRET_ACCESS_KEY_FIELD: &str = "secretAccessKey";

const ENDPOINT_MAX: usize = 512;
const PREFIX_MAX: usize = 512;

/// A bucket of an S3-compatible store. Artifacts go under
/// `<prefix>/<namespace>/<what was backed up>/<backup>.berth-backup`, sealed before they leave
/// the controller, and appear under that name only once complete (multipart upload).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct S3Bucket {
    /// The store's URL without a path: `https://s3.eu-west-1.amazonaws.com`,
    /// `http://127.0.0.1:3900`. Plain `http` carries only sealed artifacts and signatures,
    /// never the secret key.
    #[schemars(length(min = 8, max = ENDPOINT_MAX), regex(pattern = r"^https?://[A-Za-z0-9.:\[\]-]+/?$"))]
    pub endpoint: String,
    /// The bucket (it must exist; Berth does not create it).
    #[schemars(
        length(min = 3, max = 63),
        regex(pattern = r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$")
    )]
    pub bucket: String,
    /// The region requests are signed for.
    #[serde(default = "default_region")]
    #[schemars(length(min = 1, max = 63), regex(pattern = r"^[a-z0-9-]+$"))]
    pub region: String,
    /// Address the bucket in the path (`endpoint/bucket/key`), as most self-hosted stores
    /// need, rather than as a host name (`bucket.endpoint/key`, AWS's default).
    #[serde(default)]
    pub path_style: bool,
    /// A key prefix under which artifacts go, without a leading `/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = PREFIX_MAX), regex(pattern = r"^[A-Za-z0-9._-][A-Za-z0-9._/-]*$"))]
    pub prefix: Option<String>,
}

fn default_region() -> String {
    DEFAULT_REGION.to_string()
}

impl S3Bucket {
    /// What the schema says, for a request checked before it becomes an object: the field
    /// (relative to the bucket) and why.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        let host = self
            .endpoint
            .strip_prefix("https://")
            .or_else(|| self.endpoint.strip_prefix("http://"))
            .map(|rest| rest.trim_end_matches('/'));
        let host_ok = host.is_some_and(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".:[]-".contains(c))
        });
        if !host_ok || self.endpoint.len() > ENDPOINT_MAX {
            let why = "endpoint must be http:// or https:// and a host (with an optional port), \
                       without a path";
            return Some(("endpoint", why.to_string()));
        }
        let bucket_ok = (3..=63).contains(&self.bucket.len())
            && self
                .bucket
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || ".-".contains(c))
            && !self.bucket.starts_with(['.', '-'])
            && !self.bucket.ends_with(['.', '-']);
        if !bucket_ok {
            let why = "bucket must be 3 to 63 lowercase letters, digits, '.' and '-', starting \
                       and ending with a letter or digit";
            return Some(("bucket", why.to_string()));
        }
        let region_ok = (1..=63).contains(&self.region.len())
            && self
                .region
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !region_ok {
            let why = "region must be 1 to 63 lowercase letters, digits and '-'";
            return Some(("region", why.to_string()));
        }
        let prefix_ok = self.prefix.as_ref().is_none_or(|p| {
            (1..=PREFIX_MAX).contains(&p.len())
                && !p.starts_with('/')
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c))
        });
        if !prefix_ok {
            let why =
                "prefix must be letters, digits, '.', '_', '-' and '/', not starting with '/'";
            return Some(("prefix", why.to_string()));
        }
        None
    }

    /// The key of an artifact: `<prefix>/<namespace>/<of>/<backup>.berth-backup`.
    pub fn artifact_key(&self, namespace: &str, of: &str, backup: &str) -> String {
        let file = format!("{namespace}/{of}/{backup}.berth-backup");
        match self.prefix.as_deref().map(|p| p.trim_end_matches('/')) {
            Some(prefix) if !prefix.is_empty() => format!("{prefix}/{file}"),
            _ => file,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket() -> S3Bucket {
        S3Bucket {
            endpoint: "http://127.0.0.1:3900".into(),
            bucket: "berth-backups".into(),
            region: DEFAULT_REGION.into(),
            path_style: true,
            prefix: None,
        }
    }

    #[test]
    fn a_plain_bucket_passes_and_each_bad_field_is_named() {
        assert_eq!(bucket().problem(), None);
        let field = |change: fn(&mut S3Bucket)| {
            let mut b = bucket();
            change(&mut b);
            b.problem().map(|(field, _)| field)
        };
        assert_eq!(field(|b| b.endpoint = "ftp://x".into()), Some("endpoint"));
        assert_eq!(
            field(|b| b.endpoint = "https://x/bucket".into()),
            Some("endpoint")
        );
        assert_eq!(field(|b| b.bucket = "Backups".into()), Some("bucket"));
        assert_eq!(field(|b| b.bucket = "-ab".into()), Some("bucket"));
        assert_eq!(field(|b| b.region = "EU West".into()), Some("region"));
        assert_eq!(field(|b| b.prefix = Some("/abs".into())), Some("prefix"));
        assert_eq!(field(|b| b.prefix = Some("team a".into())), Some("prefix"));
        assert_eq!(
            field(|b| b.endpoint = "https://s3.example.com/".into()),
            None
        );
    }

    #[test]
    fn artifacts_go_under_the_prefix_then_namespace_and_subject() {
        assert_eq!(
            bucket().artifact_key("org-acme", "db", "db-b1"),
            "org-acme/db/db-b1.berth-backup"
        );
        let prefixed = S3Bucket {
            prefix: Some("berth/".into()),
            ..bucket()
        };
        assert_eq!(
            prefixed.artifact_key("org-acme", "db", "db-b1"),
            "berth/org-acme/db/db-b1.berth-backup"
        );
    }
}

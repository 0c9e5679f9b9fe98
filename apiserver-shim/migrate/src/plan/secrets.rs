//! Secret references (`k8s://<secret>#<key>`, `env://NAME`) and the heuristics that spot a
//! secret migrated as a plain value. Nothing here ever echoes a value: errors name at most the
//! reference's scheme.

use berth_api::migrations::MigrationPlan;
use berth_api::validate::FieldError;
use serde_json::Value;

/// Where the value of a `$secretRef` comes from at apply time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretRef {
    /// A key of a Kubernetes Secret in the organization's namespace.
    Kubernetes { secret: String, key: String },
    /// A variable of the client's environment, sent in `secretValues` for one request.
    Environment { name: String },
}

/// Kubernetes' limit on object names and Secret keys.
const K8S_NAME_MAX: usize = 253;

/// Parses a secret reference; the error names `field` and at most the scheme, never the rest
/// (a value pasted by mistake must not come back in an answer or a log).
pub fn parse_secret_ref(field: &str, text: &str) -> Result<SecretRef, FieldError> {
    let usage = "must be k8s://<secret-name>#<key> or env://NAME";
    if let Some(rest) = text.strip_prefix("k8s://") {
        let parsed = rest.split_once('#').and_then(|(secret, key)| {
            (is_dns_subdomain(secret) && is_secret_key(key)).then(|| SecretRef::Kubernetes {
                secret: secret.to_string(),
                key: key.to_string(),
            })
        });
        return parsed.ok_or_else(|| {
            FieldError::new(
                field,
                format!("{field}: a k8s:// reference {usage}, with a DNS-1123 secret name and a key of letters, digits, - . _"),
            )
        });
    }
    if let Some(name) = text.strip_prefix("env://") {
        if is_env_name(name) {
            return Ok(SecretRef::Environment {
                name: name.to_string(),
            });
        }
        return Err(FieldError::new(
            field,
            format!("{field}: an env:// reference {usage}, NAME matching ^[A-Z_][A-Z0-9_]*$"),
        ));
    }
    let scheme = text
        .split_once("://")
        .map(|(scheme, _)| scheme)
        .filter(|s| !s.is_empty() && s.len() <= 16 && s.chars().all(|c| c.is_ascii_alphanumeric()));
    let message = match scheme {
        Some(scheme) => format!("{field} {usage}; the scheme {scheme}:// is not one of them"),
        None => format!("{field} {usage}"),
    };
    Err(FieldError::new(field, message))
}

/// A DNS-1123 subdomain: dot-separated labels of lowercase letters, digits and dashes.
pub(crate) fn is_dns_subdomain(name: &str) -> bool {
    (1..=K8S_NAME_MAX).contains(&name.len()) && name.split('.').all(is_dns_label)
}

/// A DNS-1123 label of at most 63 characters.
pub(crate) fn is_dns_label(label: &str) -> bool {
    (1..=63).contains(&label.len())
        && label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

fn is_secret_key(key: &str) -> bool {
    (1..=K8S_NAME_MAX).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
        && bytes.all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// Every `{"$secretRef": …}` of the plan's step inputs, in step order (keys in order within a
/// step), so apply can ask for all of them before it runs anything.
pub fn secret_refs(plan: &MigrationPlan) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for step in &plan.steps {
        for value in step.input.values() {
            collect_secret_refs(value, &mut |text| found.push((step.id.clone(), text)));
        }
    }
    found
}

fn collect_secret_refs(value: &Value, found: &mut dyn FnMut(String)) {
    match value {
        Value::Object(map) => match secret_placeholder(map) {
            Some(text) => found(text.to_string()),
            None => map.values().for_each(|v| collect_secret_refs(v, found)),
        },
        Value::Array(items) => items.iter().for_each(|v| collect_secret_refs(v, found)),
        _ => {}
    }
}

/// The reference text of `{"$secretRef": "<text>"}` (that key alone).
pub(crate) fn secret_placeholder(map: &serde_json::Map<String, Value>) -> Option<&str> {
    match (map.len(), map.get("$secretRef")) {
        (1, Some(Value::String(text))) => Some(text),
        _ => None,
    }
}

/// Key endings (upper-cased) that name a credential.
const SECRET_SUFFIXES: [&str; 5] = ["_PASSWORD", "_SECRET", "_TOKEN", "_KEY", "_APIKEY"];
/// Keys that are a credential by themselves.
const SECRET_KEYS: [&str; 3] = ["PASSWORD", "SECRET", "TOKEN"];

/// Whether a plain variable looks like a credential: by its key, or a URL with a password.
pub(crate) fn looks_like_secret(key: &str, value: &str) -> bool {
    let upper = key.to_ascii_uppercase();
    SECRET_KEYS.contains(&upper.as_str())
        || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
        || url_has_password(value)
}

/// `scheme://user:pass@host…` (or `scheme://:pass@host`): a password in the authority.
fn url_has_password(value: &str) -> bool {
    let Some((scheme, rest)) = value.split_once("://") else {
        return false;
    };
    let scheme_ok = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let userinfo = authority.rsplit_once('@').map(|(userinfo, _)| userinfo);
    scheme_ok
        && userinfo
            .and_then(|u| u.split_once(':'))
            .is_some_and(|(_, p)| !p.is_empty())
}

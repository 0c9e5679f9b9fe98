//! Every answer the tests' REST client receives is held against the OpenAPI document the shim
//! serves: a success status the document does not list for its operation fails the test that
//! received it, so the document cannot say 200 where a handler answers 201.

use serde_json::Value;
use tokio::sync::OnceCell;

static DOCUMENT: OnceCell<Value> = OnceCell::const_new();

/// Panics when `status` (a success) is not one the document lists for `method path`.
pub async fn check_success(
    http: &reqwest::Client,
    base: &str,
    method: &str,
    path: &str,
    status: u16,
) {
    let document = DOCUMENT
        .get_or_init(|| async {
            let response = http.get(format!("{base}/openapi.json")).send().await;
            let response = response.expect("the shim serves its OpenAPI document");
            response.json().await.expect("the OpenAPI document is JSON")
        })
        .await;
    if let Some(listed) = documented_successes(document, method, path) {
        assert!(
            listed.contains(&status),
            "{method} {path} answered {status}; its OpenAPI operation lists {listed:?}"
        );
    }
}

/// The success statuses the document lists for `method path` (its query left out), or `None`
/// for a path it does not describe. A path matching several templates takes the one with the
/// most literal segments (`/deployments/stream` over `/deployments/{deploymentId}`).
pub fn documented_successes(document: &Value, method: &str, path: &str) -> Option<Vec<u16>> {
    let path = path.split('?').next().unwrap_or(path);
    let segments: Vec<&str> = path.split('/').collect();
    let (_, operation) = document["paths"]
        .as_object()?
        .iter()
        .filter_map(|(template, item)| {
            let literal = literal_matches(template, &segments)?;
            Some((literal, item.get(method.to_lowercase())?))
        })
        .max_by_key(|(literal, _)| *literal)?;
    let responses = operation["responses"].as_object()?;
    let statuses = responses.keys().filter_map(|key| key.parse().ok());
    Some(
        statuses
            .filter(|status| (200..300).contains(status))
            .collect(),
    )
}

/// How many literal segments of `template` equal those of the path, or `None` when the path
/// does not fit it.
fn literal_matches(template: &str, segments: &[&str]) -> Option<usize> {
    let parts: Vec<&str> = template.split('/').collect();
    if parts.len() != segments.len() {
        return None;
    }
    let mut literal = 0;
    for (part, segment) in parts.iter().zip(segments) {
        if part.starts_with('{') {
            if segment.is_empty() {
                return None;
            }
        } else if part == segment {
            literal += 1;
        } else {
            return None;
        }
    }
    Some(literal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_path_takes_its_most_literal_template() {
        let ok = json!({"responses": {"200": {}, "default": {}}});
        let created = json!({"responses": {"201": {}, "default": {}}});
        let document = json!({"paths": {
            "/deployments/{deploymentId}": {"get": ok},
            "/deployments/stream": {"post": ok},
            "/deployments": {"post": created},
        }});
        let successes = |method, path| documented_successes(&document, method, path);
        assert_eq!(successes("POST", "/deployments"), Some(vec![201]));
        assert_eq!(successes("POST", "/deployments/stream"), Some(vec![200]));
        assert_eq!(successes("GET", "/deployments/dep-1?x=1"), Some(vec![200]));
        assert_eq!(successes("POST", "/deployments/dep-1"), None);
        assert_eq!(successes("GET", "/projects"), None);
    }
}

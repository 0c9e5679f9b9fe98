//! The OpenAPI 3.1 document at `/api/openapi.json`, built from the route table.

use std::sync::OnceLock;

use axum::Json;
use axum::http::StatusCode;
use schemars::generate::SchemaSettings;
use schemars::transform::Transform;
use serde_json::{Map, Value, json};

use super::endpoints;
use crate::error::ErrorEnvelope;

pub async fn serve() -> Json<Value> {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    Json(DOCUMENT.get_or_init(document).clone())
}

/// Builds the document: one operation per endpoint, schemas under `components.schemas`.
pub fn document() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    // Answers never hold a null field (berth-api's wire rule); the document says so.
    settings
        .transforms
        .push(Box::new(berth_api::wire::NoNullFields));
    let mut generator = settings.into_generator();
    let error = generator.subschema_for::<ErrorEnvelope>();
    let mut paths = Map::new();
    for endpoint in endpoints() {
        let body = json!({endpoint.response_media_type: {"schema": inline(endpoint.response, &mut generator)}});
        let mut responses: Map<String, Value> = endpoint
            .success
            .iter()
            .map(|status| {
                let described =
                    json!({"description": success_description(*status), "content": body});
                (status.as_str().to_string(), described)
            })
            .collect();
        responses.insert(
            "default".into(),
            json!({"description": "Error envelope (400, 401, 403, 404, 409, 422, 429, 5xx)", "content": {"application/json": {"schema": error}}}),
        );
        let mut operation = json!({
            "summary": endpoint.summary,
            "operationId": operation_id(endpoint.method.as_str(), endpoint.path),
            "responses": responses,
        });
        if let Some(request) = endpoint.request {
            let schema = inline(request, &mut generator);
            operation["requestBody"] = json!({"required": true, "content": {endpoint.request_media_type: {"schema": schema}}});
        }
        if endpoint.public {
            operation["security"] = json!([]);
        }
        let mut parameters: Vec<Value> = path_parameters(endpoint.path)
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "minLength": 1}}))
            .collect();
        if let Some(query) = endpoint.query {
            parameters.extend(query_parameters(inline(query, &mut generator)));
        }
        if !parameters.is_empty() {
            operation["parameters"] = Value::Array(parameters);
        }
        let item = paths
            .entry(endpoint.path.to_string())
            .or_insert_with(|| json!({}));
        item[endpoint.method.as_str().to_lowercase()] = operation;
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Berth REST API", "version": env!("CARGO_PKG_VERSION")},
        "servers": [{"url": "/api"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": generator.take_definitions(true),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    })
}

fn success_description(status: StatusCode) -> &'static str {
    match status {
        StatusCode::CREATED => "Created",
        StatusCode::ACCEPTED => "Accepted: the work goes on; the object's status says when it ends",
        _ => "Success",
    }
}

/// A body's schema; one written in place rather than referenced gets the transforms that
/// `components.schemas` get.
fn inline(
    schema_of: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
    generator: &mut schemars::SchemaGenerator,
) -> schemars::Schema {
    let mut schema = schema_of(generator);
    berth_api::wire::NoNullFields.transform(&mut schema);
    schema
}

/// One optional query parameter per property of `object`, its doc line as its description.
fn query_parameters(object: schemars::Schema) -> Vec<Value> {
    let Some(Value::Object(properties)) = object.as_value().get("properties") else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, schema)| {
            let mut schema = schema.clone();
            let description = schema.as_object_mut().and_then(|s| s.remove("description"));
            let mut parameter =
                json!({"name": name, "in": "query", "required": false, "schema": schema});
            if let Some(description) = description {
                parameter["description"] = description;
            }
            parameter
        })
        .collect()
}

fn path_parameters(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
}

/// `POST /projects/{projectId}/rename` → `post_projects_projectId_rename`.
fn operation_id(method: &str, path: &str) -> String {
    let tail: Vec<&str> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_matches(|c| c == '{' || c == '}'))
        .collect();
    format!(
        "{}_{}",
        method.to_lowercase(),
        tail.join("_").replace('-', "_")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deployment_stream_is_documented_as_an_event_stream() {
        let document = document();
        let ok = &document["paths"]["/deployments/stream"]["post"]["responses"]["200"];
        assert!(
            ok["content"]["text/event-stream"]["schema"].is_object(),
            "{ok}"
        );
        assert!(ok["content"].get("application/json").is_none());
    }

    #[test]
    fn creates_document_201_and_work_that_goes_on_202() {
        let document = document();
        let documented = |method: &str, path: &str| -> Vec<String> {
            let responses = document["paths"][path][method]["responses"].as_object();
            responses.unwrap().keys().cloned().collect()
        };
        assert_eq!(documented("post", "/deployments"), ["201", "default"]);
        assert_eq!(
            documented("post", "/webhooks/{provider}"),
            ["202", "default"]
        );
        assert_eq!(
            documented("post", "/deployments/{deploymentId}/cancel"),
            ["200", "202", "default"]
        );
        assert_eq!(documented("get", "/projects"), ["200", "default"]);
    }

    #[test]
    fn query_parameters_are_documented_one_by_one() {
        let document = document();
        let list = &document["paths"]["/terminal-sessions"]["get"];
        let parameters = list["parameters"].as_array().expect("parameters");
        let named = |name: &str| {
            parameters
                .iter()
                .find(|p| p["name"] == name)
                .unwrap_or_else(|| panic!("{name} in {list}"))
        };
        for name in [
            "scope",
            "serverId",
            "resourceId",
            "deploymentId",
            "sandboxId",
            "limit",
        ] {
            let parameter = named(name);
            assert_eq!(parameter["in"], "query", "{parameter}");
            assert_eq!(parameter["required"], false, "{parameter}");
            assert!(parameter["description"].is_string(), "{parameter}");
            assert!(
                !parameter["schema"].to_string().contains("null"),
                "{parameter}"
            );
        }
        let limit = &named("limit")["schema"];
        assert_eq!(
            (&limit["minimum"], &limit["maximum"]),
            (&json!(1), &json!(200)),
            "{limit}"
        );
        assert_eq!(named("serverId")["schema"]["minLength"], 1);
        let scope = named("scope")["schema"].to_string();
        let reference = scope
            .split("#/components/schemas/")
            .nth(1)
            .map(|r| r.split('"').next().unwrap().to_string());
        let values = match reference {
            Some(name) => document["components"]["schemas"][name].to_string(),
            None => scope.clone(),
        };
        for value in ["server", "resource", "dependency", "sandbox"] {
            assert!(values.contains(&format!("\"{value}\"")), "{scope} {values}");
        }
        // Show and close are Appaloft's routes, beside the WebSocket.
        let paths = &document["paths"];
        assert!(paths["/terminal-sessions/{sessionId}"]["get"].is_object());
        let close = &paths["/terminal-sessions/{sessionId}/close"]["post"];
        assert_eq!(close["parameters"][0]["name"], "sessionId", "{close}");
        assert!(paths["/terminal-sessions/{sessionId}/ws"]["get"].is_object());
    }

    #[test]
    fn every_endpoint_is_documented_with_resolvable_references() {
        let document = document();
        let text = document.to_string();
        for endpoint in endpoints() {
            let method = endpoint.method.as_str().to_lowercase();
            assert!(
                document["paths"][endpoint.path][&method].is_object(),
                "{method} {} missing",
                endpoint.path
            );
        }
        for reference in text.split("\"$ref\":\"").skip(1) {
            let target = &reference[..reference.find('"').unwrap()];
            let name = target
                .strip_prefix("#/components/schemas/")
                .expect("local reference");
            assert!(
                document["components"]["schemas"][name].is_object(),
                "dangling {target}"
            );
        }
    }

    /// Every property schema in `value`, with where it is.
    fn properties<'a>(value: &'a Value, at: String, out: &mut Vec<(String, &'a Value)>) {
        match value {
            Value::Object(object) => {
                if let Some(Value::Object(properties)) = object.get("properties") {
                    for (name, property) in properties {
                        out.push((format!("{at}.{name}"), property));
                    }
                }
                for (key, child) in object {
                    properties(child, format!("{at}/{key}"), out);
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    properties(child, format!("{at}/{index}"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn no_field_of_any_answer_admits_null() {
        let document = document();
        let mut found = Vec::new();
        properties(&document, String::new(), &mut found);
        assert!(found.len() > 500, "only {} properties", found.len());
        for (at, property) in found {
            let text = property.to_string();
            let nullable = property["type"] == "null"
                || text.contains(r#"{"type":"null"}"#)
                || property["type"]
                    .as_array()
                    .is_some_and(|types| types.iter().any(|t| t == "null"));
            assert!(!nullable, "{at} admits null: {text}");
        }
    }
}

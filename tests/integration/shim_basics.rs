//! What every client of the REST shim relies on: health and metrics at the origin, the OpenAPI
//! document, and one error envelope for unknown paths, wrong methods and bad bodies.

use berth_tests::rest::{Rest, base_url};
use serde_json::json;

fn origin() -> String {
    base_url().trim_end_matches("/api").to_string()
}

#[tokio::test]
async fn health_and_metrics_are_served_at_the_origin() {
    for path in ["/healthz", "/readyz"] {
        let response = reqwest::get(format!("{}{path}", origin())).await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    let admin = Rest::admin().await;
    admin.get("/projects/count").await.ok();
    let metrics = reqwest::get(format!("{}/metrics", origin()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // Counted by route template, never by raw path (which would carry ids).
    assert!(
        metrics.contains(r#"berth_shim_http_requests_total{method="GET",route="/api/projects/count",status="200"}"#),
        "metrics: {metrics}"
    );
    assert!(metrics.contains("berth_shim_http_request_duration_seconds_bucket"));
}

#[tokio::test]
async fn the_openapi_document_describes_the_api() {
    let document = Rest::anonymous().get("/openapi.json").await.ok();
    assert_eq!(document["openapi"], "3.1.0");
    let paths = document["paths"].as_object().expect("paths");
    for (path, method) in [
        ("/projects", "get"),
        ("/projects/{projectId}", "delete"),
        ("/deploy-tokens", "post"),
        ("/bootstrap/auth/first-admin", "post"),
        ("/organizations/{organizationId}/members", "get"),
    ] {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} undocumented"
        );
    }
    assert!(document["components"]["schemas"]["ErrorEnvelope"].is_object());
}

#[tokio::test]
async fn every_failure_uses_the_error_envelope() {
    let admin = Rest::admin().await;
    admin.get("/no-such-endpoint").await.error(404, "not_found");
    admin
        .send(reqwest::Method::PUT, "/projects", Some(json!({})))
        .await
        .error(405, "method_not_allowed");
    let unknown = admin
        .post("/projects", json!({"name": "x", "nmae": "typo"}))
        .await
        .error(422, "validation_error");
    assert_eq!(unknown["details"]["field"], "nmae");
    let missing = admin
        .post("/projects", json!({}))
        .await
        .error(422, "validation_error");
    assert_eq!(missing["details"]["field"], "name");
    Rest::anonymous()
        .get("/projects")
        .await
        .error(401, "unauthenticated");
    admin
        .with_token("bst_not-a-real-token")
        .get("/projects")
        .await
        .error(401, "unauthenticated");
}

//! The route table. Every endpoint is declared once, with its request and response types, and
//! both the axum router and the OpenAPI document are built from that declaration, so the
//! document cannot drift from the code. Modules mirror the specification's sections. [`app`]
//! is the whole HTTP application around them (health, metrics, the console, the layers).

pub mod access_failures;
pub mod account;
pub mod activity;
pub mod backup_policies;
pub mod backup_uploads;
pub mod backups;
pub mod bootstrap;
pub mod certificates;
pub mod credentials;
pub mod decisions;
pub mod dependency_bindings;
pub mod dependency_exposure;
pub mod dependency_resources;
pub mod dependency_upgrades;
pub mod deploy_tokens;
pub mod deployment_attempts;
pub mod deployments;
pub mod diagnostics;
pub mod domain_binding_changes;
pub mod domain_binding_readiness;
pub mod environment_changes;
pub mod environments;
pub mod invitations;
pub mod liveness;
pub mod members;
pub mod migrations;
pub mod monitoring;
pub mod notification_channels;
pub mod notification_deliveries;
pub mod openapi;
pub mod organizations;
pub mod overlays;
pub mod preview_cleanup;
pub mod preview_environments;
pub mod preview_policies;
pub mod projects;
pub mod resource_config;
pub mod resource_health;
pub mod resources;
pub mod retention;
pub mod runtime_logs;
pub mod scheduled_task_runs;
pub mod scheduled_tasks;
pub mod server_capacity;
pub mod server_changes;
pub mod server_connectivity;
pub mod servers;
pub mod storage_volumes;
pub mod terminal;
pub mod thresholds;
pub mod usage_intents;
pub mod users;
pub mod volume_backup_policies;
pub mod volume_backups;
pub mod webhooks;

use axum::Router;
use axum::extract::{Request, State};
use axum::handler::Handler;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, on};
use schemars::{JsonSchema, Schema, SchemaGenerator};

use crate::error::ApiError;
use crate::state::AppState;
use crate::{audit, console, metrics, validate};

type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// One endpoint of the REST API.
pub struct Endpoint {
    pub method: Method,
    /// Path under `/api`, with `{param}` placeholders.
    pub path: &'static str,
    pub summary: &'static str,
    /// Whether it is served without a bearer token.
    pub public: bool,
    pub request: Option<SchemaFn>,
    /// Media type of the request body: JSON, or bytes for an upload.
    pub request_media_type: &'static str,
    pub response: SchemaFn,
    /// Media type of a successful response; for `text/event-stream` the schema is one
    /// event's `data`.
    pub response_media_type: &'static str,
    /// The statuses its handler answers with when it succeeds (200 unless it says otherwise).
    pub success: &'static [StatusCode],
    /// Its query parameters, as an object schema whose properties they are.
    pub query: Option<SchemaFn>,
    route: MethodRouter<AppState>,
}

fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// `T`'s own schema, never a reference to it: the document lists its properties one by one.
fn object_schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    T::json_schema(generator)
}

impl Endpoint {
    fn new<H, T>(method: Method, path: &'static str, summary: &'static str, handler: H) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        let filter =
            axum::routing::MethodFilter::try_from(method.clone()).expect("a routable method");
        Self {
            method,
            path,
            summary,
            public: false,
            request: None,
            request_media_type: "application/json",
            response: schema_of::<serde_json::Value>,
            response_media_type: "application/json",
            success: &[StatusCode::OK],
            query: None,
            route: on(filter, handler),
        }
    }

    /// A read: no body.
    pub fn get<Resp: JsonSchema, H: Handler<T, AppState>, T: 'static>(
        path: &'static str,
        summary: &'static str,
        handler: H,
    ) -> Self {
        Self {
            response: schema_of::<Resp>,
            ..Self::new(Method::GET, path, summary, handler)
        }
    }

    /// A call with a JSON body.
    pub fn post<Req: JsonSchema, Resp: JsonSchema, H: Handler<T, AppState>, T: 'static>(
        path: &'static str,
        summary: &'static str,
        handler: H,
    ) -> Self {
        Self {
            request: Some(schema_of::<Req>),
            response: schema_of::<Resp>,
            ..Self::new(Method::POST, path, summary, handler)
        }
    }

    /// A POST whose body is a file's bytes (`application/octet-stream`), its options in the
    /// query.
    pub fn upload<Resp: JsonSchema, H: Handler<T, AppState>, T: 'static>(
        path: &'static str,
        summary: &'static str,
        handler: H,
    ) -> Self {
        Self {
            request: Some(schema_of::<UploadedBytes>),
            request_media_type: "application/octet-stream",
            response: schema_of::<Resp>,
            ..Self::new(Method::POST, path, summary, handler)
        }
    }

    /// A DELETE, which carries a JSON body (the confirmation).
    pub fn delete<Req: JsonSchema, Resp: JsonSchema, H: Handler<T, AppState>, T: 'static>(
        path: &'static str,
        summary: &'static str,
        handler: H,
    ) -> Self {
        Self {
            request: Some(schema_of::<Req>),
            response: schema_of::<Resp>,
            ..Self::new(Method::DELETE, path, summary, handler)
        }
    }

    /// Served without authentication.
    pub fn public(mut self) -> Self {
        self.public = true;
        self
    }

    /// Succeeds with these statuses instead of 200: 201 where it creates, 202 where the work
    /// goes on after the answer (the document lists each; the integration tests' client checks
    /// every answer against it).
    pub fn success(mut self, statuses: &'static [StatusCode]) -> Self {
        self.success = statuses;
        self
    }

    /// Takes the fields of `Q` as query parameters, each optional (the document lists them, so
    /// generated requests try them).
    pub fn query<Q: JsonSchema>(mut self) -> Self {
        self.query = Some(object_schema_of::<Q>);
        self
    }

    /// Answers with an event stream (spec §6) whose events carry the response type as `data`.
    pub fn event_stream(mut self) -> Self {
        self.response_media_type = "text/event-stream";
        self
    }
}

/// The body of an upload, as the document describes it: bytes.
struct UploadedBytes;

impl JsonSchema for UploadedBytes {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "UploadedBytes".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({"type": "string", "contentMediaType": "application/octet-stream"})
    }
}

/// Every endpoint, in the order of the specification's sections.
pub fn endpoints() -> Vec<Endpoint> {
    [
        bootstrap::endpoints(),
        projects::endpoints(),
        account::endpoints(),
        organizations::endpoints(),
        members::endpoints(),
        invitations::endpoints(),
        users::endpoints(),
        decisions::endpoints(),
        usage_intents::endpoints(),
        overlays::endpoints(),
        deploy_tokens::endpoints(),
        environments::endpoints(),
        environment_changes::endpoints(),
        credentials::endpoints(),
        servers::endpoints(),
        server_changes::endpoints(),
        server_capacity::endpoints(),
        server_connectivity::endpoints(),
        terminal::endpoints(),
        deployments::endpoints(),
        deployment_attempts::endpoints(),
        webhooks::endpoints(),
        preview_policies::endpoints(),
        preview_environments::endpoints(),
        preview_cleanup::endpoints(),
        certificates::endpoints(),
        domain_binding_changes::endpoints(),
        domain_binding_readiness::endpoints(),
        resources::endpoints(),
        resource_config::endpoints(),
        storage_volumes::endpoints(),
        dependency_resources::endpoints(),
        dependency_exposure::endpoints(),
        dependency_upgrades::endpoints(),
        dependency_bindings::endpoints(),
        backups::endpoints(),
        backup_uploads::endpoints(),
        backup_policies::endpoints(),
        volume_backups::endpoints(),
        volume_backup_policies::endpoints(),
        scheduled_tasks::endpoints(),
        scheduled_task_runs::endpoints(),
        notification_channels::endpoints(),
        notification_deliveries::endpoints(),
        runtime_logs::endpoints(),
        resource_health::endpoints(),
        diagnostics::endpoints(),
        access_failures::endpoints(),
        monitoring::endpoints(),
        thresholds::endpoints(),
        retention::endpoints(),
        activity::endpoints(),
        migrations::endpoints(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The router for everything under `/api`.
pub fn api_router() -> Router<AppState> {
    let mut router = Router::new().route("/openapi.json", get(openapi::serve));
    for endpoint in endpoints() {
        router = router.route(endpoint.path, endpoint.route);
    }
    router
}

/// The whole HTTP application: health and metrics at the origin, the API under `/api`, and the
/// web console at `/` for whatever no route matches (its assets, and its page for any path a
/// browser navigates to); anything else unrouted gets the API's JSON 404.
pub fn app(state: AppState) -> Router {
    Router::new()
        .merge(liveness::router())
        .nest("/api", api_router())
        .merge(migrations::runner::router())
        .route("/metrics", get(metrics::serve))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            audit::record,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::track,
        ))
        .fallback(console_or_not_found)
        .method_not_allowed_fallback(|| async {
            ApiError::new_method_not_allowed().into_response()
        })
        .layer(axum::middleware::from_fn(validate::refuse_bad_paths))
        .layer(compression())
        .with_state(state)
}

/// Unrouted requests: the console's files and page, else the API's JSON 404. The console
/// counts its own answers in the metrics: the route layers above do not reach the fallback.
async fn console_or_not_found(State(state): State<AppState>, request: Request) -> Response {
    console::answer(&request, &state.metrics)
        .unwrap_or_else(|| ApiError::not_found("endpoint", "this path").into_response())
}

/// gzip or brotli, as the client's Accept-Encoding prefers (the console's HTML, JS, CSS and SVG
/// too); never an event stream (each event must reach the client when it is sent) nor a body
/// too small to gain.
pub(crate) fn compression()
-> tower_http::compression::CompressionLayer<impl tower_http::compression::Predicate> {
    use tower_http::compression::predicate::{NotForContentType, Predicate as _};
    use tower_http::compression::{CompressionLayer, DefaultPredicate};
    CompressionLayer::new()
        .gzip(true)
        .br(true)
        .compress_when(DefaultPredicate::new().and(NotForContentType::SSE))
}

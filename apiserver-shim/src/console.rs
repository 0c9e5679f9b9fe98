//! The web console: the single-page app built into `console/dist/`, compiled into the binary
//! and served at the origin, so it reaches the API under `/api` without CORS or a second
//! server. Hashed build outputs under `/assets/` are cached for good; everything else is
//! revalidated by ETag, so a new shim's console is picked up at the next load.
//!
//! [`choose`] decides what a request gets from its method, path and `Accept` alone;
//! [`answer`] looks the file up and writes the response.

use std::time::Instant;

use axum::body::Body;
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::metrics::HttpMetrics;

/// The console's production build, embedded in debug builds too: tests serve what is
/// committed, not whatever happens to be on disk when they run.
#[derive(rust_embed::RustEmbed)]
#[folder = "console/dist/"]
struct Dist;

/// Path prefixes that are never the console's, whatever the `Accept`: the API and the
/// operational endpoints keep their own answers (and their JSON 404s).
const NOT_CONSOLE: &[&str] = &["/api", "/healthz", "/readyz", "/metrics"];

/// The browser may run and load only what this origin serves; inline styles are allowed
/// because Svelte's transitions and `style:` directives write them.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
    connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; \
    font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// Headers every console response carries, its 304s and 404s included.
const SECURITY_HEADERS: [(HeaderName, &str); 4] = [
    (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::REFERRER_POLICY, "no-referrer"),
    (header::X_FRAME_OPTIONS, "DENY"),
];

/// What a request gets from the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// `/assets/<file>`: a build output whose name carries its hash.
    Asset(String),
    /// Another file at the root of the build (`/favicon.svg`).
    RootFile(String),
    /// The app's page, for `/` and every deep link a browser opens (`/resources/x/logs`).
    Page,
    /// Not the console's: the caller answers (the API's JSON 404).
    NotConsole,
}

impl Choice {
    /// The metrics label: one per kind of answer, never the path, which would make a label
    /// per deep link.
    fn route(&self) -> &'static str {
        match self {
            Choice::Asset(_) => "/assets/{file}",
            Choice::RootFile(_) => "/{file}",
            Choice::Page => "/{*page}",
            Choice::NotConsole => "unmatched",
        }
    }
}

/// How long a browser may keep a response without asking again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caching {
    /// A hashed asset never changes under its name.
    Immutable,
    /// The page and root files keep their names across builds: always revalidate.
    Revalidate,
}

impl Caching {
    fn header(self) -> &'static str {
        match self {
            Caching::Immutable => "public, max-age=31536000, immutable",
            Caching::Revalidate => "no-cache",
        }
    }
}

/// Decides what a request gets. `is_root_file` says whether the build has a file of that
/// name at its root. Only a browser navigating (one that accepts HTML) gets the page for an
/// unknown path; API clients and scripts keep the JSON 404.
pub fn choose(
    method: &Method,
    path: &str,
    accept: &str,
    is_root_file: impl Fn(&str) -> bool,
) -> Choice {
    if !matches!(*method, Method::GET | Method::HEAD) || NOT_CONSOLE.iter().any(|p| under(path, p))
    {
        return Choice::NotConsole;
    }
    if let Some(file) = path.strip_prefix("/assets/") {
        return Choice::Asset(file.to_string());
    }
    if let Some(name) = path.strip_prefix('/')
        && !name.is_empty()
        && !name.contains('/')
        && is_root_file(name)
    {
        return Choice::RootFile(name.to_string());
    }
    if accepts_html(accept) {
        Choice::Page
    } else {
        Choice::NotConsole
    }
}

/// `path` is `prefix` or below it, segment-wise (`/apiary` is not under `/api`).
fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The `Accept` value lists `text/html` without refusing it (`q=0`).
fn accepts_html(accept: &str) -> bool {
    accept.split(',').any(|range| {
        let mut parts = range.split(';').map(str::trim);
        let media_type = parts.next().unwrap_or_default();
        media_type.eq_ignore_ascii_case("text/html") && !parts.any(refuses)
    })
}

/// A `q=0` parameter: the type is not acceptable.
fn refuses(parameter: &str) -> bool {
    parameter
        .split_once('=')
        .filter(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
        .and_then(|(_, value)| value.trim().parse::<f32>().ok())
        .is_some_and(|q| q == 0.0)
}

/// A weak ETag from the file's sha256: weak because the compression layer re-encodes the
/// body, and a strong tag would promise the same bytes in every encoding.
pub fn etag(sha256: [u8; 32]) -> String {
    format!("W/\"{}\"", hex::encode(sha256))
}

/// `If-None-Match` names `etag` (or is `*`), so the browser's copy is current. Compared
/// weakly, as RFC 9110 §13.1.2 requires.
pub fn not_modified(if_none_match: &str, etag: &str) -> bool {
    let opaque = |tag: &str| tag.trim().trim_start_matches("W/").to_string();
    if_none_match
        .split(',')
        .any(|tag| tag.trim() == "*" || opaque(tag) == opaque(etag))
}

/// Text is sent as UTF-8 (what the build writes), so the browser never guesses.
pub fn content_type(mime: &str) -> String {
    if mime.starts_with("text/") && !mime.contains("charset") {
        format!("{mime}; charset=utf-8")
    } else {
        mime.to_string()
    }
}

/// The headers of a console response: the security set, caching and, for a file, its ETag.
pub fn headers(caching: Caching, etag: Option<&str>) -> HeaderMap {
    let mut headers: HeaderMap = SECURITY_HEADERS
        .iter()
        .map(|(name, value)| (name.clone(), HeaderValue::from_static(value)))
        .collect();
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(caching.header()),
    );
    if let Some(etag) = etag.and_then(|etag| HeaderValue::from_str(etag).ok()) {
        headers.insert(header::ETAG, etag);
    }
    headers
}

/// The console's response to `request`, counted in `metrics`; `None` when the console does
/// not apply and the caller answers.
pub fn answer<B>(request: &Request<B>, metrics: &HttpMetrics) -> Option<Response> {
    let started = Instant::now();
    let request_headers = request.headers();
    let accept = joined(request_headers, header::ACCEPT);
    let if_none_match = joined(request_headers, header::IF_NONE_MATCH);
    let choice = choose(request.method(), request.uri().path(), &accept, |name| {
        Dist::get(name).is_some()
    });
    let response = match &choice {
        Choice::NotConsole => return None,
        Choice::Asset(file) => serve(
            &format!("assets/{file}"),
            Caching::Immutable,
            &if_none_match,
        ),
        Choice::RootFile(name) => serve(name, Caching::Revalidate, &if_none_match),
        Choice::Page => serve("index.html", Caching::Revalidate, &if_none_match),
    };
    metrics.observe(
        request.method().to_string(),
        choice.route().to_string(),
        response.status().as_u16(),
        started,
    );
    Some(response)
}

/// Every value of a header, comma-joined as HTTP allows; empty when absent.
fn joined(headers: &HeaderMap, name: HeaderName) -> String {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect::<Vec<_>>()
        .join(",")
}

/// One embedded file: 304 when the browser's copy is current, a plain 404 when the build
/// has no such file (never the page: a script tag must not receive HTML).
fn serve(path: &str, caching: Caching, if_none_match: &str) -> Response {
    let Some(file) = Dist::get(path) else {
        let mut headers = headers(Caching::Revalidate, None);
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        return (StatusCode::NOT_FOUND, headers, "not found\n").into_response();
    };
    let etag = etag(file.metadata.sha256_hash());
    let mut headers = headers(caching, Some(&etag));
    if not_modified(if_none_match, &etag) {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    if let Ok(value) = HeaderValue::from_str(&content_type(file.metadata.mimetype())) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    (headers, Body::from(file.data)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    const HTML: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

    fn choice(method: Method, path: &str, accept: &str) -> Choice {
        choose(&method, path, accept, |name| name == "favicon.svg")
    }

    #[test]
    fn a_browser_gets_the_page_for_the_root_and_every_deep_link() {
        for path in [
            "/",
            "/resources/abc/logs",
            "/projects",
            "/apiary",
            "/assets",
        ] {
            assert_eq!(choice(Method::GET, path, HTML), Choice::Page, "{path}");
        }
        assert_eq!(choice(Method::HEAD, "/", "text/html"), Choice::Page);
        assert_eq!(choice(Method::GET, "/", "TEXT/HTML; q=0.5"), Choice::Page);
    }

    #[test]
    fn api_and_operational_paths_and_non_browsers_keep_the_json_404() {
        for path in [
            "/api",
            "/api/no-such-thing",
            "/healthz",
            "/readyz/x",
            "/metrics",
        ] {
            assert_eq!(
                choice(Method::GET, path, HTML),
                Choice::NotConsole,
                "{path}"
            );
        }
        for accept in ["", "*/*", "application/json", "text/html;q=0"] {
            assert_eq!(
                choice(Method::GET, "/resources/x", accept),
                Choice::NotConsole,
                "{accept:?}"
            );
        }
        assert_eq!(choice(Method::POST, "/", HTML), Choice::NotConsole);
        assert_eq!(
            choice(Method::DELETE, "/assets/a.js", ""),
            Choice::NotConsole
        );
    }

    #[test]
    fn assets_and_root_files_are_served_whatever_the_accept() {
        assert_eq!(
            choice(Method::GET, "/assets/index-abc.js", "*/*"),
            Choice::Asset("index-abc.js".into())
        );
        assert_eq!(
            choice(Method::GET, "/favicon.svg", "image/*"),
            Choice::RootFile("favicon.svg".into())
        );
        // A root name the build lacks is a deep link for a browser, a 404 for others.
        assert_eq!(choice(Method::GET, "/robots.txt", HTML), Choice::Page);
        assert_eq!(
            choice(Method::GET, "/robots.txt", "*/*"),
            Choice::NotConsole
        );
        assert_eq!(
            choice(Method::GET, "/x/favicon.svg", "*/*"),
            Choice::NotConsole
        );
    }

    #[test]
    fn every_response_carries_the_security_headers_and_its_caching() {
        let immutable = headers(Caching::Immutable, Some("W/\"ab\""));
        assert_eq!(
            immutable[header::CACHE_CONTROL],
            "public, max-age=31536000, immutable"
        );
        assert_eq!(immutable[header::ETAG], "W/\"ab\"");
        let page = headers(Caching::Revalidate, None);
        assert_eq!(page[header::CACHE_CONTROL], "no-cache");
        assert!(page.get(header::ETAG).is_none());
        for headers in [immutable, page] {
            assert_eq!(
                headers[header::CONTENT_SECURITY_POLICY],
                CONTENT_SECURITY_POLICY
            );
            assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
            assert_eq!(headers[header::REFERRER_POLICY], "no-referrer");
            assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
        }
    }

    #[test]
    fn etags_match_weakly_and_text_is_utf8() {
        let tag = etag([0xab; 32]);
        assert_eq!(tag, format!("W/\"{}\"", "ab".repeat(32)));
        assert!(not_modified(&tag, &tag));
        assert!(not_modified(&format!("\"x\", {}", &tag[2..]), &tag));
        assert!(not_modified("*", &tag));
        assert!(!not_modified("", &tag));
        assert!(!not_modified("W/\"other\"", &tag));
        assert_eq!(
            content_type("text/javascript"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(content_type("image/svg+xml"), "image/svg+xml");
    }

    /// The console as `app` mounts it: the fallback, behind the compression layer.
    fn console(metrics: std::sync::Arc<HttpMetrics>) -> Router {
        Router::new()
            .fallback(move |request: axum::extract::Request| async move {
                answer(&request, &metrics)
                    .unwrap_or_else(|| StatusCode::IM_A_TEAPOT.into_response())
            })
            .layer(crate::routes::compression())
    }

    async fn get(router: &Router, path: &str, headers: &[(&str, &str)]) -> Response {
        let mut request = Request::get(path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        router
            .clone()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap()
    }

    async fn body(response: Response) -> Vec<u8> {
        response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec()
    }

    #[tokio::test]
    async fn the_embedded_build_is_served_compressed_and_revalidated() {
        let metrics = std::sync::Arc::new(HttpMetrics::default());
        let router = console(metrics.clone());

        let page = get(&router, "/resources/x/logs", &[("accept", HTML)]).await;
        assert_eq!(page.status(), 200);
        assert_eq!(
            page.headers()[header::CONTENT_TYPE],
            "text/html; charset=utf-8"
        );
        assert_eq!(page.headers()[header::CACHE_CONTROL], "no-cache");
        let html = String::from_utf8(body(page).await).unwrap();
        assert_eq!(html.as_bytes(), &Dist::get("index.html").unwrap().data[..]);

        // The script the page loads, however the build named it.
        let script = html
            .split("src=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .filter(|src| src.starts_with("/assets/") && src.ends_with(".js"))
            .expect("index.html loads a script from /assets/");
        let js = get(&router, script, &[("accept-encoding", "gzip")]).await;
        assert_eq!(js.status(), 200);
        assert_eq!(js.headers()[header::CONTENT_ENCODING], "gzip");
        assert!(
            js.headers()[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/javascript")
        );
        assert_eq!(
            js.headers()[header::CACHE_CONTROL],
            "public, max-age=31536000, immutable"
        );
        let tag = js.headers()[header::ETAG].to_str().unwrap().to_string();
        let again = get(&router, script, &[("if-none-match", &tag)]).await;
        assert_eq!(again.status(), 304);
        assert_eq!(again.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert!(body(again).await.is_empty());

        let missing = get(&router, "/assets/missing.js", &[("accept", HTML)]).await;
        assert_eq!(missing.status(), 404);
        assert_eq!(missing.headers()[header::X_FRAME_OPTIONS], "DENY");
        let favicon = get(&router, "/favicon.svg", &[]).await;
        assert_eq!(favicon.status(), 200);
        assert_eq!(favicon.headers()[header::CONTENT_TYPE], "image/svg+xml");
        let api = get(&router, "/api/no-such-thing", &[("accept", HTML)]).await;
        assert_eq!(api.status(), StatusCode::IM_A_TEAPOT);

        let counted = metrics.encode();
        for route in [
            r#"method="GET",route="/{*page}",status="200""#,
            r#"method="GET",route="/assets/{file}",status="304""#,
            r#"method="GET",route="/assets/{file}",status="404""#,
        ] {
            assert!(counted.contains(route), "{route} in {counted}");
        }
        assert!(!counted.contains("/resources/x/logs"));
    }
}

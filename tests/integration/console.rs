//! The web console as a browser meets it, served by the shim itself at the origin: the page
//! for the root and every deep link, locked down by its security headers; the scripts it loads,
//! cached for good, compressed and revalidated; and the API's JSON 404 left as it was.

use std::io::Read as _;
use std::time::Duration;

use berth_tests::rest::{Reply, base_url};
use reqwest::header::HeaderMap;

/// What a browser sends when it navigates.
const NAVIGATE: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

fn origin() -> String {
    base_url().trim_end_matches("/api").to_string()
}

/// GET `path` at the origin with `headers`: (status, headers, body).
async fn get(path: &str, headers: &[(&str, &str)]) -> (u16, HeaderMap, Vec<u8>) {
    // reqwest is built without decompression here: the body arrives as the shim encoded it.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let mut request = http.get(format!("{}{path}", origin()));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("the shim answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.bytes().await.unwrap().to_vec())
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
}

#[track_caller]
fn assert_locked_down(headers: &HeaderMap) {
    let policy = header(headers, "content-security-policy");
    for directive in [
        "default-src 'self'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ] {
        assert!(policy.contains(directive), "{directive} in {policy:?}");
    }
    assert_eq!(header(headers, "x-content-type-options"), "nosniff");
    assert_eq!(header(headers, "referrer-policy"), "no-referrer");
    assert_eq!(header(headers, "x-frame-options"), "DENY");
}

/// The page: its HTML, asserting what every page answer has.
async fn page(path: &str) -> String {
    let (status, headers, body) = get(path, &[("accept", NAVIGATE)]).await;
    assert_eq!(status, 200, "{path}");
    assert!(
        header(&headers, "content-type").starts_with("text/html"),
        "{path}: {headers:?}"
    );
    assert_eq!(header(&headers, "cache-control"), "no-cache", "{path}");
    assert_locked_down(&headers);
    let html = String::from_utf8(body).expect("UTF-8 HTML");
    assert!(html.contains(r#"<div id="app">"#), "{path}: {html}");
    html
}

/// The `src="/assets/….js"` of the page's script.
fn script_of(html: &str) -> String {
    html.split("src=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .find(|src| src.starts_with("/assets/") && src.ends_with(".js"))
        .unwrap_or_else(|| panic!("no /assets/*.js script in {html}"))
        .to_string()
}

#[tokio::test]
async fn a_browser_gets_the_console_at_the_root_and_at_deep_links() {
    let root = page("/").await;
    assert!(root.contains("<title>"), "{root}");
    // A reload of a page the app navigated to gets the same document, not a 404.
    assert_eq!(page("/resources/x/logs").await, root);
}

#[tokio::test]
async fn the_console_script_is_cached_for_good_compressed_and_revalidated() {
    let script = script_of(&page("/").await);

    let (status, headers, plain) = get(&script, &[]).await;
    assert_eq!(status, 200, "{script}");
    assert!(
        header(&headers, "content-type").starts_with("text/javascript"),
        "{headers:?}"
    );
    assert_eq!(
        header(&headers, "cache-control"),
        "public, max-age=31536000, immutable"
    );
    assert_locked_down(&headers);
    let etag = header(&headers, "etag").to_string();
    assert!(!etag.is_empty(), "no ETag: {headers:?}");

    let (status, headers, gzipped) = get(&script, &[("accept-encoding", "gzip")]).await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-encoding"), "gzip");
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(&gzipped[..])
        .read_to_end(&mut unzipped)
        .expect("valid gzip");
    assert_eq!(unzipped, plain);
    assert!(gzipped.len() < plain.len());

    let (status, headers, body) = get(&script, &[("if-none-match", &etag)]).await;
    assert_eq!(status, 304, "{headers:?}");
    assert!(body.is_empty());
    assert_eq!(header(&headers, "etag"), etag);
}

#[tokio::test]
async fn unknown_api_paths_keep_the_json_envelope_and_missing_assets_are_404() {
    // Even a browser asking for HTML: the API's paths are never the console's.
    let (status, headers, body) = get("/api/no-such-thing", &[("accept", NAVIGATE)]).await;
    assert!(
        header(&headers, "content-type").starts_with("application/json"),
        "{headers:?}"
    );
    let body = serde_json::from_slice(&body).expect("a JSON body");
    Reply { status, body }.error(404, "not_found");

    // A script tag must never receive the page in place of a missing script.
    let (status, headers, body) = get("/assets/missing.js", &[("accept", NAVIGATE)]).await;
    assert_eq!(status, 404);
    assert!(!String::from_utf8_lossy(&body).contains("<html"));
    assert_locked_down(&headers);
}

//! The one HTTP client of the CLI: the REST API's base URL, the bearer token, JSON in and out,
//! and the API's error envelope turned into a [`CliError`].

use std::io::BufReader;
use std::net::TcpStream;
use std::time::Duration;

use berth_api::error::ErrorEnvelope;
use reqwest::Method;
use reqwest::blocking::{Client, RequestBuilder, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{CliError, CliResult};
use crate::sse::Events;

/// Ordinary calls answer quickly; event streams run as long as a deployment does.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Api {
    http: Client,
    base: String,
    token: Option<String>,
}

pub type Query<'a> = &'a [(&'a str, String)];

/// A WebSocket (the terminal's), plain or TLS as the API URL is.
pub type Socket = tungstenite::WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>;

/// One answer of the API, read as its berth-api type `T` (the type the shim serializes), and
/// kept as it came: `-o json|yaml` prints `raw` unchanged, and tables may take columns from it
/// by JSON pointer.
#[derive(Debug)]
pub struct Answer<T> {
    pub raw: Value,
    pub value: T,
}

impl<T: DeserializeOwned> Answer<T> {
    /// Reads `raw`, the answer of `path`, as `T`; an answer that is not a `T` is a failure
    /// naming the path (the CLI and the API disagree on the wire).
    pub fn read(path: &str, raw: Value) -> CliResult<Self> {
        let value = T::deserialize(&raw)
            .map_err(|error| CliError::failure(format!("{path}: unexpected answer: {error}")))?;
        Ok(Self { raw, value })
    }
}

impl Api {
    pub fn new(base: &str, token: Option<String>) -> CliResult<Self> {
        let http = Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            // Per request instead (see `send`): a stream has no overall deadline.
            .timeout(None)
            .user_agent(concat!("berth-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| CliError::failure(format!("HTTP client: {error}")))?;
        Ok(Self {
            http,
            base: base.trim_end_matches('/').to_string(),
            token,
        })
    }

    /// GET `path`, its answer read as `T`, the type the shim's handler answers with.
    pub fn get<T: DeserializeOwned>(&self, path: &str, query: Query) -> CliResult<Answer<T>> {
        let raw = self.json(Method::GET, path, query, None::<&()>)?;
        Answer::read(path, raw)
    }

    /// POST a request body, one of `berth-api`'s types (the shim's own definitions); the
    /// answer read as `T`.
    pub fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> CliResult<Answer<T>> {
        let raw = self.json(Method::POST, path, &[], Some(body))?;
        Answer::read(path, raw)
    }

    /// DELETE with a body (the API's confirmation); the answer read as `T`.
    pub fn delete<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> CliResult<Answer<T>> {
        let raw = self.json(Method::DELETE, path, &[], Some(body))?;
        Answer::read(path, raw)
    }

    /// Opens an event stream and yields each event's `data` as it arrives.
    pub fn stream(
        &self,
        method: Method,
        path: &str,
        query: Query,
        body: Option<&impl Serialize>,
    ) -> CliResult<Events<BufReader<Response>>> {
        let request = self
            .request(method, path, query, body)
            .header("Accept", "text/event-stream");
        let response = self.send(request, path)?;
        Ok(Events::new(BufReader::new(response)))
    }

    /// Opens the WebSocket at `path` (absolute, as the API returns it) on the API's host, with
    /// the bearer token; a read waits at most `poll` so the caller can do other work.
    pub fn websocket(&self, path: &str, poll: Duration) -> CliResult<Socket> {
        use tungstenite::client::IntoClientRequest;
        let (scheme, rest) = self.base.split_once("://").unwrap_or(("http", &self.base));
        let authority = rest.split('/').next().unwrap_or(rest);
        let scheme = if scheme == "https" { "wss" } else { "ws" };
        let url = format!("{scheme}://{authority}{path}");
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|error| CliError::failure(format!("{url}: {error}")))?;
        if let Some(token) = &self.token {
            let value = format!("Bearer {token}")
                .parse()
                .map_err(|_| CliError::Auth("the token is not a valid header value".into()))?;
            request.headers_mut().insert("Authorization", value);
        }
        let (socket, _) = tungstenite::connect(request).map_err(|error| match error {
            tungstenite::Error::Http(response) => {
                let body = response.body().as_deref().unwrap_or_default();
                api_error(response.status().as_u16(), &String::from_utf8_lossy(body))
            }
            other => CliError::failure(format!("cannot open {url}: {other}")),
        })?;
        let stream = match socket.get_ref() {
            tungstenite::stream::MaybeTlsStream::Plain(stream) => stream,
            tungstenite::stream::MaybeTlsStream::Rustls(stream) => stream.get_ref(),
            _ => return Err(CliError::failure("unsupported WebSocket transport")),
        };
        stream.set_read_timeout(Some(poll))?;
        Ok(socket)
    }

    fn json(
        &self,
        method: Method,
        path: &str,
        query: Query,
        body: Option<&impl Serialize>,
    ) -> CliResult<Value> {
        let request = self
            .request(method, path, query, body)
            .timeout(REQUEST_TIMEOUT);
        self.answer(request, path)
    }

    /// POSTs a file's bytes, streamed (never whole in memory), its options in the query. No
    /// overall deadline: an upload lasts as long as its size needs.
    pub fn upload<T: DeserializeOwned>(
        &self,
        path: &str,
        query: Query,
        file: std::fs::File,
        bytes: u64,
    ) -> CliResult<Answer<T>> {
        let request = self
            .request(Method::POST, path, query, None::<&()>)
            .header("Content-Type", "application/octet-stream")
            .body(reqwest::blocking::Body::sized(file, bytes));
        Answer::read(path, self.answer(request, path)?)
    }

    /// Sends `request` and reads its JSON answer (`null` when empty).
    fn answer(&self, request: RequestBuilder, path: &str) -> CliResult<Value> {
        let text = self
            .send(request, path)?
            .text()
            .map_err(|error| self.transport(path, error))?;
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text)
            .map_err(|error| CliError::failure(format!("{path}: the answer is not JSON: {error}")))
    }

    fn request(
        &self,
        method: Method,
        path: &str,
        query: Query,
        body: Option<&impl Serialize>,
    ) -> RequestBuilder {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if !query.is_empty() {
            request = request.query(query);
        }
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        request
    }

    /// Sends the request; a non-2xx answer becomes the API's error.
    fn send(&self, request: RequestBuilder, path: &str) -> CliResult<Response> {
        let response = request
            .send()
            .map_err(|error| self.transport(path, error))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let text = response.text().unwrap_or_default();
        Err(api_error(status.as_u16(), &text))
    }

    fn transport(&self, path: &str, error: reqwest::Error) -> CliError {
        CliError::failure(format!(
            "cannot reach {}{path}: {error} (is BERTH_URL right?)",
            self.base
        ))
    }
}

/// The error envelope `{"error":{"code","message",…}}`; any other body keeps its first line.
pub fn api_error(status: u16, body: &str) -> CliError {
    match serde_json::from_str::<ErrorEnvelope>(body) {
        Ok(ErrorEnvelope { error }) => CliError::Api {
            status,
            code: error.code.into_owned(),
            message: error.message,
        },
        Err(_) => CliError::Api {
            status,
            code: format!("http_{status}"),
            message: body
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_keeps_what_came_and_reads_it_as_its_type() {
        use berth_api::common::CountResponse;
        let raw = serde_json::json!({"count": 3, "extra": ["kept"]});
        let answer = Answer::<CountResponse>::read("/projects/count", raw.clone()).unwrap();
        assert_eq!(answer.value.count, 3);
        assert_eq!(answer.raw, raw);
    }

    #[test]
    fn an_empty_answer_reads_as_nothing() {
        // `answer` turns an empty body into `null`: what a `Json<()>` handler answers.
        let answer = Answer::<()>::read("/resources/res-1/variables", Value::Null).unwrap();
        assert_eq!(answer.raw, Value::Null);
    }

    #[test]
    fn an_answer_of_another_shape_is_an_unexpected_answer() {
        use berth_api::common::CountResponse;
        let raw = serde_json::json!({"count": "three"});
        let error = Answer::<CountResponse>::read("/projects/count", raw).unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with("/projects/count: unexpected answer: "),
            "{text}"
        );
        assert_eq!(error.exit_code(), 1);
    }

    #[test]
    fn the_envelope_gives_code_and_message() {
        let body = r#"{"error":{"code":"not_found","category":"user","message":"no project prj-x","retriable":false,"details":{}}}"#;
        match api_error(404, body) {
            CliError::Api {
                status,
                code,
                message,
            } => {
                assert_eq!((status, code.as_str()), (404, "not_found"));
                assert_eq!(message, "no project prj-x");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_body_that_is_not_the_envelope_is_kept_short() {
        let error = api_error(502, "Bad Gateway\n<html>…");
        assert_eq!(error.to_string(), "http_502: Bad Gateway (HTTP 502)");
        assert_eq!(error.exit_code(), 1);
    }
}

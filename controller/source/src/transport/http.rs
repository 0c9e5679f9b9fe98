//! git's smart HTTP transport on reqwest (the TLS stack Berth uses everywhere), driven from the
//! blocking fetch through the runtime's handle. A POST is sent when gix first reads its answer,
//! after it has written the whole request (the negotiation is small); answers stream.

use std::io::{self, BufRead, Cursor, Read, Write};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use gix::protocol::transport::client::blocking_io::http::{
    GetResponse, Http, PostBodyDataKind, PostResponse,
};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::runtime::Handle;

use crate::error::SourceError;

type GixResult<T> = Result<T, gix::error::Error>;

/// The HTTP client of one fetch.
pub struct Client {
    client: reqwest::Client,
    runtime: Handle,
}

impl Client {
    pub fn new(runtime: Handle) -> Result<Self, SourceError> {
        let client = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(10))
            .user_agent(concat!("berth/", env!("CARGO_PKG_VERSION"), " (gix)"))
            .build()
            .map_err(|error| SourceError::Local(format!("building the HTTP client: {error}")))?;
        Ok(Self { client, runtime })
    }
}

fn header_map(headers: impl IntoIterator<Item = impl AsRef<str>>) -> HeaderMap {
    let mut map = HeaderMap::new();
    for line in headers {
        let Some((name, value)) = line.as_ref().split_once(':') else {
            continue;
        };
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_str(value.trim()),
        ) {
            map.append(name, value);
        }
    }
    map
}

/// A request's answer: its headers as the lines gix reads, and its body.
struct Answer {
    headers: Cursor<Vec<u8>>,
    body: Body,
}

/// Sends a request and checks its status; 401 is `PermissionDenied`, as gix expects.
fn send(runtime: &Handle, request: reqwest::RequestBuilder, url: &str) -> io::Result<Answer> {
    let response = runtime
        .block_on(request.send())
        .map_err(|error| io::Error::new(io::ErrorKind::ConnectionAborted, error))?;
    let status = response.status();
    if !status.is_success() {
        let kind = match status.as_u16() {
            401 | 403 => io::ErrorKind::PermissionDenied,
            _ => io::ErrorKind::Other,
        };
        return Err(io::Error::new(
            kind,
            format!("{url} answered HTTP {status}"),
        ));
    }
    let mut headers = Vec::new();
    for (name, value) in response.headers() {
        headers.extend_from_slice(name.as_str().as_bytes());
        headers.extend_from_slice(b": ");
        headers.extend_from_slice(value.as_bytes());
        headers.extend_from_slice(b"\r\n");
    }
    Ok(Answer {
        headers: Cursor::new(headers),
        body: Body {
            response: Some(response),
            chunk: Bytes::new(),
            runtime: runtime.clone(),
        },
    })
}

impl Http for Client {
    type Headers = Lazy<Cursor<Vec<u8>>>;
    type ResponseBody = Lazy<Body>;
    type PostBody = PostBuffer;

    fn get(
        &mut self,
        url: &str,
        _base_url: &str,
        headers: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> GixResult<GetResponse<Self::Headers, Self::ResponseBody>> {
        let request = self.client.get(url).headers(header_map(headers));
        let answer = send(&self.runtime, request, url).map_err(gix::error::Error::from_error)?;
        let shared = Arc::new(Mutex::new(Exchange::Answered(Some(answer))));
        Ok(GetResponse {
            headers: Lazy::headers(shared.clone()),
            body: Lazy::body(shared),
        })
    }

    fn post(
        &mut self,
        url: &str,
        _base_url: &str,
        headers: impl IntoIterator<Item = impl AsRef<str>>,
        _body: PostBodyDataKind,
    ) -> GixResult<PostResponse<Self::Headers, Self::ResponseBody, Self::PostBody>> {
        let written = Arc::new(Mutex::new(Vec::new()));
        let pending = Pending {
            request: self.client.post(url).headers(header_map(headers)),
            url: url.to_string(),
            body: written.clone(),
            runtime: self.runtime.clone(),
        };
        let shared = Arc::new(Mutex::new(Exchange::Pending(Some(pending))));
        Ok(PostResponse {
            post_body: PostBuffer(written),
            headers: Lazy::headers(shared.clone()),
            body: Lazy::body(shared),
        })
    }

    fn configure(&mut self, _config: &dyn std::any::Any) -> GixResult<()> {
        Ok(())
    }
}

/// A POST not sent yet: its body is still being written.
struct Pending {
    request: reqwest::RequestBuilder,
    url: String,
    body: Arc<Mutex<Vec<u8>>>,
    runtime: Handle,
}

/// A request's state, shared by its headers and body readers.
enum Exchange {
    Pending(Option<Pending>),
    /// The answer, until the headers reader takes its part and the body reader the rest.
    Answered(Option<Answer>),
    Failed(io::ErrorKind, String),
}

impl Exchange {
    /// Sends a pending request; afterwards the exchange is answered or failed.
    fn settle(&mut self) {
        let Self::Pending(pending) = self else {
            return;
        };
        let Some(pending) = pending.take() else {
            return;
        };
        let body = std::mem::take(&mut *pending.body.lock().unwrap_or_else(|e| e.into_inner()));
        *self = match send(&pending.runtime, pending.request.body(body), &pending.url) {
            Ok(answer) => Self::Answered(Some(answer)),
            Err(error) => Self::Failed(error.kind(), error.to_string()),
        };
    }
}

/// The body gix writes for a POST.
pub struct PostBuffer(Arc<Mutex<Vec<u8>>>);

impl Write for PostBuffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut body = self.0.lock().unwrap_or_else(|e| e.into_inner());
        body.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The headers or the body of an answer, sending the request on the first read.
pub struct Lazy<R> {
    shared: Arc<Mutex<Exchange>>,
    take: fn(&mut Answer) -> R,
    reader: Option<R>,
}

impl Lazy<Cursor<Vec<u8>>> {
    fn headers(shared: Arc<Mutex<Exchange>>) -> Self {
        Self {
            shared,
            take: |answer| std::mem::take(&mut answer.headers),
            reader: None,
        }
    }
}

impl Lazy<Body> {
    fn body(shared: Arc<Mutex<Exchange>>) -> Self {
        Self {
            shared,
            take: |answer| {
                let empty = Body::empty(&answer.body);
                std::mem::replace(&mut answer.body, empty)
            },
            reader: None,
        }
    }
}

impl<R: BufRead> Lazy<R> {
    fn reader(&mut self) -> io::Result<&mut R> {
        if self.reader.is_none() {
            let mut exchange = self.shared.lock().unwrap_or_else(|e| e.into_inner());
            exchange.settle();
            let reader = match &mut *exchange {
                Exchange::Answered(Some(answer)) => (self.take)(answer),
                Exchange::Failed(kind, message) => {
                    return Err(io::Error::new(*kind, message.clone()));
                }
                _ => return Err(io::Error::other("the HTTP answer was already read")),
            };
            self.reader = Some(reader);
        }
        Ok(self.reader.as_mut().expect("set above"))
    }
}

impl<R: BufRead> Read for Lazy<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reader()?.read(buf)
    }
}

impl<R: BufRead> BufRead for Lazy<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.reader()?.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        if let Some(reader) = self.reader.as_mut() {
            reader.consume(amount);
        }
    }
}

/// A response body read chunk by chunk as it arrives.
pub struct Body {
    response: Option<reqwest::Response>,
    chunk: Bytes,
    runtime: Handle,
}

impl Body {
    fn empty(like: &Body) -> Self {
        Self {
            response: None,
            chunk: Bytes::new(),
            runtime: like.runtime.clone(),
        }
    }
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Body {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.chunk.is_empty() {
            let Some(response) = self.response.as_mut() else {
                return Ok(&[]);
            };
            match self.runtime.block_on(response.chunk()) {
                Ok(Some(chunk)) => self.chunk = chunk,
                Ok(None) => self.response = None,
                Err(error) => return Err(io::Error::new(io::ErrorKind::ConnectionAborted, error)),
            }
        }
        Ok(&self.chunk)
    }

    fn consume(&mut self, amount: usize) {
        let _ = self.chunk.split_to(amount.min(self.chunk.len()));
    }
}

//! A bucket of an S3-compatible store as a backup target: requests presigned by rusty-s3 (no
//! I/O of its own) and sent with reqwest. An artifact goes up in parts (multipart upload) so it
//! is never whole in memory and appears under its key only once the last part is in; it comes
//! back as a stream. A request the store did not answer or answered busy is tried again a few
//! times; every failure is one line naming what the store said (its error code and message),
//! never a URL (a presigned one carries the access key id) nor a key.

use std::time::Duration;

use berth_crds::backup::{ACCESS_KEY_ID_FIELD, S3Target, SECRET_ACCESS_KEY_FIELD};
use bytes::Bytes;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use reqwest::{Method, Response, StatusCode};
use rusty_s3::actions::CreateMultipartUpload;
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};

use crate::error::Result;

/// How long a presigned request stays valid: enough for one part on a slow link.
const SIGNED_FOR: Duration = Duration::from_secs(30 * 60);
/// The size of each uploaded part but the last (S3 needs at least 5 MiB; 10,000 parts of this
/// size allow an artifact of about 80 GiB).
pub const PART_BYTES: usize = 8 * 1024 * 1024;
/// How long a request may wait for the store to answer or send more.
const READ_TIMEOUT: Duration = Duration::from_secs(120);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The waits before each new try of a request the store did not answer or answered busy.
const RETRY_AFTER: [Duration; 3] = [
    Duration::from_secs(1),
    Duration::from_secs(3),
    Duration::from_secs(9),
];

/// An opened bucket: where, and with which keys.
pub struct BucketStore {
    http: reqwest::Client,
    bucket: Bucket,
    credentials: Credentials,
}

/// What went wrong at the store, for people.
pub type Refused = String;

impl BucketStore {
    /// Opens `target`'s bucket (`bucket` overrides its name, for an artifact recorded in
    /// another) with the keys of its credentials Secret; why not, when it cannot be.
    pub async fn open(
        client: &kube::Client,
        namespace: &str,
        target: &S3Target,
        bucket: Option<&str>,
    ) -> Result<std::result::Result<Self, Refused>> {
        let secret_name = &target.credentials_secret_ref.name;
        let secrets = Api::<Secret>::namespaced(client.clone(), namespace);
        let Some(secret) = secrets.get_opt(secret_name).await? else {
            return Ok(Err(format!(
                "the credentials Secret {secret_name} does not exist"
            )));
        };
        let field = |name: &str| {
            let value = secret.data.as_ref().and_then(|d| d.get(name));
            let text = value.and_then(|v| String::from_utf8(v.0.clone()).ok());
            text.map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .ok_or_else(|| format!("the credentials Secret {secret_name} has no {name}"))
        };
        let credentials = match (field(ACCESS_KEY_ID_FIELD), field(SECRET_ACCESS_KEY_FIELD)) {
            (Ok(key), Ok(secret)) => Credentials::new(key, secret),
            (Err(why), _) | (_, Err(why)) => return Ok(Err(why)),
        };
        Ok(Self::with(target, bucket, credentials))
    }

    fn with(
        target: &S3Target,
        bucket: Option<&str>,
        credentials: Credentials,
    ) -> std::result::Result<Self, Refused> {
        let spec = &target.bucket;
        let endpoint = url::Url::parse(&spec.endpoint)
            .map_err(|e| format!("the endpoint {} is not a URL: {e}", spec.endpoint))?;
        let style = if spec.path_style {
            UrlStyle::Path
        } else {
            UrlStyle::VirtualHost
        };
        let name = bucket.unwrap_or(&spec.bucket).to_string();
        let bucket = Bucket::new(endpoint, style, name, spec.region.clone())
            .map_err(|e| format!("the bucket cannot be addressed so: {e}"))?;
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .build()
            .map_err(|e| format!("an HTTP client for the store: {e}"))?;
        Ok(Self {
            http,
            bucket,
            credentials,
        })
    }

    pub fn bucket_name(&self) -> &str {
        self.bucket.name()
    }

    /// Sends a signed request; the answer when it is a success, else what the store said. A
    /// request the store did not answer, or answered busy or failing (429, 5xx), is sent again
    /// after [`RETRY_AFTER`] (the body is kept for it); a refusal (4xx) is not.
    async fn send(
        &self,
        method: Method,
        url: url::Url,
        body: Option<Bytes>,
        what: &str,
    ) -> std::result::Result<Response, Refused> {
        let mut waits = RETRY_AFTER.iter();
        loop {
            let mut request = self.http.request(method.clone(), url.clone());
            if let Some(body) = &body {
                request = request.body(body.clone());
            }
            let (retryable, refused) = match request.send().await {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => (
                    worth_retrying(response.status()),
                    refusal(what, response).await,
                ),
                Err(e) => (
                    true,
                    format!("{what}: the store did not answer: {}", e.without_url()),
                ),
            };
            match waits.next() {
                Some(wait) if retryable => tokio::time::sleep(*wait).await,
                _ => return Err(refused),
            }
        }
    }

    /// Writes and removes a small object under `key`: the bucket exists and takes artifacts.
    pub async fn probe(&self, key: &str) -> std::result::Result<(), Refused> {
        let put = self.bucket.put_object(Some(&self.credentials), key);
        let body = Some(Bytes::from_static(b"berth backup target probe"));
        self.send(Method::PUT, put.sign(SIGNED_FOR), body, "writing a probe")
            .await?;
        self.remove(key).await
    }

    /// Starts an upload of `key`.
    pub async fn upload(&self, key: &str) -> std::result::Result<PartUpload<'_>, Refused> {
        let create = self
            .bucket
            .create_multipart_upload(Some(&self.credentials), key);
        let what = "starting the upload";
        let answer = self
            .send(Method::POST, create.sign(SIGNED_FOR), None, what)
            .await?;
        let text = answer
            .text()
            .await
            .map_err(|e| format!("{what}: {}", e.without_url()))?;
        let created = CreateMultipartUpload::parse_response(&text)
            .map_err(|e| format!("{what}: the store's answer could not be read: {e}"))?;
        Ok(PartUpload {
            store: self,
            key: key.to_string(),
            upload_id: created.upload_id().to_string(),
            etags: Vec::new(),
            buffer: Vec::with_capacity(PART_BYTES),
        })
    }

    /// The object under `key`, as a stream.
    pub async fn download(&self, key: &str) -> std::result::Result<Response, Refused> {
        let get = self.bucket.get_object(Some(&self.credentials), key);
        self.send(
            Method::GET,
            get.sign(SIGNED_FOR),
            None,
            "reading the artifact",
        )
        .await
    }

    /// Removes the object under `key` (gone already is fine).
    pub async fn remove(&self, key: &str) -> std::result::Result<(), Refused> {
        let delete = self.bucket.delete_object(Some(&self.credentials), key);
        match self
            .send(Method::DELETE, delete.sign(SIGNED_FOR), None, "removing it")
            .await
        {
            Err(why) if why.contains("NoSuchKey") => Ok(()),
            done => done.map(|_| ()),
        }
    }
}

/// One artifact on its way up. Dropped without [`PartUpload::finish`], it leaves parts the
/// store keeps until aborted: call [`PartUpload::abort`] on every failure.
pub struct PartUpload<'a> {
    store: &'a BucketStore,
    key: String,
    upload_id: String,
    etags: Vec<String>,
    buffer: Vec<u8>,
}

impl PartUpload<'_> {
    /// Takes `data`; sends a part whenever a whole one is held.
    pub async fn write(&mut self, data: &[u8]) -> std::result::Result<(), Refused> {
        self.buffer.extend_from_slice(data);
        while self.buffer.len() >= PART_BYTES {
            let rest = self.buffer.split_off(PART_BYTES);
            let part = std::mem::replace(&mut self.buffer, rest);
            self.send_part(part).await?;
        }
        Ok(())
    }

    async fn send_part(&mut self, part: Vec<u8>) -> std::result::Result<(), Refused> {
        let number = u16::try_from(self.etags.len() + 1)
            .ok()
            .filter(|n| *n <= 10_000)
            .ok_or_else(|| "the artifact needs more than 10,000 parts".to_string())?;
        let store = self.store;
        let upload =
            store
                .bucket
                .upload_part(Some(&store.credentials), &self.key, number, &self.upload_id);
        let what = format!("sending part {number}");
        let answer = store
            .send(
                Method::PUT,
                upload.sign(SIGNED_FOR),
                Some(Bytes::from(part)),
                &what,
            )
            .await?;
        let etag = answer
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| format!("{what}: the store gave no ETag"))?;
        self.etags.push(etag.to_string());
        Ok(())
    }

    /// Sends what is left and names the object whole.
    pub async fn finish(mut self) -> std::result::Result<(), Refused> {
        if !self.buffer.is_empty() || self.etags.is_empty() {
            let last = std::mem::take(&mut self.buffer);
            self.send_part(last).await?;
        }
        let store = self.store;
        let etags = self.etags.iter().map(String::as_str);
        let complete = store.bucket.complete_multipart_upload(
            Some(&store.credentials),
            &self.key,
            &self.upload_id,
            etags,
        );
        let url = complete.sign(SIGNED_FOR);
        let body = Some(Bytes::from(complete.body()));
        let answer = store
            .send(Method::POST, url, body, "completing the upload")
            .await?;
        // A store may answer 200 and put its error in the body when completing.
        let text = answer.text().await.unwrap_or_default();
        match error_in(&text) {
            Some(said) => Err(format!("completing the upload: {said}")),
            None => Ok(()),
        }
    }

    /// Drops the parts sent (best effort).
    pub async fn abort(self) {
        let store = self.store;
        let abort = store.bucket.abort_multipart_upload(
            Some(&store.credentials),
            &self.key,
            &self.upload_id,
        );
        let url = abort.sign(SIGNED_FOR);
        let _ = store.send(Method::DELETE, url, None, "aborting").await;
    }
}

/// The next bytes of a download: `None` at its end.
pub async fn next_chunk(response: &mut Response) -> std::result::Result<Option<Bytes>, Refused> {
    response
        .chunk()
        .await
        .map_err(|e| format!("reading the artifact: {}", e.without_url()))
}

/// What a refused request's answer says, in one line.
async fn refusal(what: &str, response: Response) -> Refused {
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    let said = error_in(&body).unwrap_or_else(|| reason(status));
    format!("{what}: the store answered {}: {said}", status.as_u16())
}

/// Whether a store's answer may differ a moment later: busy (429) or failing (5xx).
fn worth_retrying(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

fn reason(status: StatusCode) -> String {
    status
        .canonical_reason()
        .unwrap_or("no reason given")
        .to_string()
}

/// `Code: Message` of an S3 error document, when `body` is one.
fn error_in(body: &str) -> Option<String> {
    let field = |tag: &str| {
        let open = format!("<{tag}>");
        let start = body.find(&open)? + open.len();
        let end = body[start..].find(&format!("</{tag}>"))? + start;
        Some(
            body[start..end]
                .trim()
                .chars()
                .take(300)
                .collect::<String>(),
        )
    };
    if !body.contains("<Error>") {
        return None;
    }
    let code = field("Code")?;
    Some(match field("Message") {
        Some(message) if !message.is_empty() => format!("{code}: {message}"),
        _ => code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_busy_or_failing_store_is_asked_again() {
        assert!(worth_retrying(StatusCode::SERVICE_UNAVAILABLE));
        assert!(worth_retrying(StatusCode::INTERNAL_SERVER_ERROR));
        assert!(worth_retrying(StatusCode::TOO_MANY_REQUESTS));
        assert!(!worth_retrying(StatusCode::FORBIDDEN));
        assert!(!worth_retrying(StatusCode::NOT_FOUND));
    }

    #[test]
    fn an_error_document_becomes_its_code_and_message() {
        let body = r#"<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>InvalidAccessKeyId</Code><Message>No such key: GKbad</Message><Resource>/b/k</Resource></Error>"#;
        assert_eq!(
            error_in(body).as_deref(),
            Some("InvalidAccessKeyId: No such key: GKbad")
        );
        assert_eq!(error_in("<CompleteMultipartUploadResult/>"), None);
        assert_eq!(error_in(""), None);
    }
}

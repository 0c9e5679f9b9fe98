//! A dump uploaded from outside Berth on its way to its database's server: the request body
//! checked to be a PostgreSQL custom-format archive before anything is sent, then streamed
//! over SSH into `cat` under a `.partial` name, counted and hashed on the way, and renamed
//! whole once complete (the controller reads only whole files). Never whole in memory; a cut
//! upload leaves nothing behind.

use axum::body::{Body, BodyDataStream, Bytes};
use berth_crds::backup::PG_CUSTOM_DUMP_MAGIC;
use berth_remote::tally::Tally;
use berth_remote::{ServerConnection, shell_quote};
use futures::StreamExt;
use russh::ChannelMsg;

use crate::error::ApiError;
use crate::services::server_access::remote_error;

const ACTION: &str = "store the uploaded dump on the database's server";

/// An upload stored whole on the server.
pub struct Staged {
    pub bytes: i64,
    pub sha256: String,
}

/// The body whose first bytes are a custom-format archive's, or a 422 naming the body.
pub struct CheckedBody {
    head: Bytes,
    rest: BodyDataStream,
}

/// Reads the start of `body` and refuses anything but a `pg_dump -Fc` archive.
pub async fn check(body: Body) -> Result<CheckedBody, ApiError> {
    let mut rest = body.into_data_stream();
    let mut head = Vec::new();
    while head.len() < PG_CUSTOM_DUMP_MAGIC.len() {
        match rest.next().await {
            Some(chunk) => head.extend_from_slice(&chunk.map_err(cut_off)?),
            None => break,
        }
    }
    if !head.starts_with(PG_CUSTOM_DUMP_MAGIC) {
        return Err(ApiError::validation(
            "body",
            "the body must be a PostgreSQL custom-format archive, as `pg_dump -Fc` writes it \
             (it starts with PGDMP)",
        ));
    }
    Ok(CheckedBody {
        head: head.into(),
        rest,
    })
}

/// Streams `body` to `path` on the server `connection` reaches; removes the partial file when
/// the upload is cut off or refused.
pub async fn stage(
    connection: &ServerConnection,
    path: &str,
    body: CheckedBody,
) -> Result<Staged, ApiError> {
    let partial = format!("{path}.partial");
    let sent = send(connection, path, &partial, body).await;
    if sent.is_err() {
        discard(connection, &partial).await;
    }
    sent
}

/// Removes a staged file no backup will read (best effort, logged).
pub async fn discard(connection: &ServerConnection, path: &str) {
    let remove = format!("rm -f -- {}", shell_quote(path));
    if let Err(error) = connection.run(&remove).await {
        tracing::warn!(%error, path, "could not remove an uploaded dump");
    }
}

async fn send(
    connection: &ServerConnection,
    path: &str,
    partial: &str,
    body: CheckedBody,
) -> Result<Staged, ApiError> {
    let directory = path
        .rsplit_once('/')
        .map_or(".", |(directory, _)| directory);
    let write = format!(
        "umask 077 && mkdir -p -- {} && cat > {}",
        shell_quote(directory),
        shell_quote(partial)
    );
    let channel = connection
        .exec_channel(&write)
        .await
        .map_err(|e| remote_error(ACTION, e))?;
    let (mut read, write) = channel.split();
    let mut tally = Tally::default();
    let CheckedBody { head, mut rest } = body;
    let mut next = Some(Ok(head));
    while let Some(chunk) = next {
        let chunk = chunk.map_err(cut_off)?;
        tally.add(&chunk);
        write.data(&chunk[..]).await.map_err(|e| refused(&e))?;
        next = rest.next().await;
    }
    write.eof().await.map_err(|e| refused(&e))?;
    let mut exit_status = None;
    while let Some(message) = read.wait().await {
        if let ChannelMsg::ExitStatus {
            exit_status: status,
        } = message
        {
            exit_status = Some(status);
        }
    }
    if exit_status != Some(0) {
        let exit = exit_status.map_or("no exit status".into(), |s| format!("exit status {s}"));
        return Err(ApiError::unavailable(format!(
            "cannot {ACTION}: writing it failed ({exit}; is the server's disk full?)"
        )));
    }
    let commit = format!("mv -f -- {} {}", shell_quote(partial), shell_quote(path));
    connection
        .run(&commit)
        .await
        .map_err(|e| remote_error(ACTION, e))?;
    let (bytes, sha256) = tally.finish();
    Ok(Staged { bytes, sha256 })
}

fn cut_off(error: axum::Error) -> ApiError {
    ApiError::malformed(format!(
        "the upload was cut off ({error}); nothing was kept"
    ))
}

fn refused(error: &impl std::fmt::Display) -> ApiError {
    ApiError::unavailable(format!(
        "cannot {ACTION}: the server stopped reading ({error})"
    ))
    .retriable()
}

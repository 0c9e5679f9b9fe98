//! Where an artifact is kept, and its way there and back. A `server-directory` target keeps a
//! file on a registered server, written over SSH under a `.partial` name and renamed once
//! whole; an `s3` target keeps an object in a bucket, uploaded in parts and named once whole.
//! Either way the bytes are sealed before they leave the controller (`transfer`).

use berth_crds::backup::{BackupArtifact, BackupTarget, ENCRYPTION, TargetPlace};
use berth_remote::ServerConnection;
use kube::{Api, ResourceExt};
use russh::Channel;
use russh::client::Msg;

use super::plan::{ArtifactPath, Failure, code};
use super::s3::BucketStore;
use super::transfer::{self, Sink, Source, Stored};
use crate::context::Context;
use crate::error::Result;
use crate::reconcilers::deployment::connect;
use crate::reconcilers::deployment::server_target::Target;
use crate::server_connections::dedicated_connection;

const BUCKET_SCHEME: &str = "s3://";

/// An artifact's place, opened: a server reached, or a bucket with its keys.
pub enum Store {
    Directory {
        /// The target's server (short commands).
        target: Box<Target>,
        /// A connection of its own for the artifact's streams (see `sites::Sites`).
        stream: ServerConnection,
        server: String,
        path: ArtifactPath,
    },
    Bucket {
        bucket: BucketStore,
        key: String,
    },
}

impl Store {
    /// Where a new artifact of `of` (a database or a volume) named `backup` goes at `target`;
    /// why it cannot, when the target is not whole or its bucket cannot be opened.
    pub async fn for_new(
        context: &Context,
        namespace: &str,
        target: &BackupTarget,
        of: &str,
        backup: &str,
    ) -> Result<std::result::Result<Self, Failure>> {
        let blocked = |why: String| {
            let message = format!("backup target {}: {why}", target.name_any());
            Failure::new(code::UPLOAD_FAILED, message)
        };
        match target.spec.place() {
            Err(why) => Ok(Err(blocked(why))),
            Ok(TargetPlace::Directory(directory)) => {
                let path = ArtifactPath::of(&directory.path, namespace, of, backup);
                let server = &directory.server_id;
                Ok(Ok(Self::directory(context, namespace, server, path).await?))
            }
            Ok(TargetPlace::Bucket(s3)) => {
                let key = s3.bucket.artifact_key(namespace, of, backup);
                let opened = BucketStore::open(&context.client, namespace, s3, None).await?;
                Ok(opened
                    .map(|bucket| Self::Bucket { bucket, key })
                    .map_err(blocked))
            }
        }
    }

    /// Where a recorded artifact is (its `location`); for a bucket, `target` gives the
    /// store's address and keys. Why not, when it cannot be read.
    pub async fn of_artifact(
        context: &Context,
        namespace: &str,
        location: &str,
        target: Option<&BackupTarget>,
    ) -> Result<std::result::Result<Self, String>> {
        if let Some((server, path)) = ArtifactPath::from_location(location) {
            return Ok(Ok(Self::directory(context, namespace, &server, path).await?));
        }
        let Some((bucket, key)) = bucket_location(location) else {
            return Ok(Err(format!(
                "the artifact location {location} cannot be read"
            )));
        };
        let Some(s3) = target.and_then(|t| t.spec.s3.as_ref()) else {
            return Ok(Err(format!(
                "{location} is in a bucket, and the backup target that holds the store's \
                 address and keys is gone or no longer an s3 target"
            )));
        };
        let opened = BucketStore::open(&context.client, namespace, s3, Some(bucket)).await?;
        Ok(opened.map(|bucket| Self::Bucket {
            bucket,
            key: key.to_string(),
        }))
    }

    /// [`Store::of_artifact`] with the backup's target read by its id.
    pub async fn of_recorded(
        context: &Context,
        namespace: &str,
        location: &str,
        target_id: &str,
    ) -> Result<std::result::Result<Self, String>> {
        let targets = Api::<BackupTarget>::namespaced(context.client.clone(), namespace);
        let target = targets.get_opt(target_id).await?;
        Self::of_artifact(context, namespace, location, target.as_ref()).await
    }

    async fn directory(
        context: &Context,
        namespace: &str,
        server: &str,
        path: ArtifactPath,
    ) -> Result<Self> {
        let (_, target) = connect(context, namespace, server).await?;
        let stream = dedicated_connection(context, namespace, server).await?;
        Ok(Self::Directory {
            target: Box::new(target),
            stream,
            server: server.to_string(),
            path,
        })
    }

    /// Where the artifact is, as its record says.
    pub fn location(&self) -> String {
        match self {
            Self::Directory { server, path, .. } => path.location(server),
            Self::Bucket { bucket, key } => {
                format!("{BUCKET_SCHEME}{}/{key}", bucket.bucket_name())
            }
        }
    }

    /// The artifact, for people: a file on a server, or an object.
    pub fn described(&self) -> String {
        match self {
            Self::Directory { server, path, .. } => format!("{} on server {server}", path.file),
            Self::Bucket { .. } => self.location(),
        }
    }

    /// Seals what `source` writes (the program `program`, as a failure names it) to the
    /// artifact, not yet under its name for a directory; `observe` sees it first. A failed
    /// upload leaves nothing.
    pub async fn upload(
        &self,
        source: Channel<Msg>,
        program: &str,
        key: &[u8],
        observe: &mut (dyn FnMut(&[u8]) + Send),
    ) -> Result<std::result::Result<Stored, Failure>> {
        let sink = match self {
            Self::Directory { stream, path, .. } => {
                Sink::command(stream.exec_channel(&path.upload_command()).await?)
            }
            Self::Bucket { bucket, key } => match bucket.upload(key).await {
                Ok(upload) => Sink::Bucket(upload),
                Err(why) => return Ok(Err(Failure::new(code::UPLOAD_FAILED, why))),
            },
        };
        let sent = transfer::dump_to(source, program, sink, key, observe).await;
        if sent.is_err() {
            self.discard().await;
        }
        Ok(sent)
    }

    /// Names the uploaded artifact whole; its record.
    pub async fn record(&self, stored: Stored) -> Result<BackupArtifact> {
        if let Self::Directory { target, path, .. } = self {
            target.connection.run(&path.commit_command()).await?;
        }
        Ok(BackupArtifact {
            location: self.location(),
            bytes: stored.bytes,
            sha256: stored.sha256,
            encryption: ENCRYPTION.to_string(),
        })
    }

    /// Removes what an upload left (a partial file; a whole object whose contents were then
    /// refused), best effort.
    pub async fn discard(&self) {
        match self {
            Self::Directory { target, path, .. } => {
                let _ = target.connection.run(&path.discard_command()).await;
            }
            Self::Bucket { bucket, key } => {
                let _ = bucket.remove(key).await;
            }
        }
    }

    /// Reads the artifact back.
    pub async fn source(&self) -> Result<std::result::Result<Source, String>> {
        Ok(match self {
            Self::Directory { stream, path, .. } => Ok(Source::command(
                stream.exec_channel(&path.download_command()).await?,
            )),
            Self::Bucket { bucket, key } => bucket.download(key).await.map(Source::Bucket),
        })
    }

    /// Removes the artifact: what refused it, when something did (a retry would not help).
    pub async fn remove(&self) -> Result<Option<String>> {
        match self {
            Self::Directory { target, path, .. } => {
                let output = target.connection.exec(&path.remove_command()).await?;
                let said = String::from_utf8_lossy(&output.stderr).trim().to_string();
                Ok((output.exit_status != Some(0)).then_some(said))
            }
            Self::Bucket { bucket, key } => Ok(bucket.remove(key).await.err()),
        }
    }
}

/// The bucket and key a bucket [`Store::location`] names.
fn bucket_location(location: &str) -> Option<(&str, &str)> {
    let rest = location.strip_prefix(BUCKET_SCHEME)?;
    let (bucket, key) = rest.split_once('/')?;
    (!bucket.is_empty() && !key.is_empty()).then_some((bucket, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_location_names_its_bucket_and_key() {
        assert_eq!(
            bucket_location("s3://berth-backups/org-acme/db/db-b1.berth-backup"),
            Some(("berth-backups", "org-acme/db/db-b1.berth-backup"))
        );
        assert_eq!(bucket_location("s3://berth-backups/"), None);
        assert_eq!(bucket_location("server-directory://srv/x"), None);
    }
}

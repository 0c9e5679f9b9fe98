//! Files put into a container after it is created and before it starts: a dependency's
//! server certificate, or the certificate authority a bound app verifies its database with.

use berth_remote::RemoteError;
use berth_remote::docker::docker_call;
use bollard::query_parameters::UploadToContainerOptionsBuilder;

use super::Target;
use crate::reconcilers::deployment::plan::{ContainerFile, Plan};

impl Target {
    /// Extracts the tar archive `files` at `/` in a created (or stopped) container.
    pub async fn put_files(&self, container: &str, files: Vec<u8>) -> Result<(), RemoteError> {
        let options = UploadToContainerOptionsBuilder::new().path("/").build();
        let body = bollard::body_full(files.into());
        docker_call(
            &self.connection,
            "putting files into the container",
            self.docker
                .upload_to_container(container, Some(options), body),
        )
        .await
    }

    /// Puts the plan's files into its created container, if it has any.
    pub async fn put_plan_files(&self, plan: &Plan) -> Result<(), RemoteError> {
        if plan.files.is_empty() {
            return Ok(());
        }
        let archive = archive(&plan.files).map_err(|source| RemoteError::Io {
            operation: "packing the container's files",
            source,
        })?;
        self.put_files(&plan.container_name, archive).await
    }
}

/// The tar archive of `files`, world-readable (no secret is ever put in this way).
fn archive(files: &[ContainerFile]) -> std::io::Result<Vec<u8>> {
    let mut archive = tar::Builder::new(Vec::new());
    for file in files {
        let mut header = tar::Header::new_ustar();
        header.set_mode(0o644);
        header.set_size(file.contents.len() as u64);
        header.set_mtime(0);
        let path = file.path.trim_start_matches('/');
        archive.append_data(&mut header, path, file.contents.as_bytes())?;
    }
    archive.into_inner()
}

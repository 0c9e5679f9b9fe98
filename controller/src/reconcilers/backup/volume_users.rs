//! The running containers that use a volume, stopped by Berth for a while (a restore in place,
//! a quiesced backup's copy) and started again. They are held meanwhile (`crate::holds`): drift
//! repair leaves them stopped, their runtime says why, and their exit is not taken for a crash.
//! Should the operation end early, the hold goes with it and drift repair starts them again.

use std::time::Instant;

use super::plan::{Failure, code};
use super::volume_plan::{self, VolumeSource};
use crate::context::Context;
use crate::error::Result;
use crate::holds::HoldGuard;
use crate::reconcilers::deployment::server_target::Target;

/// Containers stopped and held until [`Stopped::start`].
pub struct Stopped<'a> {
    server: &'a Target,
    names: Vec<String>,
    _hold: HoldGuard<'a>,
}

/// Stops the running users of `volume` on `server`, held for `why` (said on their runtime).
pub async fn stop<'a>(
    context: &'a Context,
    server: &'a Target,
    volume: &VolumeSource,
    why: &str,
) -> Result<Stopped<'a>> {
    let socket = &server.docker_socket;
    let listed = server.connection.run(&volume.users_command(socket)).await?;
    let names: Vec<String> = listed
        .lines()
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(String::from)
        .collect();
    let hold = context.holds.hold(&names, why);
    if !names.is_empty() {
        let stop = volume_plan::containers_command(socket, "stop", &names);
        server.connection.run(&stop).await?;
    }
    Ok(Stopped {
        server,
        names,
        _hold: hold,
    })
}

impl Stopped<'_> {
    pub fn count(&self) -> usize {
        self.names.len()
    }

    /// Starts them again; the hold goes once they were asked to start.
    pub async fn start(self) -> Result<()> {
        if !self.names.is_empty() {
            let socket = &self.server.docker_socket;
            let start = volume_plan::containers_command(socket, "start", &self.names);
            self.server.connection.run(&start).await?;
        }
        Ok(())
    }
}

/// What a quiesced backup's copy cost the application.
pub struct Quiesced {
    pub containers: usize,
    pub seconds: f64,
}

/// Copies `volume`'s files into the new volume `snapshot` with its users stopped (held) only
/// for the copy; what that cost, or why the copy failed (its users are started again anyway).
pub async fn snapshot(
    context: &Context,
    server: &Target,
    volume: &VolumeSource,
    snapshot: &str,
    why: &str,
) -> Result<std::result::Result<Quiesced, Failure>> {
    let socket = &server.docker_socket;
    let image = &context.volume_helper_image;
    server
        .connection
        .run(&volume_plan::remove_volume_command(socket, snapshot))
        .await?;
    server
        .connection
        .run(&volume_plan::create_new_volume_command(socket, snapshot))
        .await?;
    let started = Instant::now();
    let stopped = stop(context, server, volume, why).await?;
    let containers = stopped.count();
    let copy = volume_plan::copy_command(socket, image, volume, snapshot);
    let copied = server.connection.exec(&copy).await;
    let restarted = stopped.start().await;
    let seconds = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    let copied = copied?;
    restarted?;
    if copied.exit_status != Some(0) {
        let said = String::from_utf8_lossy(&copied.stderr).trim().to_string();
        let message = format!("copying the volume's files into {snapshot} failed: {said}");
        return Ok(Err(Failure::new(code::DUMP_FAILED, message)));
    }
    Ok(Ok(Quiesced {
        containers,
        seconds,
    }))
}

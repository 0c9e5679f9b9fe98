//! `berth environments rename|lock|unlock|set|unset|clone|diff|promote`.

use berth_api::common::Confirmation;
use berth_api::environments::{
    CloneEnvironment, LockEnvironment, PromoteEnvironment, RenameEnvironment,
    SetEnvironmentVariable, UnlockEnvironment, UnsetEnvironmentVariable,
};
use serde_json::Value;

use super::Ctx;
use super::workspace::environment_id;
use crate::cli::Environments;
use crate::error::{CliError, CliResult};
use crate::output::{Column, col};

const DIFF: &[Column] = &[
    col("KEY", "/key"),
    col("EXPOSURE", "/exposure"),
    col("CHANGE", "/change"),
    col("LEFT", "/left/value"),
    col("RIGHT", "/right/value"),
];

fn exposure(build_time: bool) -> Option<String> {
    build_time.then(|| "build-time".to_string())
}

pub fn run(ctx: &Ctx, command: Environments) -> CliResult<()> {
    let api = ctx.api()?;
    match command {
        Environments::Rename { environment, name } => {
            let id = environment_id(ctx, &environment)?;
            let answer = api.post(
                &format!("/environments/{id}/rename"),
                &RenameEnvironment { name },
            )?;
            ctx.out.done(&answer, &format!("Renamed environment {id}"));
        }
        Environments::Lock {
            environment,
            reason,
        } => {
            let id = environment_id(ctx, &environment)?;
            let answer = api.post(
                &format!("/environments/{id}/lock"),
                &LockEnvironment { reason },
            )?;
            ctx.out.done(&answer, &format!("Locked environment {id}"));
        }
        Environments::Unlock { environment } => {
            let id = environment_id(ctx, &environment)?;
            let answer = api.post(&format!("/environments/{id}/unlock"), &UnlockEnvironment {})?;
            ctx.out.done(&answer, &format!("Unlocked environment {id}"));
        }
        Environments::Set {
            environment,
            assignment,
            build_time,
        } => {
            let id = environment_id(ctx, &environment)?;
            let (key, value) = assignment
                .split_once('=')
                .ok_or_else(|| CliError::Usage(format!("{assignment}: expected KEY=VALUE")))?;
            let body = SetEnvironmentVariable {
                key: key.to_string(),
                value: value.to_string(),
                exposure: exposure(build_time),
                kind: None,
                scope: None,
                is_secret: None,
            };
            let answer = api.post(&format!("/environments/{id}/variables"), &body)?;
            ctx.out
                .done(&answer, &format!("Set {key} on environment {id}"));
        }
        Environments::Unset {
            environment,
            key,
            build_time,
        } => {
            let id = environment_id(ctx, &environment)?;
            let body = UnsetEnvironmentVariable {
                exposure: exposure(build_time),
                scope: None,
            };
            let answer = api.delete(&format!("/environments/{id}/variables/{key}"), &body)?;
            ctx.out
                .done(&answer, &format!("Removed {key} from environment {id}"));
        }
        Environments::Clone {
            environment,
            name,
            kind,
        } => {
            let id = environment_id(ctx, &environment)?;
            let body = CloneEnvironment {
                target_name: name,
                target_kind: kind,
            };
            let answer = api.post(&format!("/environments/{id}/clone"), &body)?;
            super::created(ctx, &answer, "environment", "/id");
        }
        Environments::Diff { environment, other } => {
            let (left, right) = (
                environment_id(ctx, &environment)?,
                environment_id(ctx, &other)?,
            );
            let answer = api.get(&format!("/environments/{left}/diff/{right}"), &[])?;
            let rows = answer.as_array().cloned().unwrap_or_default();
            ctx.out.list(&answer, &rows, DIFF, "/key");
        }
        Environments::Promote {
            environment,
            target,
        } => {
            let (source, into) = (
                environment_id(ctx, &environment)?,
                environment_id(ctx, &target)?,
            );
            let diff = api.get(&format!("/environments/{source}/diff/{into}"), &[])?;
            if ctx.out.human() {
                let changing: Vec<Value> = diff
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|d| d["change"] == "removed" || d["change"] == "changed")
                    .cloned()
                    .collect();
                println!(
                    "Promoting {source} into {into}: {} variable(s) change",
                    changing.len()
                );
                print!("{}", ctx.out.table(&changing, DIFF));
            }
            let body = PromoteEnvironment {
                target_environment_id: Some(into.clone()),
                confirmation: Some(Confirmation {
                    environment_id: Some(into.clone()),
                    ..Confirmation::default()
                }),
                ..PromoteEnvironment::default()
            };
            let answer = api.post(&format!("/environments/{source}/promote"), &body)?;
            ctx.out
                .done(&answer, &format!("Promoted {source} into {into}"));
        }
        // List, count, show, create and delete are `workspace`'s.
        other => return super::workspace::environments(ctx, other),
    }
    Ok(())
}

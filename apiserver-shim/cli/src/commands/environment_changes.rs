//! `berth environments rename|lock|unlock|set|unset|clone|diff|promote`.

use berth_api::common::{Confirmation, IdResponse};
use berth_api::environments::{
    CloneEnvironment, LockEnvironment, PromoteEnvironment, RenameEnvironment,
    SetEnvironmentVariable, UnlockEnvironment, UnsetEnvironmentVariable, VariableChange,
    VariableDiff,
};
use serde_json::Value;

use super::{Answer, Ctx, environment_id};
use crate::cli::Environments;
use crate::client::Api;
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
            let body = RenameEnvironment { name };
            post_action(ctx, api, &environment, "rename", &body, "Renamed")
        }
        Environments::Lock {
            environment,
            reason,
        } => {
            let body = LockEnvironment { reason };
            post_action(ctx, api, &environment, "lock", &body, "Locked")
        }
        Environments::Unlock { environment } => {
            let body = UnlockEnvironment {};
            post_action(ctx, api, &environment, "unlock", &body, "Unlocked")
        }
        Environments::Set {
            environment,
            assignment,
            build_time,
            secret,
        } => {
            let assignment = Assignment {
                text: &assignment,
                build_time,
                secret,
            };
            set_variable(ctx, api, &environment, assignment)
        }
        Environments::Unset {
            environment,
            key,
            build_time,
        } => unset_variable(ctx, api, &environment, &key, build_time),
        Environments::Clone {
            environment,
            name,
            kind,
        } => clone_environment(ctx, api, &environment, name, kind),
        Environments::Diff { environment, other } => diff(ctx, api, &environment, &other),
        Environments::Promote {
            environment,
            target,
        } => promote(ctx, api, &environment, &target),
        // `workspace::environments` runs list, count, show, create and delete and hands only
        // the rest here.
        other => unreachable!("workspace::environments runs {other:?}"),
    }
}

/// POSTs `body` to the environment's `action` and says it was done (`verb`).
fn post_action(
    ctx: &Ctx,
    api: &Api,
    environment: &str,
    action: &str,
    body: &impl serde::Serialize,
    verb: &str,
) -> CliResult<()> {
    let id = environment_id(ctx, environment)?;
    let answer = api.post::<IdResponse>(&format!("/environments/{id}/{action}"), body)?;
    ctx.out
        .done(&answer.raw, &format!("{verb} environment {id}"));
    Ok(())
}

/// `KEY=VALUE` and how the environment keeps it.
struct Assignment<'a> {
    text: &'a str,
    build_time: bool,
    secret: bool,
}

/// The assignment as the environment's variable.
fn set_variable(
    ctx: &Ctx,
    api: &Api,
    environment: &str,
    assignment: Assignment<'_>,
) -> CliResult<()> {
    let id = environment_id(ctx, environment)?;
    // Never echo the text back: it may hold a secret value.
    let (key, value) = assignment
        .text
        .split_once('=')
        .ok_or_else(|| CliError::Usage("expected KEY=VALUE".into()))?;
    let body = SetEnvironmentVariable {
        key: key.to_string(),
        value: value.to_string(),
        exposure: exposure(assignment.build_time),
        kind: None,
        scope: None,
        is_secret: assignment.secret.then_some(true),
    };
    // The answer is empty (`null`) when the variable is set.
    let answer = api.post::<()>(&format!("/environments/{id}/variables"), &body)?;
    ctx.out
        .done(&answer.raw, &format!("Set {key} on environment {id}"));
    Ok(())
}

fn unset_variable(
    ctx: &Ctx,
    api: &Api,
    environment: &str,
    key: &str,
    build_time: bool,
) -> CliResult<()> {
    let id = environment_id(ctx, environment)?;
    let body = UnsetEnvironmentVariable {
        exposure: exposure(build_time),
        scope: None,
    };
    let path = format!("/environments/{id}/variables/{key}");
    let answer = api.delete::<()>(&path, &body)?;
    ctx.out
        .done(&answer.raw, &format!("Removed {key} from environment {id}"));
    Ok(())
}

/// A new environment named `name` with the variables of `environment`.
fn clone_environment(
    ctx: &Ctx,
    api: &Api,
    environment: &str,
    name: String,
    kind: Option<String>,
) -> CliResult<()> {
    let id = environment_id(ctx, environment)?;
    let body = CloneEnvironment {
        target_name: name,
        target_kind: kind,
    };
    let answer = api.post::<IdResponse>(&format!("/environments/{id}/clone"), &body)?;
    super::created(ctx, &answer, "environment", "/id");
    Ok(())
}

fn diff(ctx: &Ctx, api: &Api, environment: &str, other: &str) -> CliResult<()> {
    let (left, right) = (
        environment_id(ctx, environment)?,
        environment_id(ctx, other)?,
    );
    let answer =
        api.get::<Vec<VariableDiff>>(&format!("/environments/{left}/diff/{right}"), &[])?;
    let rows = answer.raw.as_array().cloned().unwrap_or_default();
    ctx.out.list(&answer.raw, &rows, DIFF, "/key");
    Ok(())
}

/// Copies the variables of `environment` into `target`, showing people first what changes.
fn promote(ctx: &Ctx, api: &Api, environment: &str, target: &str) -> CliResult<()> {
    let (source, into) = (
        environment_id(ctx, environment)?,
        environment_id(ctx, target)?,
    );
    let diff = api.get::<Vec<VariableDiff>>(&format!("/environments/{source}/diff/{into}"), &[])?;
    if ctx.out.human() {
        let changing = changing(&diff);
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
    let path = format!("/environments/{source}/promote");
    let answer = api.post::<IdResponse>(&path, &body)?;
    ctx.out
        .done(&answer.raw, &format!("Promoted {source} into {into}"));
    Ok(())
}

/// The entries of a diff a promotion changes in its target: those removed or changed, as
/// they came (the table takes its columns from them).
fn changing(diff: &Answer<Vec<VariableDiff>>) -> Vec<Value> {
    let entries = diff.raw.as_array().into_iter().flatten();
    entries
        .zip(&diff.value)
        .filter(|(_, typed)| {
            matches!(
                typed.change,
                VariableChange::Removed | VariableChange::Changed
            )
        })
        .map(|(entry, _)| entry.clone())
        .collect()
}

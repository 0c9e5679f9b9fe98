//! What each command does. Every command reaches the API through [`Ctx::api`] and prints
//! through [`Ctx::out`].

pub mod account;
pub mod activity;
pub mod backups;
pub mod dependencies;
pub mod deploy;
pub mod deployments;
pub mod environment_changes;
pub mod infra;
pub mod members;
pub mod migrate;
pub mod notify;
pub mod observe;
pub mod platform;
pub mod previews;
pub mod resource_config;
pub mod resources;
pub mod tasks;
pub mod terminal;
pub mod tokens;
pub mod volumes;
pub mod workspace;

use std::cell::OnceCell;

use berth_api::common::CountResponse;
use serde::de::DeserializeOwned;
use serde_json::Value;

use berth_api::resources::ResourceRecord;

use crate::client::{Api, Query};
use crate::config::{self, Config};
use crate::error::{CliError, CliResult};
use crate::output::{Column, Output, items};

/// What every command needs: where the API is, who is signed in, and how to print.
pub struct Ctx {
    pub out: Output,
    url: Option<String>,
    pub config: Config,
    api: OnceCell<Api>,
}

impl Ctx {
    pub fn new(out: Output, url: Option<String>) -> CliResult<Self> {
        Ok(Self {
            out,
            url: url.filter(|u| !u.is_empty()),
            config: config::load()?,
            api: OnceCell::new(),
        })
    }

    /// `--url`/`BERTH_URL`, else the URL stored at sign-in.
    pub fn url(&self) -> CliResult<String> {
        self.url
            .clone()
            .or_else(|| self.config.url.clone())
            .ok_or_else(|| {
                CliError::Usage(
                "no API URL: pass --url, set BERTH_URL, or sign in with `berth login --url URL`"
                    .into(),
            )
            })
    }

    /// The client signed in with `BERTH_TOKEN` or the stored token (one per run).
    pub fn api(&self) -> CliResult<&Api> {
        if let Some(api) = self.api.get() {
            return Ok(api);
        }
        let token = std::env::var("BERTH_TOKEN")
            .ok()
            .filter(|t| !t.is_empty())
            .or_else(|| self.config.token.clone())
            .ok_or_else(|| {
                CliError::Auth("not signed in: run `berth login` or set BERTH_TOKEN".into())
            })?;
        let api = Api::new(&self.url()?, Some(token))?;
        Ok(self.api.get_or_init(|| api))
    }

    pub fn anonymous(&self) -> CliResult<Api> {
        Api::new(&self.url()?, None)
    }
}

/// An option's value as the API's enum (`--kind static-site`), or a usage error listing the
/// values the API takes.
pub fn wire_enum<T: serde::de::DeserializeOwned>(option: &str, value: &str) -> CliResult<T> {
    serde_json::from_value(Value::String(value.to_string()))
        .map_err(|error| CliError::Usage(format!("--{option} {value}: {error}")))
}

/// GET a list and print its `/items` with `columns`; `id` points at each item's id.
pub fn list(ctx: &Ctx, path: &str, query: Query, columns: &[Column], id: &str) -> CliResult<()> {
    let answer = ctx.api()?.get(path, query)?;
    ctx.out
        .list(&answer, &items(&answer, "/items"), columns, id);
    Ok(())
}

/// An answer read as the API's type `T` (berth-api); `what` names it in the error.
pub fn read_as<T: DeserializeOwned>(what: &str, answer: &Value) -> CliResult<T> {
    serde_json::from_value(answer.clone())
        .map_err(|error| CliError::failure(format!("{what}: unexpected answer: {error}")))
}

/// GET `path`: the answer as it came (what `-o json|yaml` prints) and read as `T`.
pub fn get_as<T: DeserializeOwned>(api: &Api, path: &str, query: Query) -> CliResult<(Value, T)> {
    let answer = api.get(path, query)?;
    let typed = read_as(path, &answer)?;
    Ok((answer, typed))
}

/// GET a `{count}` and print the number.
pub fn count(ctx: &Ctx, path: &str) -> CliResult<()> {
    count_at(ctx, path, &[])
}

/// GET a `{count}` with a query and print the number.
pub fn count_at(ctx: &Ctx, path: &str, query: Query) -> CliResult<()> {
    let (answer, count): (Value, CountResponse) = get_as(ctx.api()?, path, query)?;
    ctx.out.done(&answer, &count.count.to_string());
    Ok(())
}

/// GET one record and print `fields` of it.
pub fn show(ctx: &Ctx, path: &str, fields: &[Column], id: &str) -> CliResult<()> {
    let answer = ctx.api()?.get(path, &[])?;
    ctx.out.record(&answer, fields, id);
    Ok(())
}

/// Prints the answer of a creation: the new id for people and `-q`, the answer for scripts.
pub fn created(ctx: &Ctx, answer: &Value, noun: &str, id: &str) {
    if ctx.out.human() {
        println!("Created {noun} {}", crate::output::cell(answer, id));
    } else {
        ctx.out.record(answer, &[], id);
    }
}

/// The one item of a list whose `id_field`, slug or (unique) name is `name`.
pub fn resolve(
    api: &Api,
    path: &str,
    query: Query,
    id_field: &str,
    name: &str,
) -> CliResult<Value> {
    let answer = api.get(path, query)?;
    let all = items(&answer, "/items");
    let by = |field: &str| -> Vec<&Value> {
        all.iter()
            .filter(|item| item.get(field).and_then(Value::as_str) == Some(name))
            .collect()
    };
    // An exact id wins; then a slug; a name only when it is unique.
    for field in [id_field, "slug", "name"] {
        match by(field).as_slice() {
            [] => continue,
            [one] => return Ok((*one).clone()),
            _ => {
                return Err(CliError::Usage(format!(
                    "{name} names more than one entry of {path}: use an id"
                )));
            }
        }
    }
    Err(CliError::NotFound(format!("{path}: no entry named {name}")))
}

/// The resource whose id, slug or name is `name`, as listed: read as the API's record, and as
/// it came (what `-o json|yaml` prints).
pub fn find_resource(ctx: &Ctx, name: &str) -> CliResult<(ResourceRecord, Value)> {
    let item = resolve(ctx.api()?, "/resources", &[], "id", name)?;
    let resource = read_as("resource", &item)?;
    Ok((resource, item))
}

/// An environment's id from its id or name (names are unique within a project only).
pub fn environment_id(ctx: &Ctx, name: &str) -> CliResult<String> {
    id_of(ctx.api()?, "/environments", "env-", name)
}

/// The id named by `name`: itself when it has the kind's id prefix (`prj-`), else the id of the
/// entry of `path` whose slug or name it is.
pub fn id_of(api: &Api, path: &str, prefix: &str, name: &str) -> CliResult<String> {
    if name.starts_with(prefix) {
        return Ok(name.to_string());
    }
    let item = resolve(api, path, &[], "id", name)?;
    Ok(item["id"].as_str().unwrap_or(name).to_string())
}

/// The organization the signed-in user acts in.
pub fn current_organization(api: &Api) -> CliResult<String> {
    let context = api.get("/organizations/current-context", &[])?;
    context
        .pointer("/currentOrganization/organizationId")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| {
            CliError::Usage("no current organization: choose one with `berth context ORG`".into())
        })
}

/// One line of standard input holding a secret (`what`), for the option `flag` that asked
/// for it: a secret on the command line would be visible to others.
pub fn line_from_stdin(flag: &str, what: &str) -> CliResult<String> {
    use std::io::BufRead as _;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let secret = line.trim_end_matches(['\r', '\n']).to_string();
    if secret.is_empty() {
        return Err(CliError::Usage(format!(
            "{flag}: standard input held no {what}"
        )));
    }
    Ok(secret)
}

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

mod listing;

use berth_api::common::CountResponse;
use berth_api::environments::EnvironmentList;
use berth_api::organizations::OrganizationContext;
use berth_api::resources::{ResourceList, ResourceRecord};
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use self::listing::{Listing, Named};
use crate::client::{Answer, Api, Query};
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

/// GET a list, read as its type `L`, and print its `/items` with `columns`; `id` points at
/// each item's id.
pub fn list<L: DeserializeOwned>(
    ctx: &Ctx,
    path: &str,
    query: Query,
    columns: &[Column],
    id: &str,
) -> CliResult<()> {
    let answer = ctx.api()?.get::<L>(path, query)?;
    ctx.out
        .list(&answer.raw, &items(&answer.raw, "/items"), columns, id);
    Ok(())
}

/// Data that is not an answer (an event of a stream) read as the API's type `T` (berth-api);
/// `what` names it in the error.
pub fn read_as<T: DeserializeOwned>(what: &str, data: &Value) -> CliResult<T> {
    serde_json::from_value(data.clone())
        .map_err(|error| CliError::failure(format!("{what}: unexpected answer: {error}")))
}

/// GET a `{count}` and print the number.
pub fn count(ctx: &Ctx, path: &str) -> CliResult<()> {
    count_at(ctx, path, &[])
}

/// GET a `{count}` with a query and print the number.
pub fn count_at(ctx: &Ctx, path: &str, query: Query) -> CliResult<()> {
    let answer = ctx.api()?.get::<CountResponse>(path, query)?;
    ctx.out.done(&answer.raw, &answer.value.count.to_string());
    Ok(())
}

/// GET one record, read as its type `T`, and print `fields` of it.
pub fn show<T: DeserializeOwned>(
    ctx: &Ctx,
    path: &str,
    fields: &[Column],
    id: &str,
) -> CliResult<()> {
    let answer = ctx.api()?.get::<T>(path, &[])?;
    ctx.out.record(&answer.raw, fields, id);
    Ok(())
}

/// Prints the answer of a creation: the new id for people and `-q`, the answer for scripts.
pub fn created<T>(ctx: &Ctx, answer: &Answer<T>, noun: &str, id: &str) {
    if ctx.out.human() {
        println!("Created {noun} {}", crate::output::cell(&answer.raw, id));
    } else {
        ctx.out.record(&answer.raw, &[], id);
    }
}

/// The one item of the list `L` at `path` whose id, slug or (unique) name is `name`.
pub fn resolve<L: Listing>(api: &Api, path: &str, query: Query, name: &str) -> CliResult<L::Item> {
    let mut all = api.get::<L>(path, query)?.value.into_items();
    // An exact id wins; then a slug; a name only when it is unique.
    let fields = listing::keys::<L::Item>();
    for field in fields {
        let matching: Vec<usize> = (0..all.len())
            .filter(|&at| field(&all[at]) == Some(name))
            .collect();
        match matching.as_slice() {
            [] => continue,
            [one] => return Ok(all.swap_remove(*one)),
            _ => {
                return Err(CliError::Usage(format!(
                    "{name} names more than one entry of {path}: use an id"
                )));
            }
        }
    }
    Err(CliError::NotFound(format!("{path}: no entry named {name}")))
}

/// The resource whose id, slug or name is `name`, as listed.
pub fn find_resource(ctx: &Ctx, name: &str) -> CliResult<ResourceRecord> {
    resolve::<ResourceList>(ctx.api()?, "/resources", &[], name)
}

/// An environment's id from its id or name (names are unique within a project only).
pub fn environment_id(ctx: &Ctx, name: &str) -> CliResult<String> {
    id_of::<EnvironmentList>(ctx.api()?, "/environments", "env-", name)
}

/// The id named by `name`: itself when it has the kind's id prefix (`prj-`), else the id of the
/// entry of the list `L` at `path` whose slug or name it is.
pub fn id_of<L: Listing>(api: &Api, path: &str, prefix: &str, name: &str) -> CliResult<String> {
    if name.starts_with(prefix) {
        return Ok(name.to_string());
    }
    let item = resolve::<L>(api, path, &[], name)?;
    Ok(item.id().to_string())
}

/// The organization the signed-in user acts in.
pub fn current_organization(api: &Api) -> CliResult<String> {
    let context = api.get::<OrganizationContext>("/organizations/current-context", &[])?;
    context
        .value
        .current_organization
        .map(|organization| organization.organization_id)
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

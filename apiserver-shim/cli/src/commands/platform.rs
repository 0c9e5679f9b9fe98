//! First-run bootstrap, user accounts, monitoring and thresholds, and the decision records.
//! Bodies the API nests deeply (threshold rules, decision records) are read from a JSON file
//! in the API's own shape rather than spelled out as options; the file is read as the API's
//! typed body and checked as the API checks it before anything is sent.

use std::io::{BufRead, Read};
use std::path::Path;

use berth_api::bootstrap::FirstAdminRequest;
use berth_api::certificates::{CertificateReason, IssueOrRenew};
use berth_api::decisions::{
    CapabilityKeyQuery, CapabilityQuery, EntitlementQuery, OperationKeyQuery,
};
use berth_api::monitoring::{Rollup, SamplesList};
use berth_api::overlays::{DecideOverlay, DecideRouteSurface};
use berth_api::retention::SetRetention;
use berth_api::thresholds::{DeleteThresholds, SetThresholds};
use berth_api::usage_intents::RecordUsageIntent;
use berth_api::users::CreateUser;
use berth_api::validate::Checked;
use serde_json::Value;

use super::{Ctx, Query, get_as};
use crate::cli::{Bootstrap, Decisions, Monitoring, QueryOptions, Tls, Users};
use crate::error::{CliError, CliResult};
use crate::output::{Column, col};
use crate::rows::RollupPoint;

pub fn bootstrap(ctx: &Ctx, command: Bootstrap) -> CliResult<()> {
    let api = ctx.anonymous()?;
    match command {
        Bootstrap::Status => {
            let answer = api.get("/bootstrap/auth/status", &[])?;
            ctx.out.record(
                &answer,
                &[
                    col("REQUIRED", "/bootstrapRequired"),
                    col("ADMIN", "/firstAdminEmail"),
                    col("ORGANIZATION", "/organizationSlug"),
                    col("LOGIN URL", "/loginUrl"),
                ],
                "/organizationId",
            );
        }
        Bootstrap::FirstAdmin {
            email,
            display_name,
            organization,
            password_stdin,
        } => {
            let body = FirstAdminRequest {
                email,
                display_name,
                password: password_stdin.then(read_password).transpose()?,
                organization_name: organization,
            };
            let answer = api.post("/bootstrap/auth/first-admin", &body)?;
            print_account(ctx, &answer, "Created the first administrator");
        }
    }
    Ok(())
}

pub fn users(ctx: &Ctx, command: Users) -> CliResult<()> {
    match command {
        Users::Create {
            email,
            display_name,
            password_stdin,
        } => {
            let body = CreateUser {
                email,
                display_name,
                password: password_stdin.then(read_password).transpose()?,
            };
            let answer = ctx.api()?.post("/users", &body)?;
            print_account(ctx, &answer, "Created user");
        }
    }
    Ok(())
}

fn read_password() -> CliResult<String> {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

/// A new account: its id, and the generated password, which the API returns only this once.
fn print_account(ctx: &Ctx, answer: &Value, verb: &str) {
    if !ctx.out.human() {
        ctx.out.raw(answer);
        return;
    }
    println!(
        "{verb} {} ({})",
        crate::output::cell(answer, "/email"),
        crate::output::cell(answer, "/userId")
    );
    if let Some(password) = answer["generatedPassword"].as_str() {
        println!("Password (shown only now): {password}");
    }
}

/// `--query KEY=VALUE` options as query parameters.
fn query(options: &QueryOptions) -> CliResult<Vec<(&str, String)>> {
    options
        .query
        .iter()
        .map(|pair| {
            pair.split_once('=')
                .map(|(key, value)| (key, value.to_string()))
                .ok_or_else(|| CliError::Usage(format!("--query {pair}: expected KEY=VALUE")))
        })
        .collect()
}

/// A JSON body from a file, or standard input for `-`, read as the API's type `T` and checked
/// with `validate` (the API's own field checks): a misspelt or bad field is refused here.
fn body_file<T: serde::de::DeserializeOwned>(
    file: &Path,
    validate: impl FnOnce(&T) -> Checked,
) -> CliResult<T> {
    let body = serde_json::from_value(json_file(file)?)
        .map_err(|error| CliError::Usage(format!("{}: {error}", file.display())))?;
    validate(&body)?;
    Ok(body)
}

/// A JSON body from a file, or standard input for `-`.
fn json_file(file: &Path) -> CliResult<Value> {
    let text = if file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        text
    } else {
        std::fs::read_to_string(file).map_err(|error| {
            CliError::failure(format!("cannot read {}: {error}", file.display()))
        })?
    };
    serde_json::from_str(&text)
        .map_err(|error| CliError::Usage(format!("{}: not JSON: {error}", file.display())))
}

/// Usage snapshots as they arrive, one JSON line each, until `count` or the stream ends.
fn usage(api: &crate::client::Api, count: Option<u64>, query: Query) -> CliResult<()> {
    let path = "/runtime-usage/inspect/stream";
    let events = api.stream(reqwest::Method::GET, path, query, None::<&()>)?;
    for (shown, data) in (1u64..).zip(events) {
        let data = data.map_err(|error| CliError::failure(format!("the stream broke: {error}")))?;
        println!("{data}");
        if count.is_some_and(|count| shown >= count) {
            break;
        }
    }
    Ok(())
}

/// Samples as a table: when, whose, and every figure measured.
fn samples(ctx: &Ctx, query: Query) -> CliResult<()> {
    let path = "/runtime-monitoring/samples";
    let (answer, typed): (Value, SamplesList) = get_as(ctx.api()?, path, query)?;
    ctx.out.rows(&answer, &typed.samples);
    Ok(())
}

/// A rollup as a table: one line per signal and bucket, with the bucket's averages.
fn rollup(ctx: &Ctx, query: Query) -> CliResult<()> {
    let path = "/runtime-monitoring/rollup";
    let (answer, typed): (Value, Rollup) = get_as(ctx.api()?, path, query)?;
    let points: Vec<RollupPoint> = typed
        .series
        .into_iter()
        .flat_map(|series| {
            let signal = series.signal;
            series
                .points
                .into_iter()
                .map(move |point| RollupPoint { signal, point })
        })
        .collect();
    ctx.out.rows(&answer, &points);
    Ok(())
}

pub fn monitoring(ctx: &Ctx, command: Monitoring) -> CliResult<()> {
    let api = ctx.api()?;
    let (path, query) = match &command {
        Monitoring::Samples { query: q } => return samples(ctx, &query(q)?),
        Monitoring::Rollup { query: q } => return rollup(ctx, &query(q)?),
        Monitoring::Thresholds { query: q } => ("/runtime-monitoring/thresholds", query(q)?),
        Monitoring::SetThresholds { file } => {
            let body = body_file(file, SetThresholds::validate)?;
            let answer = api.post("/runtime-monitoring/thresholds", &body)?;
            ctx.out.done(&answer, "Saved the threshold policy");
            return Ok(());
        }
        Monitoring::DeleteThresholds { policy } => {
            let path = format!("/runtime-monitoring/thresholds/{policy}");
            let answer = api.delete(&path, &DeleteThresholds {})?;
            ctx.out
                .done(&answer, &format!("Deleted the threshold policy {policy}"));
            return Ok(());
        }
        Monitoring::Usage { count, query: q } => return usage(api, *count, &query(q)?),
        Monitoring::Retention {
            category: Some(category),
            query: q,
        } => (&*format!("/retention-defaults/{category}"), query(q)?),
        Monitoring::Retention { query: q, .. } => ("/retention-defaults", query(q)?),
        Monitoring::SetRetention {
            category,
            days,
            scope,
            dry_run,
            destructive,
            enabled,
        } => {
            let body = SetRetention {
                category: category.clone(),
                retention_days: *days,
                scope: scope.clone(),
                organization_id: None,
                dry_run_scheduling_enabled: *dry_run,
                destructive_scheduling_enabled: *destructive,
                enabled: *enabled,
            };
            let answer = api.post("/retention-defaults", &body)?;
            ctx.out.done(&answer, "Saved the retention policy");
            return Ok(());
        }
    };
    // A policy and its evaluation, nested: the API's JSON as it came (YAML with -o yaml).
    let answer = api.get(path, &query)?;
    ctx.out.raw(&answer);
    Ok(())
}

const RECORD_COLUMNS: &[Column] = &[
    col("ID", "/id"),
    col("OPERATION", "/operationKey"),
    col("CAPABILITY", "/capabilityKey"),
    col("DECISION", "/decision"),
    col("STATUS", "/status"),
    col("SOURCE", "/source"),
];

/// A list of decision or usage records (`records`).
fn records(ctx: &Ctx, path: &str, options: &QueryOptions) -> CliResult<()> {
    let answer = ctx.api()?.get(path, &query(options)?)?;
    print_items(ctx, &answer, RECORD_COLUMNS, "/id");
    Ok(())
}

pub fn decisions(ctx: &Ctx, command: Decisions) -> CliResult<()> {
    let api = ctx.api()?;
    match command {
        Decisions::Capabilities { operations } => {
            let queries = operations
                .into_iter()
                .map(|operation_key| OperationKeyQuery { operation_key })
                .collect();
            let body = CapabilityQuery { queries };
            body.validate()?;
            let answer = api.post("/capabilities/query", &body)?;
            let columns = [
                col("OPERATION", "/operationKey"),
                col("ALLOWED", "/allowed"),
                col("MODE", "/mode"),
            ];
            print_items(ctx, &answer, &columns, "/operationKey");
        }
        Decisions::Entitlements { capabilities } => {
            let queries = capabilities
                .into_iter()
                .map(|capability_key| CapabilityKeyQuery { capability_key })
                .collect();
            let body = EntitlementQuery { queries };
            body.validate()?;
            let answer = api.post("/entitlements/query", &body)?;
            let columns = [
                col("CAPABILITY", "/capabilityKey"),
                col("ENTITLED", "/entitled"),
                col("STATUS", "/status"),
            ];
            print_items(ctx, &answer, &columns, "/capabilityKey");
        }
        Decisions::Overlays { query: q } => records(ctx, "/deployment-overlays", &q)?,
        Decisions::RouteSurfaces { query: q } => records(ctx, "/route-surfaces", &q)?,
        Decisions::UsageIntents { query: q } => records(ctx, "/usage-intents", &q)?,
        Decisions::Record { kind, file } => {
            let answer = match kind.as_str() {
                "overlay" => api.post(
                    "/deployment-overlays",
                    &body_file(&file, DecideOverlay::validate)?,
                )?,
                "route-surface" => api.post(
                    "/route-surfaces",
                    &body_file(&file, DecideRouteSurface::validate)?,
                )?,
                _ => api.post(
                    "/usage-intents",
                    &body_file(&file, RecordUsageIntent::validate)?,
                )?,
            };
            ctx.out.raw(&answer);
        }
    }
    Ok(())
}

/// The answer's first array (`decisions`, `entitlements`, …) as a table.
fn print_items(ctx: &Ctx, answer: &Value, columns: &[Column], id: &str) {
    let rows = answer
        .as_object()
        .and_then(|object| object.values().find_map(Value::as_array))
        .cloned()
        .unwrap_or_default();
    ctx.out.list(answer, &rows, columns, id);
}

pub fn tls(ctx: &Ctx, command: Tls) -> CliResult<()> {
    let api = ctx.api()?;
    let answer = match command {
        Tls::Certificates { id } => api.get(&listed_or_one("/certificates", id), &[])?,
        Tls::Domains { id } => api.get(&listed_or_one("/domain-bindings", id), &[])?,
        Tls::Issue {
            binding,
            reason,
            idempotency_key,
        } => {
            let reason = reason.map(|r| match r.as_str() {
                "renew" => CertificateReason::Renew,
                "replace" => CertificateReason::Replace,
                _ => CertificateReason::Issue,
            });
            let body = IssueOrRenew {
                domain_binding_id: binding,
                certificate_id: None,
                reason,
                provider_key: None,
                challenge_type: None,
                idempotency_key,
                causation_id: None,
            };
            let answer = api.post("/certificates/issue-or-renew", &body)?;
            ctx.out.done(&answer, "Asked for a certificate");
            return Ok(());
        }
        Tls::Bind {
            domain,
            resource,
            path,
            tls,
            idempotency_key,
        } => return bind(ctx, domain, &resource, path, tls, idempotency_key),
        Tls::DnsCheck {
            domain,
            resource,
            path,
        } => dns_check(ctx, domain, resource, path)?,
        Tls::DeleteCheck { binding } => {
            api.get(&format!("/domain-bindings/{binding}/delete-check"), &[])?
        }
        Tls::Delete { binding } => {
            let body = serde_json::json!({ "confirmation": { "domainBindingId": binding } });
            let answer = api.delete(&format!("/domain-bindings/{binding}"), &body)?;
            ctx.out.done(&answer, &format!("Unbound {binding}"));
            return Ok(());
        }
    };
    ctx.out.raw(&answer);
    Ok(())
}

/// `POST /domain-bindings` for the resource, in its project and environment.
fn bind(
    ctx: &Ctx,
    domain: String,
    resource: &str,
    path: String,
    tls: String,
    idempotency_key: Option<String>,
) -> CliResult<()> {
    let (resource, _) = super::find_resource(ctx, resource)?;
    let mut body = serde_json::json!({
        "projectId": resource.project_id, "environmentId": resource.environment_id,
        "resourceId": resource.id, "domainName": domain, "pathPrefix": path, "tlsMode": tls,
    });
    if let Some(key) = idempotency_key {
        body["idempotencyKey"] = key.into();
    }
    let answer = ctx.api()?.post("/domain-bindings", &body)?;
    super::created(ctx, &answer, "domain binding", "/id");
    Ok(())
}

/// `POST /domain-bindings/dns-readiness/inspect` for a host name of a resource, or a binding.
fn dns_check(
    ctx: &Ctx,
    domain: String,
    resource: Option<String>,
    path: Option<String>,
) -> CliResult<serde_json::Value> {
    let mut body = match resource {
        Some(resource) => {
            let (resource, _) = super::find_resource(ctx, &resource)?;
            serde_json::json!({ "resourceId": resource.id, "domainName": domain })
        }
        None => serde_json::json!({ "domainBindingId": domain }),
    };
    if let Some(path) = path {
        body["pathPrefix"] = path.into();
    }
    ctx.api()?
        .post("/domain-bindings/dns-readiness/inspect", &body)
}

/// `base`, or `base/{id}` when one is named.
fn listed_or_one(base: &str, id: Option<String>) -> String {
    match id {
        Some(id) => format!("{base}/{id}"),
        None => base.to_string(),
    }
}

//! First-run bootstrap, user accounts, monitoring and thresholds, and the decision records.
//! Bodies the API nests deeply (threshold rules, decision records) are read from a JSON file
//! in the API's own shape rather than spelled out as options; the file is read as the API's
//! typed body and checked as the API checks it before anything is sent.

use std::io::{BufRead, Read};
use std::path::Path;

use berth_api::bootstrap::{BootstrapStatus, FirstAdminRequest, FirstAdminResult};
use berth_api::certificates::{
    CertificateList, CertificateReason, CertificateView, DomainBindingList, DomainBindingView,
    IssueOrRenew, IssueResult,
};
use berth_api::common::IdResponse;
use berth_api::decisions::{
    CapabilityAnswer, CapabilityKeyQuery, CapabilityQuery, EntitlementAnswer, EntitlementQuery,
    OperationKeyQuery,
};
use berth_api::domain_binding_changes::{
    BindingConfirmation, CreateDomainBinding, DeleteDomainBinding, DeleteSafety,
};
use berth_api::domain_binding_readiness::DnsReadiness;
use berth_api::monitoring::{Rollup, SamplesList};
use berth_api::overlays::{
    DecideOverlay, DecideRouteSurface, DecisionAnswer, DecisionList, Overlay, RouteSurface,
};
use berth_api::retention::{RetentionAnswer, RetentionList, RetentionShow, SetRetention};
use berth_api::thresholds::{DeleteThresholds, SetThresholds, ThresholdsAnswer, ThresholdsShow};
use berth_api::usage_intents::{RecordUsageIntent, UsageIntentAnswer, UsageIntentList};
use berth_api::users::{CreateUser, CreatedUser};
use berth_api::validate::Checked;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Answer, Ctx, Query};
use crate::cli::{Bootstrap, Decisions, Monitoring, QueryOptions, Tls, Users};
use crate::error::{CliError, CliResult};
use crate::output::{Column, col, text};
use crate::rows::RollupPoint;

pub fn bootstrap(ctx: &Ctx, command: Bootstrap) -> CliResult<()> {
    let api = ctx.anonymous()?;
    match command {
        Bootstrap::Status => {
            let answer = api.get::<BootstrapStatus>("/bootstrap/auth/status", &[])?;
            ctx.out.record(
                &answer.raw,
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
            let answer = api.post::<FirstAdminResult>("/bootstrap/auth/first-admin", &body)?;
            let admin = &answer.value;
            let account = NewAccount {
                email: &admin.email,
                user_id: &admin.user_id,
                generated_password: admin.generated_password.as_deref(),
            };
            print_account(ctx, &answer.raw, account, "Created the first administrator");
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
            let answer = ctx.api()?.post::<CreatedUser>("/users", &body)?;
            let user = &answer.value;
            let account = NewAccount {
                email: &user.email,
                user_id: &user.user_id,
                generated_password: user.generated_password.as_deref(),
            };
            print_account(ctx, &answer.raw, account, "Created user");
        }
    }
    Ok(())
}

fn read_password() -> CliResult<String> {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

/// What people are told of a new account (a first administrator's or a user's).
struct NewAccount<'a> {
    email: &'a str,
    user_id: &'a str,
    generated_password: Option<&'a str>,
}

/// A new account: its id, and the generated password, which the API returns only this once.
fn print_account(ctx: &Ctx, answer: &Value, account: NewAccount<'_>, verb: &str) {
    if !ctx.out.human() {
        ctx.out.raw(answer);
        return;
    }
    println!("{verb} {} ({})", text(account.email), text(account.user_id));
    if let Some(password) = account.generated_password {
        println!("Password (shown only now): {password}");
    }
}

/// GETs `path`, an answer of type `T`, and prints it as it came (JSON, or YAML with -o yaml):
/// nested answers (a policy and its evaluation) that no table shows well.
fn print_raw<T: DeserializeOwned>(ctx: &Ctx, path: &str, query: Query) -> CliResult<()> {
    let answer = ctx.api()?.get::<T>(path, query)?;
    ctx.out.raw(&answer.raw);
    Ok(())
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
    let answer = ctx.api()?.get::<SamplesList>(path, query)?;
    ctx.out.rows(&answer.raw, &answer.value.samples);
    Ok(())
}

/// A rollup as a table: one line per signal and bucket, with the bucket's averages.
fn rollup(ctx: &Ctx, query: Query) -> CliResult<()> {
    let path = "/runtime-monitoring/rollup";
    let Answer {
        raw: answer,
        value: typed,
    } = ctx.api()?.get::<Rollup>(path, query)?;
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
    // Signed in before anything else is checked, as every command here needs it.
    ctx.api()?;
    match command {
        Monitoring::Samples { query: q } => samples(ctx, &query(&q)?),
        Monitoring::Rollup { query: q } => rollup(ctx, &query(&q)?),
        Monitoring::Thresholds { query: q } => {
            print_raw::<ThresholdsShow>(ctx, "/runtime-monitoring/thresholds", &query(&q)?)
        }
        Monitoring::SetThresholds { file } => set_thresholds(ctx, &file),
        Monitoring::DeleteThresholds { policy } => delete_thresholds(ctx, &policy),
        Monitoring::Usage { count, query: q } => usage(ctx.api()?, count, &query(&q)?),
        Monitoring::Retention {
            category: Some(category),
            query: q,
        } => {
            print_raw::<RetentionShow>(ctx, &format!("/retention-defaults/{category}"), &query(&q)?)
        }
        Monitoring::Retention { query: q, .. } => {
            print_raw::<RetentionList>(ctx, "/retention-defaults", &query(&q)?)
        }
        Monitoring::SetRetention {
            category,
            days,
            scope,
            dry_run,
            destructive,
            enabled,
        } => set_retention(
            ctx,
            SetRetention {
                category,
                retention_days: days,
                scope,
                organization_id: None,
                dry_run_scheduling_enabled: dry_run,
                destructive_scheduling_enabled: destructive,
                enabled,
            },
        ),
    }
}

fn set_thresholds(ctx: &Ctx, file: &Path) -> CliResult<()> {
    let body = body_file(file, SetThresholds::validate)?;
    let answer = ctx
        .api()?
        .post::<ThresholdsAnswer>("/runtime-monitoring/thresholds", &body)?;
    ctx.out.done(&answer.raw, "Saved the threshold policy");
    Ok(())
}

fn delete_thresholds(ctx: &Ctx, policy: &str) -> CliResult<()> {
    let path = format!("/runtime-monitoring/thresholds/{policy}");
    let answer = ctx
        .api()?
        .delete::<IdResponse>(&path, &DeleteThresholds {})?;
    ctx.out.done(
        &answer.raw,
        &format!("Deleted the threshold policy {policy}"),
    );
    Ok(())
}

fn set_retention(ctx: &Ctx, body: SetRetention) -> CliResult<()> {
    let answer = ctx
        .api()?
        .post::<RetentionAnswer>("/retention-defaults", &body)?;
    ctx.out.done(&answer.raw, "Saved the retention policy");
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

/// A list of decision or usage records (`records`), of type `L`.
fn records<L: DeserializeOwned>(ctx: &Ctx, path: &str, options: &QueryOptions) -> CliResult<()> {
    let answer = ctx.api()?.get::<L>(path, &query(options)?)?;
    print_items(ctx, &answer.raw, RECORD_COLUMNS, "/id");
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
            let answer = api.post::<CapabilityAnswer>("/capabilities/query", &body)?;
            let columns = [
                col("OPERATION", "/operationKey"),
                col("ALLOWED", "/allowed"),
                col("MODE", "/mode"),
            ];
            print_items(ctx, &answer.raw, &columns, "/operationKey");
        }
        Decisions::Entitlements { capabilities } => {
            let queries = capabilities
                .into_iter()
                .map(|capability_key| CapabilityKeyQuery { capability_key })
                .collect();
            let body = EntitlementQuery { queries };
            body.validate()?;
            let answer = api.post::<EntitlementAnswer>("/entitlements/query", &body)?;
            let columns = [
                col("CAPABILITY", "/capabilityKey"),
                col("ENTITLED", "/entitled"),
                col("STATUS", "/status"),
            ];
            print_items(ctx, &answer.raw, &columns, "/capabilityKey");
        }
        Decisions::Overlays { query: q } => {
            records::<DecisionList<Overlay>>(ctx, "/deployment-overlays", &q)?
        }
        Decisions::RouteSurfaces { query: q } => {
            records::<DecisionList<RouteSurface>>(ctx, "/route-surfaces", &q)?
        }
        Decisions::UsageIntents { query: q } => {
            records::<UsageIntentList>(ctx, "/usage-intents", &q)?
        }
        Decisions::Record { kind, file } => record_decision(ctx, &kind, &file)?,
    }
    Ok(())
}

/// Records a decision from a file: a deployment overlay, a route surface or a usage intent;
/// prints the API's answer as it came.
fn record_decision(ctx: &Ctx, kind: &str, file: &Path) -> CliResult<()> {
    let api = ctx.api()?;
    let answer = match kind {
        "overlay" => {
            let body = body_file(file, DecideOverlay::validate)?;
            api.post::<DecisionAnswer<Overlay>>("/deployment-overlays", &body)?
                .raw
        }
        "route-surface" => {
            let body = body_file(file, DecideRouteSurface::validate)?;
            api.post::<DecisionAnswer<RouteSurface>>("/route-surfaces", &body)?
                .raw
        }
        _ => {
            let body = body_file(file, RecordUsageIntent::validate)?;
            api.post::<UsageIntentAnswer>("/usage-intents", &body)?.raw
        }
    };
    ctx.out.raw(&answer);
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
    // Signed in before anything else is checked, as every command here needs it.
    ctx.api()?;
    match command {
        Tls::Certificates { id: None } => print_raw::<CertificateList>(ctx, "/certificates", &[]),
        Tls::Certificates { id: Some(id) } => {
            print_raw::<CertificateView>(ctx, &format!("/certificates/{id}"), &[])
        }
        Tls::Domains { id: None } => print_raw::<DomainBindingList>(ctx, "/domain-bindings", &[]),
        Tls::Domains { id: Some(id) } => {
            print_raw::<DomainBindingView>(ctx, &format!("/domain-bindings/{id}"), &[])
        }
        Tls::Issue {
            binding,
            reason,
            idempotency_key,
        } => issue(ctx, binding, reason, idempotency_key),
        Tls::Bind {
            domain,
            resource,
            path,
            tls,
            idempotency_key,
        } => bind(ctx, domain, &resource, path, tls, idempotency_key),
        Tls::DnsCheck {
            domain,
            resource,
            path,
        } => dns_check(ctx, domain, resource, path),
        Tls::DeleteCheck { binding } => {
            let path = format!("/domain-bindings/{binding}/delete-check");
            print_raw::<DeleteSafety>(ctx, &path, &[])
        }
        Tls::Delete { binding } => {
            let body = DeleteDomainBinding {
                confirmation: Some(BindingConfirmation {
                    domain_binding_id: Some(binding.clone()),
                }),
                idempotency_key: None,
            };
            let path = format!("/domain-bindings/{binding}");
            let answer = ctx.api()?.delete::<IdResponse>(&path, &body)?;
            ctx.out.done(&answer.raw, &format!("Unbound {binding}"));
            Ok(())
        }
    }
}

/// Asks for a certificate of a domain binding: issued, renewed or replaced (`reason`).
fn issue(
    ctx: &Ctx,
    binding: String,
    reason: Option<String>,
    idempotency_key: Option<String>,
) -> CliResult<()> {
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
    let answer = ctx
        .api()?
        .post::<IssueResult>("/certificates/issue-or-renew", &body)?;
    ctx.out.done(&answer.raw, "Asked for a certificate");
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
    let resource = super::find_resource(ctx, resource)?;
    let body = CreateDomainBinding {
        project_id: resource.project_id,
        environment_id: resource.environment_id,
        resource_id: resource.id,
        domain_name: domain,
        path_prefix: Some(path),
        tls_mode: Some(tls),
        idempotency_key,
        ..CreateDomainBinding::default()
    };
    let answer = ctx.api()?.post::<IdResponse>("/domain-bindings", &body)?;
    super::created(ctx, &answer, "domain binding", "/id");
    Ok(())
}

/// `POST /domain-bindings/dns-readiness/inspect` for a host name of a resource, or a binding;
/// prints the readiness as it came.
fn dns_check(
    ctx: &Ctx,
    domain: String,
    resource: Option<String>,
    path: Option<String>,
) -> CliResult<()> {
    let mut body = match resource {
        Some(resource) => {
            let resource = super::find_resource(ctx, &resource)?;
            serde_json::json!({ "resourceId": resource.id, "domainName": domain })
        }
        None => serde_json::json!({ "domainBindingId": domain }),
    };
    if let Some(path) = path {
        body["pathPrefix"] = path.into();
    }
    let answer = ctx
        .api()?
        .post::<DnsReadiness>("/domain-bindings/dns-readiness/inspect", &body)?;
    ctx.out.raw(&answer.raw);
    Ok(())
}

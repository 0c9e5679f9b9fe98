//! Status and verify: one read of the real state per receipt, through the ordinary read
//! operations as the caller (verify reads a migrated database's or volume's backups too: none
//! yet needs a look). Verify looks into the nested answers Appaloft's verify skips:
//! the resource's live health (overall, runtime, checks), the deployment's outcome, each
//! domain's route and certificate, and whether every migrated variable is in the effective
//! configuration. Summaries hold allow-listed scalars only: no value, no log.

use std::collections::BTreeMap;

use axum::http::Method;
use berth_api::migrations::{Evidence, MigrationPlan, Receipt, Scalar, Step};
use berth_migrate::plan::resolve_input;
use serde_json::{Map, Value};

use super::dependencies;
use super::dispatch::{Dispatcher, Refusal};

/// `state` of an evidence.
const AVAILABLE: &str = "available";
const ABSENT: &str = "absent";
const UNAVAILABLE: &str = "unavailable";

/// `evaluation` of an evidence.
pub const PASSED: &str = "passed";
pub const ATTENTION: &str = "attention";
pub const OBSERVED: &str = "observed";

/// What one read found, and whether the object is still settling (a deployment running).
pub struct Finding {
    pub evidence: Evidence,
    pub settling: bool,
}

/// The read of one receipt's object, for status (`deep` false) or verify (`deep` true).
pub async fn read(
    dispatcher: &Dispatcher,
    plan: &MigrationPlan,
    receipts: &[Receipt],
    index: usize,
    deep: bool,
) -> Vec<Finding> {
    let receipt = &receipts[index];
    let Some(step) = plan.steps.iter().find(|s| s.id == receipt.step_id) else {
        return Vec::new();
    };
    let input =
        resolve_input(step, &receipts[..index], &mut |_| Ok(String::new())).unwrap_or_default();
    let ids = Ids {
        output: &receipt.output,
        input: &input,
    };
    let mut findings = Vec::new();
    let backups = deep
        .then(|| backup_list(&step.operation_key, &ids))
        .flatten();
    for query in queries(&step.operation_key, &ids, deep)
        .into_iter()
        .chain(backups)
    {
        let answer = dispatcher.call(Method::GET, &query.path, None).await;
        findings.push(finding(step, &query, answer));
    }
    if deep && step.operation_key == "resources.create" {
        let expected = migrated_keys(plan, receipts, &ids);
        if let Some(id) = ids.get("resourceId") {
            let path = format!("/resources/{id}/effective-config");
            let answer = dispatcher.call(Method::GET, &path, None).await;
            findings.push(config_finding(step, answer, &expected));
        }
    }
    findings
}

struct Ids<'a> {
    output: &'a BTreeMap<String, Scalar>,
    input: &'a Map<String, Value>,
}

impl Ids<'_> {
    fn get(&self, name: &str) -> Option<String> {
        match self.output.get(name) {
            Some(Scalar::Text(text)) => return Some(text.clone()),
            Some(Scalar::Number(n)) => return Some(n.to_string()),
            _ => {}
        }
        self.input
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_string)
    }
}

/// A read's summary, evaluation, and whether the object is still settling.
type Judgement = (Map<String, Value>, &'static str, bool);

struct Query {
    path: String,
    name: &'static str,
    judge: fn(&Value) -> Judgement,
}

/// The reads of a step's object: a show for status; for verify, the deeper one.
fn queries(operation_key: &str, ids: &Ids<'_>, deep: bool) -> Vec<Query> {
    let query = |path: Option<String>, name, judge| path.map(|path| Query { path, name, judge });
    let id = |name: &str| ids.get(name);
    let found = match (operation_key, deep) {
        ("projects.create", _) => query(
            id("projectId").map(|i| format!("/projects/{i}")),
            "ShowProjectQuery",
            observed,
        ),
        ("environments.create" | "environments.set-variable", _) => query(
            id("environmentId").map(|i| format!("/environments/{i}")),
            "ShowEnvironmentQuery",
            observed,
        ),
        ("storage-volumes.create", _) => query(
            id("storageVolumeId").map(|i| format!("/storage-volumes/{i}")),
            "ShowStorageVolumeQuery",
            observed,
        ),
        ("resources.create", true) => query(
            id("resourceId").map(|i| format!("/resources/{i}/health?mode=live")),
            "ResourceHealthQuery",
            judge_health,
        ),
        (
            "resources.create"
            | "resources.set-variable"
            | "resources.set-secret"
            | "resources.attach-storage",
            _,
        ) => query(
            id("resourceId").map(|i| format!("/resources/{i}")),
            "ShowResourceQuery",
            observed,
        ),
        ("domain-bindings.create", _) => query(
            id("domainBindingId").map(|i| format!("/domain-bindings/{i}")),
            "ShowDomainBindingQuery",
            judge_binding,
        ),
        ("dependency-resources.provision" | "dependency-resources.import", _) => query(
            id("dependencyResourceId").map(|i| format!("/dependency-resources/{i}")),
            "ShowDependencyResourceQuery",
            judge_dependency,
        ),
        ("resources.bind-dependency", _) => query(
            id("resourceId")
                .zip(id("targetName"))
                .map(|(r, t)| format!("/resources/{r}/dependency-bindings/{t}")),
            "ShowResourceDependencyBindingQuery",
            judge_dependency_binding,
        ),
        ("deployments.create", _) => query(
            id("deploymentId").map(|i| format!("/deployments/{i}")),
            "ShowDeploymentQuery",
            judge_deployment,
        ),
        _ => None,
    };
    found.into_iter().collect()
}

/// Verify's second read of a migrated database or volume (MIGRATION.md §1): its backups. None
/// yet (a fresh migration), or a failed one among them, needs a look.
fn backup_list(operation_key: &str, ids: &Ids<'_>) -> Option<Query> {
    let (path, name) = match operation_key {
        "dependency-resources.provision" | "dependency-resources.import" => (
            ids.get("dependencyResourceId")
                .map(|i| format!("/dependency-resources/{i}/backups")),
            "ListDependencyResourceBackupsQuery",
        ),
        "storage-volumes.create" => (
            ids.get("storageVolumeId")
                .map(|i| format!("/storage-volumes/{i}/backups")),
            "ListStorageVolumeBackupsQuery",
        ),
        _ => return None,
    };
    path.map(|path| Query {
        path,
        name,
        judge: judge_backups,
    })
}

/// `itemCount` and `itemStatuses` of a backup list: passed with at least one backup and none
/// failed (Appaloft's rule).
fn judge_backups(value: &Value) -> Judgement {
    let items = value.get("items").and_then(Value::as_array);
    let count = items.map_or(0, Vec::len);
    let mut statuses: Vec<&str> = items
        .into_iter()
        .flatten()
        .filter_map(|item| item.get("status").and_then(Value::as_str))
        .collect();
    statuses.sort_unstable();
    statuses.dedup();
    let mut summary = Map::new();
    summary.insert("itemCount".into(), (count as i64).into());
    summary.insert("itemStatuses".into(), statuses.join(",").into());
    let evaluation = if count == 0 || statuses.contains(&"failed") {
        ATTENTION
    } else {
        PASSED
    };
    (summary, evaluation, false)
}

fn finding(step: &Step, query: &Query, answer: Result<Value, Refusal>) -> Finding {
    let (state, evaluation, summary, error_code, settling) = match answer {
        Ok(value) => {
            let (summary, evaluation, settling) = (query.judge)(&value);
            (AVAILABLE, evaluation, summary, None, settling)
        }
        Err(refusal) if refusal.is_not_found() => {
            (ABSENT, ATTENTION, Map::new(), Some(refusal.code), false)
        }
        Err(refusal) => (
            UNAVAILABLE,
            UNAVAILABLE,
            Map::new(),
            Some(refusal.code),
            false,
        ),
    };
    Finding {
        evidence: Evidence {
            step_id: step.id.clone(),
            operation_key: step.operation_key.clone(),
            query_name: query.name.into(),
            state: state.into(),
            evaluation: evaluation.into(),
            summary: scalars(summary),
            error_code,
        },
        settling,
    }
}

fn scalars(map: Map<String, Value>) -> BTreeMap<String, Scalar> {
    let mut out = BTreeMap::new();
    for (key, value) in map {
        let scalar = match value {
            Value::String(s) => Scalar::Text(s),
            Value::Bool(b) => Scalar::Flag(b),
            Value::Number(n) => Scalar::Number(n.as_i64().unwrap_or_default()),
            _ => continue,
        };
        out.insert(key, scalar);
    }
    if out.is_empty() {
        out.insert("observed".into(), Scalar::Flag(true));
    }
    out
}

/// Top-level scalars a summary may hold (Appaloft's allow-list; never a value or a log).
const SUMMARY_KEYS: &[&str] = &[
    "id",
    "status",
    "state",
    "current",
    "phase",
    "ready",
    "healthy",
    "slug",
    "name",
    "domainName",
    "hostname",
    "lifecycleStatus",
    "archivedAt",
    "createdAt",
    "finishedAt",
];

fn allow_listed(value: &Value) -> Map<String, Value> {
    let mut summary = Map::new();
    for key in SUMMARY_KEYS {
        if let Some(v) = value.get(key).filter(|v| !v.is_object() && !v.is_array()) {
            summary.insert((*key).into(), v.clone());
        }
    }
    summary
}

/// A show's facts; a resource's are under `resource`.
fn observed(value: &Value) -> Judgement {
    let facts = value.get("resource").unwrap_or(value);
    (allow_listed(facts), OBSERVED, false)
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("unknown")
}

/// Live health: `healthy` passes; anything else (stopped, degraded, unhealthy) needs a look.
fn judge_health(value: &Value) -> Judgement {
    let overall = text(value, "/overall");
    let failed_checks = value
        .get("checks")
        .and_then(Value::as_array)
        .map(|checks| {
            checks
                .iter()
                .filter(|c| text(c, "/status") == "failed")
                .count()
        })
        .unwrap_or(0);
    let mut summary = Map::new();
    summary.insert("overall".into(), overall.into());
    summary.insert("runtime".into(), text(value, "/runtime/lifecycle").into());
    summary.insert(
        "runtimeHealth".into(),
        text(value, "/runtime/health").into(),
    );
    summary.insert(
        "publicAccess".into(),
        text(value, "/publicAccess/status").into(),
    );
    summary.insert("failedChecks".into(), (failed_checks as i64).into());
    let settling = overall == "not-deployed";
    let evaluation = if overall == "healthy" {
        PASSED
    } else {
        ATTENTION
    };
    (summary, evaluation, settling)
}

/// A deployment that succeeded passes; one still running is settling; one superseded by a
/// newer deployment of its resource (a later step changed the resource, which redeployed it)
/// is only observed: the resource's live health judges what serves now; any other end fails.
fn judge_deployment(value: &Value) -> Judgement {
    let current = text(value, "/status/current");
    let code = value.pointer("/latestFailure/code").and_then(Value::as_str);
    let mut summary = Map::new();
    summary.insert("id".into(), text(value, "/deployment/id").into());
    summary.insert("current".into(), current.into());
    if let Some(code) = code {
        summary.insert("errorCode".into(), code.into());
    }
    let finished = ["succeeded", "failed", "canceled", "rolled-back"].contains(&current);
    let evaluation = match (current, code) {
        ("succeeded", _) => PASSED,
        ("canceled", Some("superseded")) => OBSERVED,
        _ => ATTENTION,
    };
    (summary, evaluation, !finished)
}

/// A managed dependency passes once `ready` (its health check passes); one still provisioning
/// is settling; otherwise the summary says why not.
fn judge_dependency(value: &Value) -> Judgement {
    let (summary, ready, settling) = dependencies::judge_dependency(value);
    (summary, if ready { PASSED } else { ATTENTION }, settling)
}

fn judge_dependency_binding(value: &Value) -> Judgement {
    let (summary, ready) = dependencies::judge_binding(value);
    (summary, if ready { PASSED } else { ATTENTION }, false)
}

/// A binding passes when Berth reports its route (and certificate, with TLS) ready.
fn judge_binding(value: &Value) -> Judgement {
    let mut summary = allow_listed(value);
    summary.insert("routeStatus".into(), text(value, "/routeStatus").into());
    summary.insert("tlsMode".into(), text(value, "/tlsMode").into());
    let ready = value.get("ready").and_then(Value::as_bool).unwrap_or(false);
    (summary, if ready { PASSED } else { ATTENTION }, false)
}

/// The keys this resource's variable and secret steps set, and those of the environment's
/// secret steps (every resource of the environment gets them), each once.
fn migrated_keys(plan: &MigrationPlan, receipts: &[Receipt], ids: &Ids<'_>) -> Vec<String> {
    let resource = ids.get("resourceId");
    let mut keys = Vec::new();
    for (index, receipt) in receipts.iter().enumerate() {
        let Some(step) = plan.steps.iter().find(|s| s.id == receipt.step_id) else {
            continue;
        };
        let Ok(input) = resolve_input(step, &receipts[..index], &mut |_| Ok(String::new())) else {
            continue;
        };
        let applies = match step.operation_key.as_str() {
            "resources.set-variable" | "resources.set-secret" => {
                input.get("resourceId").and_then(Value::as_str) == resource.as_deref()
            }
            "environments.set-variable" => input.get("isSecret") == Some(&Value::Bool(true)),
            _ => false,
        };
        if let (true, Some(key)) = (applies, input.get("key").and_then(Value::as_str)) {
            keys.push(key.to_string());
        }
    }
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Every migrated key present in the effective configuration (values stay masked there).
fn config_finding(step: &Step, answer: Result<Value, Refusal>, expected: &[String]) -> Finding {
    let query = Query {
        path: String::new(),
        name: "EffectiveConfigQuery",
        judge: observed,
    };
    let mut found = finding(step, &query, answer.clone());
    if let Ok(value) = answer {
        let present: Vec<&str> = value
            .get("effectiveEntries")
            .and_then(Value::as_array)
            .map(|entries| {
                entries
                    .iter()
                    .filter_map(|e| e.get("key")?.as_str())
                    .collect()
            })
            .unwrap_or_default();
        let missing = expected
            .iter()
            .filter(|k| !present.contains(&k.as_str()))
            .count();
        let summary = &mut found.evidence.summary;
        summary.clear();
        summary.insert("expectedKeys".into(), Scalar::Number(expected.len() as i64));
        summary.insert("missingKeys".into(), Scalar::Number(missing as i64));
        found.evidence.evaluation = if missing == 0 { PASSED } else { ATTENTION }.into();
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn backups_pass_only_when_there_is_one_and_none_failed() {
        let (summary, evaluation, _) = judge_backups(&json!({"items": []}));
        assert_eq!((evaluation, &summary["itemCount"]), (ATTENTION, &json!(0)));
        let listed =
            json!({"items": [{"status": "ready"}, {"status": "pending"}, {"status": "ready"}]});
        let (summary, evaluation, _) = judge_backups(&listed);
        assert_eq!(evaluation, PASSED);
        assert_eq!(summary["itemStatuses"], "pending,ready");
        let failed = json!({"items": [{"status": "ready"}, {"status": "failed"}]});
        assert_eq!(judge_backups(&failed).1, ATTENTION);
    }

    #[test]
    fn only_a_healthy_resource_passes() {
        let healthy = json!({"overall": "healthy", "runtime": {"lifecycle": "running"}});
        assert_eq!(judge_health(&healthy).1, PASSED);
        for overall in ["stopped", "degraded", "unhealthy", "unknown"] {
            let (summary, evaluation, _) = judge_health(&json!({ "overall": overall }));
            assert_eq!(evaluation, ATTENTION, "{overall}");
            assert_eq!(summary["overall"], overall);
        }
        assert!(
            judge_health(&json!({"overall": "not-deployed"})).2,
            "still settling"
        );
    }

    #[test]
    fn a_running_deployment_settles_and_a_failed_one_needs_attention() {
        let running = json!({"status": {"current": "running"}, "deployment": {"id": "d"}});
        let (_, evaluation, settling) = judge_deployment(&running);
        assert_eq!((evaluation, settling), (ATTENTION, true));
        let failed = json!({"status": {"current": "failed"}, "latestFailure": {"code": "port_not_listening"}});
        let (summary, evaluation, settling) = judge_deployment(&failed);
        assert_eq!((evaluation, settling), (ATTENTION, false));
        assert_eq!(summary["errorCode"], "port_not_listening");
        let done = json!({"status": {"current": "succeeded"}});
        assert_eq!(judge_deployment(&done).1, PASSED);
        let superseded =
            json!({"status": {"current": "canceled"}, "latestFailure": {"code": "superseded"}});
        assert_eq!(
            judge_deployment(&superseded).1,
            OBSERVED,
            "the resource's health judges"
        );
        let canceled =
            json!({"status": {"current": "canceled"}, "latestFailure": {"code": "canceled"}});
        assert_eq!(judge_deployment(&canceled).1, ATTENTION);
    }

    #[test]
    fn summaries_hold_allow_listed_scalars_only() {
        let shown = json!({"resource": {"id": "res-1", "name": "Web", "slug": "web",
            "variables": [{"value": "secret"}], "description": "free text"}});
        let (summary, evaluation, _) = observed(&shown);
        assert_eq!(evaluation, OBSERVED);
        let keys: Vec<&String> = summary.keys().collect();
        assert_eq!(keys, ["id", "name", "slug"]);
        assert_eq!(scalars(Map::new())["observed"], Scalar::Flag(true));
    }

    /// A plan of `web` (its own secret) and `worker` (its own `SENTRY_DSN`) under the
    /// environment's secret `SENTRY_DSN`, every step with its receipt.
    fn planned_with_receipts() -> (MigrationPlan, Vec<Receipt>) {
        let resource = |slug: &str| {
            json!({"ref": slug, "name": slug, "kind": "worker",
                   "source": {"kind": "docker-image", "locator": "ghcr.io/acme/app:1"}})
        };
        let bundle = json!({
            "apiVersion": "appaloft.io/migration/v1", "kind": "MigrationBundle",
            "metadata": {"name": "shop", "source": {"provider": "Railway"}},
            "spec": {
                "project": {"name": "Shop"},
                "environment": {"name": "production", "kind": "production"},
                "target": {"deploymentTargetId": "srv-1"},
                "resources": [resource("web"), resource("worker")],
                "variables": [
                    {"key": "SENTRY_DSN", "secretRef": "k8s://sentry#dsn", "exposure": "runtime"},
                    {"key": "STRIPE_KEY", "secretRef": "env://STRIPE_KEY", "exposure": "runtime",
                     "resourceRef": "web"},
                    {"key": "SENTRY_DSN", "value": "off", "exposure": "runtime",
                     "resourceRef": "worker"}
                ]
            }
        });
        let bundle = berth_migrate::plan::parse_bundle(&bundle).unwrap();
        let plan = berth_migrate::plan::plan(bundle).unwrap();
        let receipts = plan
            .steps
            .iter()
            .map(|step| Receipt {
                step_id: step.id.clone(),
                operation_key: step.operation_key.clone(),
                state: "completed".into(),
                output: step
                    .produces
                    .iter()
                    .flat_map(|p| p.keys())
                    .map(|name| (name.clone(), Scalar::Text(format!("id-of-{}", step.id))))
                    .collect(),
                ownership: "created".into(),
            })
            .collect();
        (plan, receipts)
    }

    #[test]
    fn verify_expects_the_environments_secrets_in_every_resource() {
        let (plan, receipts) = planned_with_receipts();
        let expected = |slug: &str| {
            let output = BTreeMap::from([(
                "resourceId".to_string(),
                Scalar::Text(format!("id-of-resource:create:{slug}")),
            )]);
            let input = Map::new();
            let ids = Ids {
                output: &output,
                input: &input,
            };
            migrated_keys(&plan, &receipts, &ids)
        };
        assert_eq!(expected("web"), ["SENTRY_DSN", "STRIPE_KEY"]);
        assert_eq!(expected("worker"), ["SENTRY_DSN"]);
    }
}

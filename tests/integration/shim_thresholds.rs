//! Runtime-monitoring thresholds (spec §4.5) against the real stack: a ThresholdPolicy set
//! through `POST /runtime-monitoring/thresholds` is evaluated by berth-controller on every
//! monitoring tick (5 s under `hack/test.sh`); a crossing shows in `GET`, in the policy's
//! `ThresholdCrossed` condition and as a Kubernetes Event, and so does its clearing.

use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, eventually, kubectl};
use serde_json::{Value, json};

use crate::deploy_support::{WAIT, delete_resource, ready_server, remove_server, wait_listed_with};
use crate::notifications::{Receiver, hook};
use crate::shim_projects_envs::{environment, invalid, project};

/// A few 5-second ticks, with room for a busy machine.
const EVALUATED: Duration = Duration::from_secs(45);
const PATH: &str = "/runtime-monitoring/thresholds";

fn memory_rule(warning: f64) -> Value {
    json!({
        "signal": "memory", "metric": "usedBytes",
        "warning": warning, "critical": 1e18, "comparator": "greater-than-or-equal",
    })
}

fn server_policy(server: &str, rule: Value) -> Value {
    json!({"scope": {"kind": "server", "serverId": server}, "rules": [rule]})
}

/// The GET answer once its evaluation is in `state`.
async fn wait_state(rest: &Rest, server: &str, state: &str) -> Value {
    let query = format!("{PATH}?scope.kind=server&scope.serverId={server}");
    eventually(EVALUATED, &format!("threshold state {state}"), || async {
        let body = rest.get(&query).await.ok();
        (body["evaluation"]["state"] == state).then_some(body)
    })
    .await
}

/// `(reason, note)` of the Events about ThresholdPolicy `name`.
fn policy_events(namespace: &str, name: &str) -> Vec<(String, String)> {
    let output = kubectl(
        &["get", "events.events.k8s.io", "-n", namespace, "-o", "json"],
        None,
    );
    assert!(output.status.success(), "kubectl get events failed");
    let list: Value = serde_json::from_slice(&output.stdout).unwrap();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["regarding"]["kind"] == "ThresholdPolicy" && e["regarding"]["name"] == name)
        .map(|e| (text(&e["reason"]), text(&e["note"])))
        .collect()
}

async fn wait_event(namespace: &str, name: &str, reason: &str) -> String {
    eventually(EVALUATED, &format!("event {reason}"), || async {
        policy_events(namespace, name)
            .into_iter()
            .find(|(r, _)| r == reason)
            .map(|(_, note)| note)
    })
    .await
}

/// The policy's condition of type `type_`, read from the cluster.
fn policy_condition(namespace: &str, name: &str, type_: &str) -> Value {
    let output = kubectl(
        &[
            "get",
            "thresholdpolicies.berth.dev",
            name,
            "-n",
            namespace,
            "-o",
            "json",
        ],
        None,
    );
    assert!(
        output.status.success(),
        "kubectl get thresholdpolicy failed"
    );
    let policy: Value = serde_json::from_slice(&output.stdout).unwrap();
    policy["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_)
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn a_tiny_memory_warning_is_reported_with_an_event_and_clears() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, _port) = ready_server(&admin).await;
    // A webhook channel that hears of crossed thresholds only.
    let receiver = Receiver::start().await;
    admin
        .post(
            "/notification-channels",
            json!({"name": "Ops", "kind": "webhook", "url": receiver.url("/hook"),
                   "events": ["threshold-crossed"]}),
        )
        .await
        .expect(201);

    // Members read, admins write.
    member
        .post(PATH, server_policy(&server, memory_rule(1.0)))
        .await
        .error(403, "forbidden");
    let set = admin
        .post(PATH, server_policy(&server, memory_rule(1.0)))
        .await
        .ok();
    let policy = &set["policy"];
    let name = policy["policyId"].as_str().unwrap().to_string();
    assert_eq!(
        policy["schemaVersion"],
        "runtime-monitoring-thresholds.policy/v1"
    );
    assert_eq!(policy["scope"]["serverId"], server.as_str(), "{set}");
    assert_eq!(policy["rules"][0]["ruleId"], "rule-1", "{set}");
    assert_eq!(policy["rules"][0]["forSamples"], 1, "{set}");
    assert_eq!(policy["enabled"], true, "{set}");
    assert_eq!(policy["updatedByActorKind"], "user", "{set}");

    // Any host uses more than one byte of memory: a warning, not critical.
    let shown = wait_state(&member, &server, "warning").await;
    assert_eq!(
        shown["schemaVersion"],
        "runtime-monitoring-thresholds.show/v1"
    );
    assert_eq!(shown["policy"]["policyId"], name.as_str(), "{shown}");
    let evaluation = &shown["evaluation"];
    let crossed = &evaluation["crossed"][0];
    assert_eq!(crossed["ruleId"], "rule-1", "{shown}");
    assert_eq!(crossed["metric"], "usedBytes", "{shown}");
    assert!(crossed.get("resourceId").is_none(), "the host's: {shown}");
    assert_eq!(crossed["severity"], "warning", "{shown}");
    assert_eq!(crossed["boundary"], 1.0, "{shown}");
    assert!(crossed["observedValue"].as_f64().unwrap() > 1.0, "{shown}");
    assert_eq!(evaluation["nextActions"], json!(["inspect-runtime-usage"]));
    assert!(
        evaluation["sourceSampleId"]
            .as_str()
            .unwrap()
            .contains(":host:"),
        "{shown}"
    );
    let note = wait_event(&org.namespace, &name, "ThresholdWarning").await;
    assert!(note.contains("usedBytes"), "{note}");
    // The channel heard of it once, naming the policy and what was crossed.
    let (_, message) = hook(&receiver, "threshold-crossed").await;
    assert_eq!(message["subject"]["kind"], "ThresholdPolicy", "{message}");
    assert_eq!(message["subject"]["name"], name.as_str(), "{message}");
    assert!(
        message["summary"].as_str().unwrap().contains("usedBytes"),
        "{message}"
    );
    let condition = policy_condition(&org.namespace, &name, "ThresholdCrossed");
    assert_eq!(condition["status"], "True", "{condition}");
    assert_eq!(condition["reason"], "Warning", "{condition}");
    let by_id = member.get(&format!("{PATH}?policyId={name}")).await.ok();
    assert_eq!(by_id["evaluation"]["state"], "warning", "{by_id}");

    // A warning no host reaches: cleared.
    admin
        .post(PATH, server_policy(&server, memory_rule(1e17)))
        .await
        .ok();
    let cleared = wait_state(&member, &server, "ok").await;
    assert_eq!(cleared["evaluation"]["crossed"], json!([]), "{cleared}");
    assert_eq!(cleared["policy"]["rules"][0]["warning"], 1e17, "{cleared}");
    let note = wait_event(&org.namespace, &name, "ThresholdCleared").await;
    assert!(note.contains("within"), "{note}");
    let condition = policy_condition(&org.namespace, &name, "ThresholdCrossed");
    assert_eq!(condition["reason"], "WithinBounds", "{condition}");

    // Bad bodies name their field and change nothing; unknown scopes are 404.
    let bad = |rule: Value| server_policy(&server, rule);
    let mut rule = memory_rule(1.0);
    rule["signal"] = json!("gpu");
    invalid(admin.post(PATH, bad(rule)).await, "rules[0].signal");
    let mut rule = memory_rule(1.0);
    rule["metric"] = json!("hostCpuPercent");
    invalid(admin.post(PATH, bad(rule)).await, "rules[0].metric");
    let mut rule = memory_rule(1.0);
    rule["comparator"] = json!("above");
    invalid(admin.post(PATH, bad(rule)).await, "rules[0].comparator");
    invalid(
        admin.post(PATH, bad(memory_rule(1e19))).await,
        "rules[0].warning",
    );
    let mut rule = memory_rule(1.0);
    rule["forSamples"] = json!(0);
    invalid(admin.post(PATH, bad(rule)).await, "rules[0].forSamples");
    invalid(
        member.get(&format!("{PATH}?scope.kind=server")).await,
        "scope.serverId",
    );
    admin
        .post(PATH, server_policy("no-such-server", memory_rule(1.0)))
        .await
        .error(404, "not_found");
    let unchanged = member.get(&format!("{PATH}?policyId={name}")).await.ok();
    assert_eq!(unchanged["policy"]["rules"][0]["warning"], 1e17);

    // Another organization sees none of it.
    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Owner).await.rest;
    outsider
        .get(&format!("{PATH}?policyId={name}"))
        .await
        .error(404, "not_found");

    // A rule written with kubectl skips those checks: the policy says what is wrong with it
    // instead of reporting bounds it cannot check; a former metric name is read as the
    // current one, and the policy says so.
    let patch = |metric: &str| {
        let rule = json!([{"op": "replace", "path": "/spec/rules/0/metric", "value": metric}]);
        let (kind, rule) = ("thresholdpolicies.berth.dev", rule.to_string());
        let args = [
            "patch",
            kind,
            &name,
            "-n",
            &org.namespace,
            "--type=json",
            "-p",
            &rule,
        ];
        let output = kubectl(&args, None);
        assert!(output.status.success(), "kubectl patch failed");
    };
    let ready_when = |what: &'static str, done: fn(&Value) -> bool| {
        let (namespace, name) = (org.namespace.clone(), name.clone());
        async move {
            eventually(EVALUATED, what, || async {
                let ready = policy_condition(&namespace, &name, "Ready");
                done(&ready).then_some(ready)
            })
            .await
        }
    };
    let message = |ready: &Value| ready["message"].as_str().unwrap_or_default().to_string();
    patch("ramBytes");
    let ready = ready_when("Ready reason InvalidSpec", |r| r["reason"] == "InvalidSpec").await;
    assert_eq!(ready["status"], "False", "{ready}");
    let text = message(&ready);
    assert!(text.contains("spec.rules[0].metric"), "{text}");
    assert!(text.contains("ramBytes"), "{text}");
    assert!(
        text.contains("containerUsedBytes"),
        "the allowed values: {text}"
    );
    // The flat name rules used before they named `resourceMetrics` fields: Ready, read (and
    // shown) as `usedBytes`, the object left as written.
    patch("memoryUsedBytes");
    let ready = ready_when("Ready naming the former metric", |r| {
        r["message"]
            .as_str()
            .unwrap_or_default()
            .contains("memoryUsedBytes")
    })
    .await;
    assert_eq!(ready["status"], "True", "{ready}");
    assert_eq!(ready["reason"], "Reconciled", "{ready}");
    let text = message(&ready);
    assert!(text.contains("spec.rules[0]"), "{text}");
    assert!(text.contains("`memory` / `usedBytes`"), "{text}");
    let shown = member.get(&format!("{PATH}?policyId={name}")).await.ok();
    assert_eq!(shown["policy"]["rules"][0]["signal"], "memory", "{shown}");
    assert_eq!(
        shown["policy"]["rules"][0]["metric"], "usedBytes",
        "{shown}"
    );
    patch("usedBytes");
    let ready = ready_when("Ready with nothing to convert", |r| {
        let text = r["message"].as_str().unwrap_or_default();
        r["reason"] == "Reconciled" && !text.contains("memoryUsedBytes")
    })
    .await;
    assert_eq!(ready["status"], "True", "{ready}");

    remove_server(&admin, &server).await;
}

/// The spec's own example: a server-scoped rule on `containerCpuPercent`, a container metric, is
/// held against every container on the server. A warning bound of 0 is crossed by the first
/// two samples of the app's container after the policy exists, names the app, and the
/// evaluation keeps up with the samples (the newest `evaluatedAt` and `sourceSampleId`).
#[tokio::test]
async fn a_server_scoped_container_cpu_bound_of_zero_is_crossed_by_the_apps_container() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let (server, _port) = ready_server(&admin).await;
    let shop = project(&admin, "Shop").await;
    let prod = environment(&admin, &shop, "prod").await;
    let slug = format!("cpu{}", berth_tests::random_suffix());
    let created = admin
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Busy", "slug": slug,
                "kind": "application", "serverId": server,
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
                "networkProfile": {"internalPort": 8080},
            }),
        )
        .await
        .ok();
    let app = created["id"].as_str().unwrap().to_string();
    wait_listed_with(&admin, &app, "succeeded").await;

    // One collection interval (5 s under hack/test.sh) before the policy exists: a tick read
    // just before it may be evaluated just after.
    let now = k8s_openapi::jiff::Timestamp::now();
    let set_at = now
        .checked_sub(k8s_openapi::jiff::SignedDuration::from_secs(5))
        .unwrap();
    let rule = json!({
        "signal": "cpu", "metric": "containerCpuPercent", "warning": 0, "critical": 1000,
    });
    admin.post(PATH, server_policy(&server, rule)).await.ok();
    let shown = wait_state(&admin, &server, "warning").await;
    let crossed = &shown["evaluation"]["crossed"][0];
    assert_eq!(crossed["metric"], "containerCpuPercent", "{shown}");
    assert_eq!(crossed["resourceId"], app.as_str(), "{shown}");
    assert_eq!(crossed["boundary"], 0.0, "{shown}");
    assert!(crossed["observedValue"].as_f64().unwrap() >= 0.0, "{shown}");
    // Within two samples: the crossing sample is one of the container's first two since the
    // policy was set (three since a tick before).
    let source = shown["evaluation"]["sourceSampleId"]
        .as_str()
        .unwrap()
        .to_string();
    // The evaluation can name a sample a moment before the samples query lists it.
    let samples =
        format!("/runtime-monitoring/samples?scope.resourceId={app}&window.from={set_at}");
    let ids: Vec<String> = eventually(EVALUATED, "the crossing sample listed", || async {
        let since = admin.get(&samples).await.ok();
        let ids: Vec<String> = since["samples"]
            .as_array()?
            .iter()
            .filter_map(|s| s["sampleId"].as_str().map(str::to_string))
            .collect();
        ids.contains(&source).then_some(ids)
    })
    .await;
    let first = &ids[..ids.len().min(3)];
    assert!(first.contains(&source), "{source} not in {ids:?}");

    // The evaluation moves with the samples, though nothing changes state.
    let at = |body: &Value| {
        let text = body["evaluation"]["evaluatedAt"].as_str()?;
        text.parse::<k8s_openapi::jiff::Timestamp>().ok()
    };
    let evaluated = at(&shown).unwrap_or_else(|| panic!("evaluatedAt in {shown}"));
    let query = format!("{PATH}?scope.kind=server&scope.serverId={server}");
    let later = eventually(WAIT, "a newer evaluatedAt", || async {
        let body = admin.get(&query).await.ok();
        (at(&body)? > evaluated).then_some(body)
    })
    .await;
    assert_eq!(later["evaluation"]["state"], "warning", "{later}");

    delete_resource(&admin, &app, &slug).await;
    remove_server(&admin, &server).await;
}

/// `DELETE /runtime-monitoring/thresholds/{policyId}`: administrators delete a policy by the id
/// its GET answers; then its scope has none (404), a second delete is a 404, and neither a
/// member nor another organization may delete it.
#[tokio::test]
async fn a_threshold_policy_is_deleted_by_its_id() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let shop = project(&admin, "Watched").await;
    let scope = json!({"kind": "project", "projectId": shop});
    let saved = admin
        .post(PATH, json!({"scope": scope, "rules": [memory_rule(1e16)]}))
        .await
        .ok();
    let id = saved["policy"]["policyId"].as_str().unwrap().to_string();
    let query = format!("{PATH}?scope.kind=project&scope.projectId={shop}");
    assert_eq!(member.get(&query).await.ok()["policy"]["policyId"], id);
    let path = format!("{PATH}/{id}");

    member
        .delete(&path, json!({}))
        .await
        .error(403, "forbidden");
    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Owner).await.rest;
    outsider
        .delete(&path, json!({}))
        .await
        .error(404, "not_found");
    invalid(admin.delete(&path, json!({"force": true})).await, "force");

    let deleted = admin.delete(&path, json!({})).await.ok();
    assert_eq!(deleted["id"], id.as_str());
    member.get(&query).await.error(404, "not_found");
    admin.delete(&path, json!({})).await.error(404, "not_found");
    let left = kubectl(&["get", "bthr", &id, "-n", &org.namespace], None);
    assert!(!left.status.success(), "the ThresholdPolicy object is gone");
}

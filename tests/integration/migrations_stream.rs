//! `POST /migrations/apply/stream`: a refusal is an ordinary error answer; a run answers at
//! once with the task, then sends each receipt only once the task holds it, and ends with the
//! answer `POST /migrations/apply` gives; no secret value is in the stream.

use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_crds::migration::Migration;
use berth_tests::rest::{Rest, TestOrg, base_url};
use berth_tests::{client, random_suffix};
use kube::Api;
use serde_json::{Value, json};

use super::{SECRET, apply_body, bundle, plan};
use crate::deploy_support::assert_never_shown;
use crate::shim_deployments_stream::parse_events;

/// Opens the stream; the response is read as it arrives.
async fn open(rest: &Rest, body: &Value) -> reqwest::Response {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap();
    let request = http
        .post(format!("{}/migrations/apply/stream", base_url()))
        .bearer_auth(rest.token.as_deref().unwrap())
        .json(body);
    request.send().await.expect("the shim answers")
}

/// The receipts the task holds now.
async fn stored_receipts(tasks: &Api<Migration>, name: &str) -> Vec<Value> {
    let task = tasks.get(name).await.expect("the task");
    let receipts = task.status.map(|s| s.receipts).unwrap_or_default();
    receipts
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect()
}

#[tokio::test]
async fn a_streamed_apply_sends_each_receipt_once_the_task_holds_it() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let member = org.user(OrganizationRole::Member).await.rest;
    // No such server: the steps before the first deployment land, that one fails.
    let domain = format!("stream{}.localhost", random_suffix());
    let planned = plan(&member, &bundle("srv-nowhere", &domain)).await;
    let steps = planned["steps"].as_array().unwrap().len();

    let mut wrong = apply_body(&planned, &json!([]));
    wrong["confirmedPlanDigest"] = json!(format!("sha256:{}", "0".repeat(64)));
    let refused = open(&member, &wrong).await;
    assert_eq!(refused.status(), 422);
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["error"]["code"], "migration_plan_digest_mismatch");

    let mut response = open(&member, &apply_body(&planned, &json!([]))).await;
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let tasks = Api::<Migration>::namespaced(client.clone(), &org.namespace);
    let (mut text, mut events) = (String::new(), Vec::new());
    while let Some(chunk) = response.chunk().await.expect("the stream reads") {
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            for event in parse_events(&block) {
                let data = event.data;
                if data["kind"] == "step-completed" {
                    let task = data["migrationName"].as_str().unwrap();
                    let held = stored_receipts(&tasks, task).await;
                    let n = data["completedSteps"].as_u64().unwrap() as usize;
                    assert!(
                        held.len() >= n,
                        "the task holds receipt {n} before it is sent"
                    );
                    assert_eq!(held[n - 1], data["receipt"], "{data}");
                }
                events.push(data);
            }
        }
    }

    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"started"), "{kinds:?}");
    assert_eq!(events[0]["completedSteps"], 0);
    assert_eq!(events[0]["totalSteps"], steps);
    assert_eq!(kinds.last(), Some(&"finished"), "{kinds:?}");
    let sent: Vec<Value> = events[1..events.len() - 1]
        .iter()
        .enumerate()
        .map(|(i, e)| {
            assert_eq!(e["kind"], "step-completed", "{e}");
            assert_eq!(e["completedSteps"], i + 1, "in order, one each: {e}");
            e["receipt"].clone()
        })
        .collect();
    assert!(
        !sent.is_empty(),
        "the project and resources land: {kinds:?}"
    );
    let result = &events.last().unwrap()["result"];
    assert_eq!(result["receipts"], json!(sent), "{result}");
    assert_eq!(result["state"], "partial", "{result}");
    assert!(result["failure"]["stepId"].is_string(), "{result}");
    let task = result["migrationName"].as_str().unwrap();
    assert_eq!(stored_receipts(&tasks, task).await, sent);
    let whole = serde_json::to_string(&events).unwrap();
    assert_never_shown(SECRET, &[&whole]);
}

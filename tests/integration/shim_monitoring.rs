//! Runtime monitoring (spec §4.5) against the real stack: the server observer samples the
//! host and the sample app's container over SSH, without an agent, and
//! `GET /runtime-monitoring/samples` serves them attributed to project, environment, resource
//! and deployment. `hack/test.sh` runs berth-controller with a 5-second cadence.

use berth_crds::member::OrganizationRole;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, eventually, random_suffix};
use serde_json::{Value, json};

use crate::deploy_support::{WAIT, delete_resource, ready_server, remove_server, wait_listed_with};
use crate::shim_projects_envs::{environment, invalid, project};
use crate::shim_runtime_logs::follow;

async fn samples(rest: &Rest, query: &str) -> Value {
    rest.get(&format!("/runtime-monitoring/samples?{query}"))
        .await
        .ok()
}

/// The first sample of `query`'s answer for which `wanted` holds.
async fn wait_sample(rest: &Rest, query: &str, wanted: impl Fn(&Value) -> bool) -> Value {
    eventually(WAIT, &format!("a sample of {query}"), || async {
        let body = samples(rest, query).await;
        body["samples"]
            .as_array()?
            .iter()
            .find(|s| wanted(s))
            .cloned()
    })
    .await
}

#[tokio::test]
async fn the_sample_app_and_its_server_are_sampled_and_attributed() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, _port) = ready_server(&admin).await;
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let slug = format!("mon{}", random_suffix());
    let created = member
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Monitored", "slug": slug,
                "kind": "application", "serverId": server,
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
                "networkProfile": {"internalPort": 8080},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    let item = wait_listed_with(&member, &id, "succeeded").await;
    let deployment = item["lastDeploymentId"].as_str().unwrap().to_string();

    // The container: attributed, with memory at once and a CPU share from the second tick,
    // its figures nested as the spec's resourceMetrics.
    let query = format!("scope.resourceId={id}");
    let sample = wait_sample(&member, &query, |s| {
        s["totals"]["cpu"]["containerCpuPercent"].is_number()
    })
    .await;
    let scope = &sample["scopeEvidence"];
    assert_eq!(
        scope["scope"],
        json!({"kind": "resource", "resourceId": id}),
        "{sample}"
    );
    assert_eq!(scope["serverId"], server.as_str(), "{sample}");
    assert_eq!(scope["projectId"], shop.as_str(), "{sample}");
    assert_eq!(scope["environmentId"], prod.as_str(), "{sample}");
    assert_eq!(scope["resourceId"], id.as_str(), "{sample}");
    assert_eq!(scope["deploymentId"], deployment.as_str(), "{sample}");
    assert_eq!(
        sample["labels"]["artifactKind"], "active-runtime",
        "{sample}"
    );
    assert!(
        sample["totals"]["memory"]["containerUsedBytes"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{sample}"
    );
    assert!(
        sample["totals"]["memory"].get("usedBytes").is_none(),
        "{sample}"
    );
    let cpu = sample["totals"]["cpu"]["containerCpuPercent"]
        .as_f64()
        .unwrap();
    assert!((0.0..=100.0).contains(&cpu), "{sample}");
    // Its writable layer, read from Docker every 10th tick.
    let sized = wait_sample(&member, &query, |s| {
        s["totals"]["docker"]["containerWritableBytes"].is_number()
    })
    .await;
    let writable = &sized["totals"]["docker"]["containerWritableBytes"];
    assert!(writable.as_f64().unwrap() >= 0.0, "{sized}");
    let body = samples(&member, &query).await;
    assert_eq!(body["schemaVersion"], "runtime-monitoring.samples.list/v1");
    assert_eq!(body["freshness"], "live", "{body}");
    assert!(body["retention"]["rawRetentionHours"].is_number(), "{body}");

    // The host: cores, load, memory, the disk and inodes Docker keeps its data on, and
    // Docker's images.
    let query = format!("scope.kind=server&scope.serverId={server}");
    let host = wait_sample(&member, &query, |s| {
        s["totals"]["docker"]["imageBytes"].is_number()
    })
    .await;
    let figure = |group: &str, field: &str| host["totals"][group][field].as_f64().unwrap();
    assert!(figure("cpu", "logicalCores") >= 1.0, "{host}");
    assert!(figure("cpu", "loadAverage1m") >= 0.0, "{host}");
    assert!(figure("memory", "totalBytes") > 0.0, "{host}");
    let used = figure("memory", "usedBytes") + figure("memory", "availableBytes");
    assert_eq!(used, figure("memory", "totalBytes"), "{host}");
    let disk = figure("disk", "usedBytes") + figure("disk", "availableBytes");
    assert_eq!(disk, figure("disk", "totalBytes"), "{host}");
    assert!(
        figure("inode", "total") > figure("inode", "available"),
        "{host}"
    );
    assert!(figure("docker", "imageBytes") > 0.0, "{host}");
    assert_eq!(
        host["scopeEvidence"]["scope"],
        json!({"kind": "server", "serverId": server}),
        "{host}"
    );
    assert!(host["scopeEvidence"].get("resourceId").is_none(), "{host}");
    assert!(host["labels"].get("artifactKind").is_none(), "{host}");

    // Signals keep only their groups; the answer echoes the scope with its kind.
    let only = samples(&member, &format!("scope.resourceId={id}&signals=memory")).await;
    assert_eq!(
        only["scope"],
        json!({"kind": "resource", "resourceId": id}),
        "{only}"
    );
    for sample in only["samples"].as_array().unwrap() {
        let keys: Vec<&String> = sample["totals"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["memory"], "{sample}");
    }

    // The rollup: per-minute buckets of the same samples, the deployment as a marker and the
    // app as the top contributor.
    let rollup = member
        .get(&format!(
            "/runtime-monitoring/rollup?scope.resourceId={id}&bucket=minute\
             &includeDeploymentMarkers=true&includeTopContributors=true"
        ))
        .await
        .ok();
    assert_eq!(rollup["schemaVersion"], "runtime-monitoring.rollup/v1");
    assert_eq!(rollup["bucket"], "minute");
    let cpu = rollup["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["signal"] == "cpu")
        .unwrap_or_else(|| panic!("a CPU series in {rollup}"));
    let point = &cpu["points"][0];
    assert!(point["sampleCount"].as_u64().unwrap() >= 1, "{rollup}");
    let (from, to) = (
        point["from"].as_str().unwrap(),
        point["to"].as_str().unwrap(),
    );
    let second = |t: &str| {
        t.parse::<k8s_openapi::jiff::Timestamp>()
            .unwrap()
            .as_second()
    };
    assert_eq!(second(to) - second(from), 60, "{point}");
    assert_eq!(
        point["totals"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["cpu"],
        "a series holds its own signal: {point}"
    );
    assert!(
        rollup["totals"]["memory"]["containerUsedBytes"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{rollup}"
    );
    let markers = rollup["deploymentMarkers"].as_array().unwrap();
    let marker = markers
        .iter()
        .find(|m| m["deploymentId"] == deployment.as_str())
        .unwrap_or_else(|| panic!("the deployment's marker in {rollup}"));
    assert_eq!(marker["resourceId"], id.as_str(), "{marker}");
    assert_eq!(marker["environmentId"], prod.as_str(), "{marker}");
    assert_eq!(marker["status"], "succeeded", "{marker}");
    assert_eq!(
        marker["label"],
        format!("Deployment {deployment} succeeded"),
        "{marker}"
    );
    assert_eq!(marker["correlation"], "time", "{marker}");
    let top = &rollup["topContributors"][0];
    assert_eq!(
        top["scope"],
        json!({"kind": "resource", "resourceId": id}),
        "{rollup}"
    );
    assert!(
        top["totals"]["memory"]["containerUsedBytes"].is_number(),
        "{rollup}"
    );
    assert!(top["sampleCount"].as_u64().unwrap() >= 1, "{rollup}");

    // The usage stream: a snapshot at once, then another; the app's container and image
    // attributed to its project and environment.
    let stream = format!("/runtime-usage/inspect/stream?scope.projectId={shop}&intervalSeconds=5");
    let (status, content_type, snapshots, text) = follow(&member, &stream, 2).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    assert_eq!(snapshots.len(), 2, "{text}");
    let snapshot = &snapshots[0];
    assert_eq!(snapshot["schemaVersion"], "runtime-usage.inspect/v1");
    assert_eq!(snapshot["freshness"], "live", "{snapshot}");
    assert!(
        snapshot["totals"]["memory"]["containerUsedBytes"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{snapshot}"
    );
    assert_eq!(
        snapshot["scope"],
        json!({"kind": "project", "projectId": shop}),
        "{snapshot}"
    );
    let resource = snapshot["byResource"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["scope"]["resourceId"] == id.as_str())
        .unwrap_or_else(|| panic!("the app in byResource: {snapshot}"));
    assert_eq!(resource["ownership"], "attributed");
    assert_eq!(resource["scope"]["kind"], "resource");
    assert!(resource["totals"]["memory"]["containerUsedBytes"].is_number());
    assert_eq!(resource["currentDeploymentId"], deployment.as_str());
    assert_eq!(
        snapshot["byProject"][0]["scope"]["projectId"],
        shop.as_str()
    );
    assert_eq!(
        snapshot["byEnvironment"][0]["scope"]["environmentId"],
        prod.as_str()
    );
    let artifacts = snapshot["artifacts"].as_array().unwrap();
    for kind in ["active-runtime", "docker-image"] {
        let artifact = artifacts
            .iter()
            .find(|a| a["kind"] == kind && a["resourceId"] == id.as_str())
            .unwrap_or_else(|| panic!("a {kind} artifact of the app: {snapshot}"));
        assert_eq!(artifact["projectId"], shop.as_str(), "{artifact}");
        assert_eq!(artifact["environmentId"], prod.as_str(), "{artifact}");
        assert_eq!(artifact["ownership"], "attributed", "{artifact}");
        assert_eq!(artifact["reclaimable"], "no", "{artifact}");
        if kind == "active-runtime" {
            assert!(artifact["bytes"].is_u64(), "its writable layer: {artifact}");
        }
    }
    assert!(
        snapshot["warnings"][0]["code"] == "partial-diagnostic",
        "{snapshot}"
    );
    invalid(
        member
            .get("/runtime-usage/inspect/stream?intervalSeconds=1")
            .await,
        "intervalSeconds",
    );

    // Bad input names its field and changes nothing.
    let base = "/runtime-monitoring/samples";
    let from = format!("{base}?window.from=2026-01-01T00:00:00%2B01:00");
    invalid(member.get(&from).await, "window.from");
    invalid(member.get(&format!("{base}?limit=0")).await, "limit");
    invalid(member.get(&format!("{base}?limit=721")).await, "limit");
    invalid(member.get(&format!("{base}?signals=gpu")).await, "signals");
    invalid(member.get(&format!("{base}?signals=load")).await, "signals");
    invalid(
        member.get(&format!("{base}?scope.kind=galaxy")).await,
        "scope.kind",
    );
    let rollup = "/runtime-monitoring/rollup";
    invalid(member.get(rollup).await, "bucket");
    invalid(member.get(&format!("{rollup}?bucket=week")).await, "bucket");
    let two_days = "window.from=2026-01-01T00:00:00Z&window.to=2026-01-03T00:00:00Z";
    invalid(
        member
            .get(&format!("{rollup}?bucket=minute&{two_days}"))
            .await,
        "bucket",
    );
    invalid(
        member.get(&format!("{rollup}?bucket=hour&limit=5")).await,
        "limit",
    );

    // Another organization sees none of it.
    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Owner).await.rest;
    outsider
        .get(&format!("{base}?scope.resourceId={id}"))
        .await
        .error(404, "not_found");

    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}

/// `docker` on the stack's Docker (the local server's), failing the test when it fails.
fn docker(args: &[&str]) -> String {
    let output = std::process::Command::new("docker")
        .args(args)
        .output()
        .expect("docker runs");
    assert!(output.status.success(), "docker {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// The artifact of `kind` named `runtime_id` in the next snapshots of `stream`, once present.
async fn wait_artifact(rest: &Rest, stream: &str, kind: &str, runtime_id: &str) -> Value {
    eventually(WAIT, &format!("a {kind} artifact {runtime_id}"), || async {
        let (_, _, snapshots, _) = follow(rest, stream, 1).await;
        snapshots[0]["artifacts"]
            .as_array()?
            .iter()
            .find(|a| a["kind"] == kind && a["runtimeId"] == runtime_id)
            .cloned()
    })
    .await
}

#[tokio::test]
async fn images_volumes_and_the_build_cache_are_reported_with_their_bytes() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    // A volume nothing mounts and no resource declares, holding 2 MiB.
    let idle = format!("berth-idle-{}", random_suffix());
    docker(&["volume", "create", &idle]);
    let mountpoint = docker(&["volume", "inspect", "-f", "{{.Mountpoint}}", &idle]);
    std::fs::write(format!("{mountpoint}/blob"), vec![7u8; 2 << 20]).unwrap();

    let (server, _port) = ready_server(&admin).await;
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let slug = format!("disk{}", random_suffix());
    let created = member
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Disk", "slug": slug,
                "kind": "application", "serverId": server,
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
                "networkProfile": {"internalPort": 8080},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    wait_listed_with(&member, &id, "succeeded").await;
    // A volume the app declares and mounts, from its next deployment on.
    let data = crate::shim_storage_volumes::named_volume(&member, &shop, &prod, "Data").await;
    member
        .post(
            &format!("/resources/{id}/storage-attachments"),
            json!({"storageVolumeId": data, "destinationPath": "/data"}),
        )
        .await
        .ok();
    let body =
        json!({"projectId": shop, "environmentId": prod, "serverId": server, "resourceId": id});
    let (status, _, text) = crate::shim_deployments_stream::stream(&member, &body).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("\"succeeded\""), "{text}");

    let stream = "/runtime-usage/inspect/stream?intervalSeconds=5";
    let image = wait_artifact(&member, stream, "docker-image", "berth/sample-app:1").await;
    assert_eq!(image["resourceId"], id.as_str(), "{image}");
    assert_eq!(image["projectId"], shop.as_str(), "{image}");
    assert_eq!(image["ownership"], "attributed", "{image}");
    assert!(image["bytes"].as_u64().unwrap() > 0, "{image}");
    assert_eq!(image["reclaimable"], "no", "{image}");
    assert!(
        image["reclaimBlockedReason"]
            .as_str()
            .unwrap()
            .contains("containers use the image"),
        "{image}"
    );

    let declared = berth_crds::resource::volume_name(&org.namespace, &data);
    let volume = wait_artifact(&member, stream, "volume", &declared).await;
    assert_eq!(volume["resourceId"], id.as_str(), "{volume}");
    assert_eq!(volume["environmentId"], prod.as_str(), "{volume}");
    assert!(volume["bytes"].is_u64(), "{volume}");
    assert_eq!(volume["reclaimable"], "no", "{volume}");

    let unused = wait_artifact(&member, stream, "volume", &idle).await;
    assert_eq!(unused["ownership"], "unattributed", "{unused}");
    assert!(unused["bytes"].as_u64().unwrap() >= 2 << 20, "{unused}");
    assert_eq!(
        unused["inodeCount"], 2,
        "its directory and one file: {unused}"
    );
    assert_eq!(unused["reclaimable"], "yes", "{unused}");
    assert_eq!(unused["resourceId"], Value::Null, "{unused}");

    // The redeploy replaced the container: wait until a sample has seen the new one.
    let snapshot = eventually(WAIT, "a running container in the snapshot", || async {
        let (_, _, snapshots, _) = follow(&member, stream, 1).await;
        let artifacts = snapshots[0]["artifacts"].as_array()?;
        artifacts
            .iter()
            .any(|a| a["kind"] == "active-runtime")
            .then(|| snapshots[0].clone())
    })
    .await;
    let artifacts = snapshot["artifacts"].as_array().unwrap();
    let cache = artifacts
        .iter()
        .find(|a| a["kind"] == "docker-build-cache" && a["serverId"] == server.as_str())
        .unwrap_or_else(|| panic!("the server's build cache: {snapshot}"));
    assert!(cache["bytes"].is_u64(), "{cache}");
    // Another organization's containers on the same machine are not this one's.
    let running = artifacts.iter().filter(|a| a["kind"] == "active-runtime");
    assert!(
        running.clone().all(|a| a["projectId"] == shop.as_str()),
        "{snapshot}"
    );
    // A scope naming the project leaves out what no resource of it owns.
    let scoped = format!("{stream}&scope.projectId={shop}");
    let (_, _, snapshots, _) = follow(&member, &scoped, 1).await;
    let artifacts = snapshots[0]["artifacts"].as_array().unwrap();
    assert!(
        artifacts.iter().all(|a| a["projectId"] == shop.as_str()),
        "{}",
        snapshots[0]
    );
    assert!(
        artifacts.iter().any(|a| a["kind"] == "volume"),
        "{}",
        snapshots[0]
    );

    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
    docker(&["volume", "rm", &idle]);
    let _ = std::process::Command::new("docker")
        .args(["volume", "rm", &declared])
        .output();
}

//! PodDisruptionBudgets for Berth's own Deployments, written by the controller in the cluster.
//!
//! No static manifest can carry them for every Kubernetes version `manifests/` supports:
//! policy/v1 is served from 1.21 on and policy/v1beta1 is gone from 1.25, and one
//! PodDisruptionBudget that the API server does not know fails `kubectl apply -k`. So the
//! controller asks the API server which version it serves and applies one budget per Deployment
//! labelled `app.kubernetes.io/part-of=berth` in its namespace, owned by that Deployment (gone
//! with it). `maxUnavailable: 1` keeps one of two replicas through a drain, and lets a drain
//! evict a single replica instead of blocking it forever.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};

use crate::context::FIELD_MANAGER;

/// The label that marks Berth's own Deployments (manifests/deployment/).
const PART_OF: &str = "app.kubernetes.io/part-of=berth";
const GROUP: &str = "policy";
const KIND: &str = "PodDisruptionBudget";

/// The newest policy version with PodDisruptionBudgets that the API server serves.
pub fn policy_version(serves_v1: bool) -> &'static str {
    if serves_v1 { "v1" } else { "v1beta1" }
}

/// The budget of one Deployment: its own selector, one pod unavailable at most, owned by the
/// Deployment. None when the Deployment has no name, uid or selector yet.
pub fn budget_for(deployment: &Deployment, version: &str) -> Option<Value> {
    let name = deployment.metadata.name.as_deref()?;
    let uid = deployment.metadata.uid.as_deref()?;
    let selector = &deployment.spec.as_ref()?.selector;
    Some(json!({
        "apiVersion": format!("{GROUP}/{version}"),
        "kind": KIND,
        "metadata": {
            "name": name,
            "labels": {
                "app.kubernetes.io/name": name,
                "app.kubernetes.io/part-of": "berth",
            },
            "ownerReferences": [{
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": name,
                "uid": uid,
            }],
        },
        "spec": {
            "maxUnavailable": 1,
            "selector": selector,
        },
    }))
}

/// Applies the budgets in `namespace` until it works once (the API server may be restarting
/// while the pod starts); a shutdown stops the retries.
pub async fn keep_applying(client: Client, namespace: String) {
    let mut pause = Duration::from_secs(1);
    loop {
        match apply_all(&client, &namespace).await {
            Ok(names) => {
                tracing::info!(budgets = %names.join(", "), "PodDisruptionBudgets applied");
                return;
            }
            Err(error) => {
                tracing::warn!(%error, retry_in = ?pause, "could not apply PodDisruptionBudgets");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(60));
            }
        }
    }
}

async fn apply_all(client: &Client, namespace: &str) -> Result<Vec<String>, kube::Error> {
    let version = policy_version(serves_policy_v1(client).await?);
    let resource = ApiResource {
        group: GROUP.into(),
        version: version.into(),
        api_version: format!("{GROUP}/{version}"),
        kind: KIND.into(),
        plural: "poddisruptionbudgets".into(),
    };
    let budgets = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource);
    let deployments = Api::<Deployment>::namespaced(client.clone(), namespace)
        .list(&ListParams::default().labels(PART_OF))
        .await?;
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut applied = Vec::new();
    for deployment in &deployments.items {
        let Some(budget) = budget_for(deployment, version) else {
            continue;
        };
        let name = deployment.name_any();
        budgets.patch(&name, &params, &Patch::Apply(budget)).await?;
        applied.push(format!("{name} ({})", resource.api_version));
    }
    Ok(applied)
}

/// Whether the API server lists PodDisruptionBudgets under policy/v1 (Kubernetes 1.21+).
async fn serves_policy_v1(client: &Client) -> Result<bool, kube::Error> {
    let version = format!("{GROUP}/v1");
    match client.list_api_group_resources(&version).await {
        Ok(list) => Ok(list.resources.iter().any(|r| r.kind == KIND)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::DeploymentSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
    use std::collections::BTreeMap;

    fn deployment(uid: Option<&str>) -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                name: Some("berth-shim".into()),
                uid: uid.map(Into::into),
                ..Default::default()
            },
            spec: Some(DeploymentSpec {
                selector: LabelSelector {
                    match_labels: Some(BTreeMap::from([(
                        "app.kubernetes.io/name".to_string(),
                        "berth-shim".to_string(),
                    )])),
                    ..Default::default()
                },
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn kubernetes_1_20_gets_v1beta1_and_later_ones_v1() {
        assert_eq!(policy_version(false), "v1beta1");
        assert_eq!(policy_version(true), "v1");
    }

    #[test]
    fn a_budget_keeps_the_deployments_selector_and_is_owned_by_it() {
        let budget = budget_for(&deployment(Some("u-1")), "v1beta1").unwrap();
        assert_eq!(
            budget,
            json!({
                "apiVersion": "policy/v1beta1",
                "kind": "PodDisruptionBudget",
                "metadata": {
                    "name": "berth-shim",
                    "labels": {
                        "app.kubernetes.io/name": "berth-shim",
                        "app.kubernetes.io/part-of": "berth",
                    },
                    "ownerReferences": [{
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "berth-shim",
                        "uid": "u-1",
                    }],
                },
                "spec": {
                    "maxUnavailable": 1,
                    "selector": {"matchLabels": {"app.kubernetes.io/name": "berth-shim"}},
                },
            })
        );
    }

    #[test]
    fn a_deployment_not_yet_stored_gets_no_budget() {
        assert_eq!(budget_for(&deployment(None), "v1"), None);
    }
}

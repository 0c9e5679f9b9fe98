//! Waits for Berth's CRDs to be established before any controller starts watching them.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client};

/// Polls until every CRD of `berth_crds::all_crds()` reports `Established=True`.
pub async fn wait_for_crds(client: &Client, timeout: Duration) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let wanted: Vec<String> = berth_crds::all_crds()
        .into_iter()
        .filter_map(|crd| crd.metadata.name)
        .collect();
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let mut missing = Vec::new();
        for name in &wanted {
            let established = api
                .get_opt(name)
                .await?
                .is_some_and(|crd| is_established(&crd));
            if !established {
                missing.push(name.as_str());
            }
        }
        if missing.is_empty() {
            tracing::info!(count = wanted.len(), "CRDs established");
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            anyhow::bail!(
                "CRDs not established after {timeout:?}: {} (install them with `kubectl apply --server-side -f manifests/crds/`)",
                missing.join(", ")
            );
        }
        tracing::info!(missing = %missing.join(", "), "waiting for CRDs");
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

fn is_established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
}

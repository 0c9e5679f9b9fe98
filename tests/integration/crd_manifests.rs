//! The generated CRDs install on the real API server and become Established.

use std::time::Duration;

use berth_tests::{client, eventually};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;

#[tokio::test]
async fn every_crd_is_installed_and_established() {
    let client = client().await;
    let api: Api<CustomResourceDefinition> = Api::all(client);
    for crd in berth_crds::all_crds() {
        let name = crd.metadata.name.clone().unwrap();
        let installed = eventually(
            Duration::from_secs(30),
            &format!("{name} established"),
            || {
                let api = api.clone();
                let name = name.clone();
                async move {
                    let crd = api.get_opt(&name).await.ok()??;
                    let established = crd
                        .status
                        .as_ref()?
                        .conditions
                        .as_ref()?
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True");
                    established.then_some(crd)
                }
            },
        )
        .await;
        // What is installed is what the code generates (hack/test.sh applies manifests/crds).
        assert_eq!(
            installed.spec.versions[0].schema, crd.spec.versions[0].schema,
            "{name}: installed schema differs from the code"
        );
    }
}

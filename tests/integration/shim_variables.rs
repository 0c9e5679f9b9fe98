//! Variables of one Resource written both over REST and with `kubectl apply --server-side`
//! (GitOps): each owns its own entries of the same list, and empty values import and set as
//! empty strings.

use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, eventually, kubectl, random_suffix};
use kube::{Api, Client};
use serde_json::json;

use crate::shim_projects_envs::{environment, project};

const WAIT: Duration = Duration::from_secs(30);

/// The Resource's YAML as a GitOps repository holds it, with `variables` `KEY: value` pairs.
fn resource_yaml(
    namespace: &str,
    id: &str,
    project: &str,
    env: &str,
    vars: &[(&str, &str)],
) -> String {
    let variables: String = vars
        .iter()
        .map(|(key, value)| format!("    - key: {key}\n      value: \"{value}\"\n"))
        .collect();
    format!(
        "apiVersion: berth.dev/v1alpha1\nkind: Resource\nmetadata:\n  name: {id}\n  namespace: {namespace}\n\
         spec:\n  projectId: {project}\n  environmentId: {env}\n  name: Web\n  kind: application\n  variables:\n{variables}"
    )
}

/// `kubectl apply --server-side` as a user (or Flux) runs it; panics with kubectl's message.
fn apply_yaml(yaml: &str) {
    let output = kubectl(&["apply", "--server-side", "-f", "-"], Some(yaml));
    assert!(
        output.status.success(),
        "kubectl apply --server-side failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `(key, value)` of every plain variable in the stored spec, sorted.
async fn stored(client: &Client, namespace: &str, id: &str) -> Vec<(String, String)> {
    let resource = Api::<Resource>::namespaced(client.clone(), namespace)
        .get(id)
        .await
        .expect("resource");
    let mut pairs: Vec<_> = resource
        .spec
        .variables
        .into_iter()
        .map(|v| (v.key, v.value))
        .collect();
    pairs.sort();
    pairs
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut pairs: Vec<_> = expected
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    pairs.sort();
    pairs
}

async fn visible(rest: &Rest, id: &str) {
    eventually(WAIT, "resource visible to the shim", || async {
        (rest.get(&format!("/resources/{id}/secrets")).await.status == 200).then_some(())
    })
    .await;
}

#[tokio::test]
async fn rest_and_kubectl_apply_own_different_variables_of_one_resource() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let member = org.user(OrganizationRole::Member).await;
    let rest = &member.rest;
    let project_id = project(rest, "Shop").await;
    let env_id = environment(rest, &project_id, "prod").await;
    let id = format!("res-v{}", random_suffix());
    let yaml =
        |vars: &[(&str, &str)]| resource_yaml(&org.namespace, &id, &project_id, &env_id, vars);

    apply_yaml(&yaml(&[("FROM_GIT", "one")]));
    visible(rest, &id).await;
    let base = format!("/resources/{id}/variables");
    rest.post(&base, json!({"key": "FROM_REST", "value": "rest"}))
        .await
        .ok();

    // Re-applying the YAML with another variable keeps the REST one: no conflict.
    apply_yaml(&yaml(&[("FROM_GIT", "one"), ("ALSO_GIT", "two")]));
    assert_eq!(
        stored(&client, &org.namespace, &id).await,
        pairs(&[
            ("FROM_GIT", "one"),
            ("ALSO_GIT", "two"),
            ("FROM_REST", "rest")
        ])
    );
    // Each side removes only its own: a variable dropped from the YAML goes, the REST one stays.
    apply_yaml(&yaml(&[("ALSO_GIT", "two")]));
    assert_eq!(
        stored(&client, &org.namespace, &id).await,
        pairs(&[("ALSO_GIT", "two"), ("FROM_REST", "rest")])
    );
    // A REST change of another setting leaves the YAML's variables alone, and so does setting a
    // second REST variable.
    rest.post(
        &format!("/resources/{id}/network-profile"),
        json!({"networkProfile": {"internalPort": 8080}}),
    )
    .await
    .ok();
    rest.post(&base, json!({"key": "FROM_REST_2", "value": "r2"}))
        .await
        .ok();
    apply_yaml(&yaml(&[("ALSO_GIT", "changed in git")]));
    assert_eq!(
        stored(&client, &org.namespace, &id).await,
        pairs(&[
            ("ALSO_GIT", "changed in git"),
            ("FROM_REST", "rest"),
            ("FROM_REST_2", "r2")
        ])
    );
    // A REST delete removes the entry whoever applied it.
    rest.delete(&format!("{base}/ALSO_GIT"), json!({}))
        .await
        .ok();
    rest.delete(&format!("{base}/FROM_REST"), json!({}))
        .await
        .ok();
    assert_eq!(
        stored(&client, &org.namespace, &id).await,
        pairs(&[("FROM_REST_2", "r2")])
    );
}

#[tokio::test]
async fn env_import_and_set_keep_empty_values() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let member = org.user(OrganizationRole::Member).await;
    let rest = &member.rest;
    let project_id = project(rest, "Shop").await;
    let env_id = environment(rest, &project_id, "prod").await;
    let id = format!("res-e{}", random_suffix());
    apply_yaml(&resource_yaml(
        &org.namespace,
        &id,
        &project_id,
        &env_id,
        &[("FROM_GIT", "")],
    ));
    visible(rest, &id).await;

    let content = "# settings\n\nEMPTY=\nexport EXPORTED=\nDOUBLE=\"\"\nSINGLE=''\nSPACED = \nLAST=set\nLAST=\n";
    let result = rest
        .post(
            &format!("/resources/{id}/variables/import"),
            json!({"content": content}),
        )
        .await
        .ok();
    let imported: Vec<(&str, &str)> = result["importedEntries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["key"].as_str().unwrap(), e["value"].as_str().unwrap()))
        .collect();
    let empty = |keys: &[&'static str]| keys.iter().map(|k| (*k, "")).collect::<Vec<_>>();
    assert_eq!(
        imported,
        empty(&["EMPTY", "EXPORTED", "DOUBLE", "SINGLE", "SPACED", "LAST"])
    );
    assert_eq!(
        result["duplicateOverrides"],
        json!([{"key": "LAST", "exposure": "runtime", "firstLine": 8, "lastLine": 9, "rule": "last-wins"}])
    );
    rest.post(
        &format!("/resources/{id}/variables"),
        json!({"key": "SET_EMPTY", "value": ""}),
    )
    .await
    .ok();
    let mut expected = empty(&[
        "FROM_GIT",
        "EMPTY",
        "EXPORTED",
        "DOUBLE",
        "SINGLE",
        "SPACED",
        "LAST",
        "SET_EMPTY",
    ]);
    expected.sort();
    assert_eq!(stored(&client, &org.namespace, &id).await, pairs(&expected));
    // The effective configuration shows them as empty strings too.
    let config = rest
        .get(&format!("/resources/{id}/effective-config"))
        .await
        .ok();
    let entries = config["effectiveEntries"].as_array().unwrap();
    for (key, _) in &expected {
        let entry = entries.iter().find(|e| e["key"] == *key);
        assert_eq!(
            entry.map(|e| &e["value"]),
            Some(&json!("")),
            "{key}: {config}"
        );
    }
}

//! Every manifest under `examples/` applies server-side, and applying it again changes nothing.

use std::path::{Path, PathBuf};

use berth_tests::{kubectl, repo_root};
use serde_json::Value;

/// YAML files under `dir` that hold Kubernetes objects (kustomizations excluded).
fn manifest_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("readable examples dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            files.extend(manifest_files(&path));
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml")
            && path.file_name().is_some_and(|n| n != "kustomization.yaml")
        {
            let text = std::fs::read_to_string(&path).unwrap();
            if text.contains("apiVersion:") && text.contains("kind:") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// `generation` and `spec` of every object in `file`, as the API server holds them.
fn observed(file: &Path) -> Vec<(String, Value, Value)> {
    let output = kubectl(&["get", "-f", file.to_str().unwrap(), "-o", "json"], None);
    assert!(
        output.status.success(),
        "get {}: {}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let items = match json.get("items") {
        Some(Value::Array(items)) => items.clone(),
        _ => vec![json],
    };
    items
        .into_iter()
        .map(|item| {
            let name = format!(
                "{}/{}",
                item["kind"].as_str().unwrap_or_default(),
                item["metadata"]["name"].as_str().unwrap_or_default()
            );
            (
                name,
                item["metadata"]["generation"].clone(),
                item["spec"].clone(),
            )
        })
        .collect()
}

fn apply(file: &Path) -> String {
    let output = kubectl(
        &["apply", "--server-side", "-f", file.to_str().unwrap()],
        None,
    );
    assert!(
        output.status.success(),
        "{} does not apply: {}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn every_example_applies_and_reapplying_changes_nothing() {
    let examples = repo_root().join("examples");
    let files = manifest_files(&examples);
    assert!(!files.is_empty(), "no manifests found under examples/");
    // The quickstart organization owns the namespace the other examples live in.
    let organization = examples.join("quickstart/00-organization.yaml");
    apply(&organization);
    let output = kubectl(
        &[
            "wait",
            "--for=condition=Ready",
            "--timeout=60s",
            "-f",
            organization.to_str().unwrap(),
        ],
        None,
    );
    assert!(
        output.status.success(),
        "quickstart organization not Ready: {}",
        String::from_utf8_lossy(&output.stderr)
    );

    for file in &files {
        apply(file);
    }
    for file in &files {
        let before = observed(file);
        apply(file);
        let after = observed(file);
        assert_eq!(
            before,
            after,
            "re-applying {} changed an object",
            file.display()
        );
    }
}

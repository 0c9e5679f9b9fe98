//! Whatever people upload, the adapters answer with a bundle or an error naming the file —
//! never a panic (the shim would answer 500).

use std::collections::BTreeMap;

use berth_api::migrations::VendorSource;

use super::{PROVIDERS, translate};

/// Inputs shaped like each format, broken in the ways uploads are.
const CONTENTS: &[&str] = &[
    "",
    " ",
    "é",
    "web:",
    "web: ",
    ": start",
    "web: npm start\nweb: again",
    "release: ./migrate\nworker: ✓ run",
    "KEY='unterminated",
    "KEY=\"a\\",
    "KEY=é'\\''x",
    "export =",
    "{",
    "[]",
    "[{}]",
    "[{\"hostname\": 5}]",
    "{\"services\": 5}",
    "{\"services\": {\"x\": {\"networking\": {\"customDomains\": {\"é.example\": {\"port\": -1}}}}}}",
    "{\"services\": {\"x\": {\"variables\": {\"A\": {\"value\": \"${{é.X}}\"}}}}}",
    "{\"name\": \"\", \"env\": {\"A\": {\"generator\": \"secret\"}}, \"formation\": {\"web\": {\"quantity\": \"x\"}}}",
    "{\"apiVersion\": \"railway.appaloft.io/export/v1\", \"kind\": \"RailwayProjectExport\"}",
    "{\"$schema\": \"https://railway.com/railway.schema.json\", \"deploy\": {\"numReplicas\": 99999999999999999999}}",
    "[build]\nbuilder = 5\n[deploy]\nstartCommand = []",
    "services:",
    "services: 5",
    "services:\n  é:\n    image: x\n    ports: [\"abc\", 5, {target: 80}, \"1-2:3-4\"]",
    "services:\n  a:\n    build: {}\n    environment: [\"=\", \"A\", 5]\n    volumes: [\"x\", \":\", \"a:b:c:d\"]\n    healthcheck: {test: 5}\n    command: {a: 1}",
    "services:\n  a:\n    env_file: [5, missing.env]\n    deploy: {replicas: -1}",
    "services:\n  \"\":\n    image: \"\"",
    "x-a: &a {image: x}\nservices:\n  a: *a",
];

#[test]
fn no_upload_makes_an_adapter_panic() {
    for provider in PROVIDERS {
        for (index, content) in CONTENTS.iter().enumerate() {
            for name in [
                "upload",
                "Procfile",
                "app.json",
                "railway.toml",
                "compose.yaml",
            ] {
                let source = VendorSource {
                    provider: provider.into(),
                    files: BTreeMap::from([(name.to_string(), content.to_string())]),
                    target: None,
                    project: None,
                    environment: None,
                };
                let outcome = std::panic::catch_unwind(|| translate(&source));
                assert!(
                    outcome.is_ok(),
                    "{provider} panicked on content #{index} as {name}"
                );
            }
        }
    }
}

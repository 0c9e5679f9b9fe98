//! Steps, inputs, validation, blockers and warnings.

use berth_api::deployments::StartDeployment;
use berth_api::environments::{CreateEnvironment, SetEnvironmentVariable};
use berth_api::migrations::{PlanState, Receipt, Scalar};
use berth_api::projects::CreateProject;
use berth_api::resources::CreateResource;
use berth_api::secrets::CreateSecret;
use berth_api::storage::{AttachStorage, CreateStorageVolume};
use berth_api::variables::SetVariable;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::*;
use crate::plan::resolve_input;

#[test]
fn steps_come_in_berths_order() {
    let plan = fixture_plan();
    assert_eq!(
        ids(&plan),
        [
            "project:create",
            "environment:create",
            "environment-variable:LOG_LEVEL:runtime",
            "volume:create:pgdata",
            "resource:create:db",
            "volume:attach:pgdata:db",
            "deployment:create:db",
            "resource:create:web",
            "resource-secret:web:STRIPE_KEY:runtime",
            "domain:create:shop.example.com",
            "deployment:create:web",
            "resource:create:worker",
            "deployment:create:worker",
        ]
    );
    assert_eq!(plan.state, PlanState::Ready);
    assert_eq!(plan.blockers, []);
    assert_eq!(plan.warnings, Vec::<String>::new());
    let deploy = step(&plan, "deployment:create:web");
    assert_eq!(
        deploy.depends_on,
        [
            "resource:create:web",
            "resource-secret:web:STRIPE_KEY:runtime",
            "domain:create:shop.example.com"
        ]
    );
}

#[test]
fn resource_and_domain_inputs_are_berths_bodies() {
    let plan = fixture_plan();
    assert_eq!(
        Value::Object(step(&plan, "resource:create:web").input.clone()),
        json!({
            "projectId": {"$ref": "steps.project:create.output.projectId"},
            "environmentId": {"$ref": "steps.environment:create.output.environmentId"},
            "name": "Web",
            "kind": "application",
            "slug": "web",
            "firstDeployment": "on-request",
            "serverId": "srv-1",
            "source": {"kind": "docker-image", "locator": "ghcr.io/acme/web:1.2"},
            "runtimeProfile": {"healthCheck": {"path": "/healthz"}},
            "networkProfile": {"internalPort": 8080, "upstreamProtocol": "http", "exposureMode": "reverse-proxy"},
        })
    );
    assert_eq!(
        Value::Object(step(&plan, "domain:create:shop.example.com").input.clone()),
        json!({
            "projectId": {"$ref": "steps.project:create.output.projectId"},
            "environmentId": {"$ref": "steps.environment:create.output.environmentId"},
            "resourceId": {"$ref": "steps.resource:create:web.output.resourceId"},
            "serverId": "srv-1",
            "domainName": "shop.example.com",
            "proxyKind": "caddy",
            "tlsMode": "auto",
            "certificatePolicy": "auto",
        })
    );
    let secret = step(&plan, "resource-secret:web:STRIPE_KEY:runtime");
    assert_eq!(
        secret.input["value"],
        json!({"$secretRef": "env://STRIPE_KEY"})
    );
    assert_eq!(secret.operation_key, "resources.set-secret");
    let cleanup = secret.cleanup.as_ref().unwrap();
    assert_eq!(
        (cleanup.operation_key.as_str(), cleanup.input.clone()),
        (
            "resources.delete-secret",
            json!({"exposure": "runtime"}).as_object().cloned()
        )
    );
}

fn body<T: DeserializeOwned>(input: Map<String, Value>, path_params: &[&str]) -> T {
    let mut input = input;
    for param in path_params {
        assert!(input.remove(*param).is_some(), "{param}");
    }
    serde_json::from_value(Value::Object(input)).expect("the body of Berth's operation")
}

/// Every input, its placeholders filled, deserializes into the request type of its operation
/// (less its path parameters) and passes that type's checks.
#[test]
fn filled_inputs_deserialize_into_the_request_types() {
    let plan = fixture_plan();
    let mut receipts = Vec::new();
    for step in &plan.steps {
        let input = resolve_input(step, &receipts, &mut |_| Ok("s3cret".into())).unwrap();
        match step.operation_key.as_str() {
            "projects.create" => drop(body::<CreateProject>(input, &[])),
            "environments.create" => drop(body::<CreateEnvironment>(input, &[])),
            "environments.set-variable" => {
                drop(body::<SetEnvironmentVariable>(input, &["environmentId"]))
            }
            "storage-volumes.create" => body::<CreateStorageVolume>(input, &[]).validate().unwrap(),
            "resources.create" => body::<CreateResource>(input, &[]).validate().unwrap(),
            "resources.set-variable" => drop(body::<SetVariable>(input, &["resourceId"])),
            "resources.set-secret" => drop(body::<CreateSecret>(input, &["resourceId"])),
            "resources.attach-storage" => body::<AttachStorage>(input, &["resourceId"])
                .validate()
                .unwrap(),
            "deployments.create" => drop(body::<StartDeployment>(input, &[])),
            "domain-bindings.create" => {
                assert_eq!(input["resourceId"], "id-of-resource:create:web")
            }
            other => panic!("unexpected operation {other}"),
        }
        let output = step
            .produces
            .iter()
            .flat_map(|p| p.keys())
            .map(|name| (name.clone(), Scalar::Text(format!("id-of-{}", step.id))));
        receipts.push(Receipt {
            step_id: step.id.clone(),
            operation_key: step.operation_key.clone(),
            state: "completed".into(),
            output: output.collect(),
            ownership: "created".into(),
        });
    }
}

#[test]
fn duplicates_are_refused_by_field() {
    let cases = [
        (
            with_spec(|s| s["resources"][2]["ref"] = json!("web")),
            "bundle.spec.resources[2].ref",
        ),
        (
            with_spec(|s| {
                s["domains"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"hostname": "shop.EXAMPLE.com ", "resourceRef": "web"}))
            }),
            "bundle.spec.domains[1].hostname",
        ),
        (
            with_spec(|s| {
                s["variables"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"key": "LOG_LEVEL", "value": "debug", "exposure": "runtime"}))
            }),
            "bundle.spec.variables[2].key",
        ),
        (
            with_spec(|s| {
                s["volumes"].as_array_mut().unwrap().push(
                    json!({"ref": "pgdata", "name": "x", "resourceRef": "web", "mountPath": "/x"}),
                )
            }),
            "bundle.spec.volumes[1].ref",
        ),
        (
            with_spec(|s| {
                s["resources"][0]["services"] =
                    json!([{"name": "a", "kind": "web"}, {"name": "a", "kind": "api"}])
            }),
            "bundle.spec.resources[0].services[1].name",
        ),
    ];
    for (value, field) in cases {
        assert_eq!(refused(&value), field);
    }
    // The same key with another exposure, or on a resource, is not a duplicate.
    let ok = with_spec(|s| {
        let variables = s["variables"].as_array_mut().unwrap();
        variables.push(json!({"key": "LOG_LEVEL", "value": "debug", "exposure": "build-time"}));
        variables.push(json!({"key": "LOG_LEVEL", "value": "debug", "exposure": "runtime", "resourceRef": "web"}));
    });
    assert!(plan_of(&ok).is_ok());
}

#[test]
fn shape_errors_name_the_path_and_never_the_value() {
    let unknown = with_spec(|s| s["resources"][0]["colour"] = json!("blue"));
    assert_eq!(refused(&unknown), "bundle.spec.resources[0].colour");
    let missing = with_spec(|s| drop(s["resources"][0].as_object_mut().unwrap().remove("source")));
    assert_eq!(refused(&missing), "bundle.spec.resources[0].source");
    let wrong = with_spec(|s| s["resources"][0]["network"]["internalPort"] = json!("hunter2"));
    let error = plan_of(&wrong).unwrap_err();
    assert_eq!(error.field, "bundle.spec.resources[0].network.internalPort");
    assert!(!error.message.contains("hunter2"), "{}", error.message);
    let mut version = fixture();
    version["apiVersion"] = json!("v2");
    assert_eq!(refused(&version), "bundle.apiVersion");
    let both = with_spec(|s| s["variables"][1]["value"] = json!("sk_live_1"));
    let error = plan_of(&both).unwrap_err();
    assert_eq!(error.field, "bundle.spec.variables[1].secretRef");
    assert!(!error.message.contains("sk_live_1"));
    let secret_value = with_spec(|s| s["variables"][0]["kind"] = json!("secret"));
    assert_eq!(refused(&secret_value), "bundle.spec.variables[0].secretRef");
    let bad_ref = with_spec(|s| s["variables"][1]["secretRef"] = json!("postgres://u:pw@db/x"));
    let error = plan_of(&bad_ref).unwrap_err();
    assert!(!error.message.contains("pw@db"), "{}", error.message);
}

#[test]
fn rules_and_limits_are_4xx() {
    let cases = [
        (
            with_spec(|s| s["resources"] = json!([])),
            "bundle.spec.resources",
        ),
        (
            with_spec(|s| s["resources"][0]["ref"] = json!("Web")),
            "bundle.spec.resources[0].ref",
        ),
        (
            with_spec(|s| s["resources"][0]["ref"] = json!("a".repeat(64))),
            "bundle.spec.resources[0].ref",
        ),
        (
            with_spec(|s| s["resources"][0]["kind"] = json!("lambda")),
            "bundle.spec.resources[0].kind",
        ),
        (
            with_spec(|s| s["resources"][0]["name"] = json!("  ")),
            "bundle.spec.resources[0].name",
        ),
        (
            with_spec(|s| s["resources"][0]["network"]["internalPort"] = json!(0)),
            "bundle.spec.resources[0].network.internalPort",
        ),
        (
            with_spec(|s| s["volumes"][0]["mountPath"] = json!("data")),
            "bundle.spec.volumes[0].mountPath",
        ),
        (
            with_spec(|s| s["domains"][0]["hostname"] = json!("not a host")),
            "bundle.spec.domains[0].hostname",
        ),
        (
            with_spec(|s| s["environment"]["kind"] = json!("prod")),
            "bundle.spec.environment.kind",
        ),
        (
            with_spec(|s| s["metadata"] = json!(null)),
            "bundle.spec.metadata",
        ),
        (
            with_spec(|s| s["project"]["name"] = json!("x".repeat(40_000))),
            "bundle.spec.project.name",
        ),
    ];
    for (value, field) in cases {
        assert_eq!(refused(&value), field);
    }
    let error = plan_of(&with_spec(|s| s["resources"][0]["kind"] = json!("lambda"))).unwrap_err();
    assert!(error.allowed.contains(&"database".to_string()));
    let many = with_spec(|s| {
        let resource = s["resources"][1].clone();
        s["resources"] = (0..201)
            .map(|i| {
                let mut r = resource.clone();
                r["ref"] = json!(format!("r{i}"));
                r
            })
            .collect();
    });
    assert_eq!(refused(&many), "bundle.spec.resources");
    let huge =
        with_spec(|s| s["sourceWarnings"] = (0..40).map(|_| json!("w".repeat(30_000))).collect());
    assert_eq!(refused(&huge), "bundle");
}

#[test]
fn what_berth_cannot_do_blocks_the_plan() {
    let value = with_spec(|s| {
        s["dependencies"] = json!([
            {"ref": "pg", "name": "MySQL", "kind": "mysql", "providerKey": "railway-mysql",
             "bindings": [{"resourceRef": "web", "targetName": "DATABASE_URL"}]},
            {"ref": "cache", "name": "Redis", "kind": "redis", "sourceMode": "imported-external", "providerKey": "upstash",
             "connectionSecretRef": "k8s://redis-conn#url",
             "bindings": [{"resourceRef": "worker", "targetName": "REDIS_URL", "scope": "build-and-runtime"}]}
        ]);
        s["volumes"].as_array_mut().unwrap().push(json!({"ref": "uploads", "name": "uploads", "resourceRef": "missing", "mountPath": "/up"}));
        s["domains"].as_array_mut().unwrap().push(
            json!({"hostname": "db.example.com", "resourceRef": "db", "tlsPolicy": "manual"}),
        );
    });
    let plan = plan_of(&value).unwrap();
    assert_eq!(plan.state, PlanState::Blocked);
    let found: Vec<_> = plan
        .blockers
        .iter()
        .map(|b| (b.code.as_str(), b.path.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            ("dependency_provider_unavailable", "spec.dependencies.pg"),
            ("domain_without_port", "spec.domains.db.example.com"),
            (
                "manual_tls_unsupported",
                "spec.domains.db.example.com.tlsPolicy"
            ),
            ("unknown_resource_ref", "spec.volumes.uploads.resourceRef"),
        ]
    );
    let unknown = plan
        .blockers
        .iter()
        .find(|b| b.code == "unknown_resource_ref")
        .unwrap();
    assert_eq!(
        unknown.message,
        "Volume \"uploads\" references unknown resource \"missing\"."
    );
    assert!(plan.blockers[0].message.contains(
        "a mysql without a connectionSecretRef: Berth provisions only postgres and redis"
    ));
    assert!(
        plan.blockers[0]
            .message
            .contains("kind database with an image")
    );
    assert!(!ids(&plan).iter().any(|id| id.contains("uploads")));
    // An external Redis is imported (its URL the secret reference) and bound.
    let import = step(&plan, "dependency:import:cache");
    assert_eq!(
        import.input["connectionUrl"],
        json!({"$secretRef": "k8s://redis-conn#url"})
    );
    let bind = step(&plan, "dependency:bind:cache:worker:REDIS_URL");
    assert_eq!(bind.operation_key, "resources.bind-dependency");
    assert_eq!(bind.input["targetName"], "REDIS_URL");
    assert!(
        step(&plan, "deployment:create:worker")
            .depends_on
            .contains(&bind.id)
    );
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.contains("REDIS_URL") && w.contains("runtime only"))
    );
    let report: Vec<_> = plan
        .variable_report
        .iter()
        .map(|r| (r.key.as_str(), r.migrated_as.as_str()))
        .collect();
    assert_eq!(
        report,
        [
            ("LOG_LEVEL", "value"),
            ("STRIPE_KEY", "secret-ref"),
            ("REDIS_URL", "dependency-binding"),
            ("DATABASE_URL", "not-migrated")
        ]
    );
}

#[test]
fn an_empty_target_blocks_but_the_steps_remain() {
    let plan = plan_of(&with_spec(|s| {
        s["target"]["deploymentTargetId"] = json!("\"\"")
    }))
    .unwrap();
    assert_eq!(plan.blockers[0].code, "target_missing");
    assert_eq!(step(&plan, "deployment:create:web").input["serverId"], "");
    assert!(
        !step(&plan, "resource:create:web")
            .input
            .contains_key("serverId")
    );
    assert_eq!(ids(&plan).len(), fixture_plan().steps.len());
}

#[test]
fn source_blockers_are_copied_and_sorted() {
    let plan = plan_of(&with_spec(|s| {
        s["sourceBlockers"] = json!([{"code": "b", "path": "z", "message": "m"}, {"code": "a", "path": "a", "message": "m"}]);
        s["sourceWarnings"] = json!(["second", "first", "second"]);
    }))
    .unwrap();
    let paths: Vec<_> = plan.blockers.iter().map(|b| b.path.as_str()).collect();
    assert_eq!(paths, ["a", "z"]);
    assert_eq!(plan.warnings, ["first", "second"]);
}

#[test]
fn secret_looking_values_warn_without_the_value() {
    let plan = plan_of(&with_spec(|s| {
        let variables = s["variables"].as_array_mut().unwrap();
        variables.push(json!({"key": "DB_PASSWORD", "value": "hunter2", "exposure": "runtime", "resourceRef": "web"}));
        variables.push(json!({"key": "DATABASE_URL", "value": "postgres://app:pw-9@db:5432/app", "exposure": "runtime"}));
        variables.push(json!({"key": "HOMEPAGE", "value": "https://example.com/a@b", "exposure": "runtime"}));
    }))
    .unwrap();
    assert_eq!(
        plan.warnings,
        [
            "Variable DATABASE_URL of the environment looks like a secret but is migrated as a plain value; give it a secretRef.",
            "Variable DB_PASSWORD of resource web looks like a secret but is migrated as a plain value; give it a secretRef.",
        ]
    );
    let text =
        serde_json::to_string(&(&plan.warnings, &plan.blockers, &plan.variable_report)).unwrap();
    assert!(!text.contains("hunter2") && !text.contains("pw-9"));
}

#[test]
fn environment_secrets_are_one_step_not_one_per_resource() {
    let plan = plan_of(&with_spec(|s| {
        let variables = s["variables"].as_array_mut().unwrap();
        variables.push(json!({"key": "SENTRY_DSN", "secretRef": "k8s://sentry#dsn", "exposure": "runtime"}));
        variables.push(json!({"key": "SENTRY_DSN", "value": "off", "exposure": "runtime", "resourceRef": "worker"}));
    }))
    .unwrap();
    let ids = ids(&plan);
    assert!(ids.contains(&"environment-secret:SENTRY_DSN:runtime"));
    for resource in ["db", "web", "worker"] {
        let fanned_out = format!("resource-secret:{resource}:SENTRY_DSN:runtime");
        assert!(!ids.contains(&fanned_out.as_str()), "{fanned_out}");
    }
    // The worker's own variable stays its own (and wins over the environment's secret).
    assert!(ids.contains(&"resource-variable:worker:SENTRY_DSN:runtime"));
}

#[test]
fn sources_berth_cannot_deploy_block_and_unmapped_fields_warn() {
    let plan = plan_of(&with_spec(|s| {
        s["resources"][0]["source"]["imageDigest"] = json!("sha256:abc");
        s["resources"][1]["source"] = json!({"kind": "helm-chart", "locator": "oci://charts/w"});
        s["resources"][1]["runtime"]["strategy"] = json!("helm");
        s["resources"][2]["source"]["gitRef"] = json!("main");
        s["project"]["organizationId"] = json!("org-1");
        s["volumes"][0]["sizeMb"] = json!(1024);
    }))
    .unwrap();
    let found: Vec<_> = plan
        .blockers
        .iter()
        .map(|b| (b.code.as_str(), b.path.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            ("resource_input_invalid", "spec.resources.db"),
            (
                "runtime_strategy_unsupported",
                "spec.resources.worker.runtime.strategy"
            ),
            (
                "source_kind_unsupported",
                "spec.resources.worker.source.kind"
            ),
        ]
    );
    assert!(plan.blockers[0].message.contains("source.gitRef"));
    let web = step(&plan, "resource:create:web");
    assert!(
        !web.input["source"]
            .as_object()
            .unwrap()
            .contains_key("imageDigest")
    );
    assert_eq!(plan.warnings.len(), 3, "{:?}", plan.warnings);
    assert!(plan.warnings.iter().any(|w| w.contains("imageDigest")));
    assert!(plan.warnings.iter().any(|w| w.contains("organizationId")));
    assert!(plan.warnings.iter().any(|w| w.contains("sizeMb")));
}

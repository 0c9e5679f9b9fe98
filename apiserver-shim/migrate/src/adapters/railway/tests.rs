//! The Railway example folder, content recognition and the secret rules.

use std::collections::BTreeMap;

use berth_api::migrations::MigrationBundle;

use super::translate;
use crate::adapters::Defaults;

const ENV_CONFIG: &str =
    include_str!("../../../../../examples/migrate/railway/environment-config.json");
const WEB_CODE: &str = include_str!("../../../../../examples/migrate/railway/web.railway.json");

/// (resourceRef, key, value, secretRef) of a variable.
type VarRow<'a> = (Option<&'a str>, &'a str, Option<&'a str>, Option<&'a str>);

fn run(files: &[(&str, &str)]) -> MigrationBundle {
    let files: BTreeMap<String, String> = files
        .iter()
        .map(|(name, content)| (name.to_string(), content.to_string()))
        .collect();
    translate(&files, &Defaults::default()).unwrap()
}

const WEB: &str = "services.2b1f9c40-5d3e-4a8b-9c1d-0e7f6a5b4c31";
const PG: &str = "services.9e8d7c6b-5a4f-4e3d-9c2b-1a0f9e8d7c63";

fn example() -> MigrationBundle {
    run(&[
        ("environment-config.json", ENV_CONFIG),
        ("web.railway.json", WEB_CODE),
    ])
}

#[test]
fn example_resources_ports_and_domains() {
    let spec = example().spec;
    let refs: Vec<(&str, &str, &str)> = spec
        .resources
        .iter()
        .map(|r| {
            (
                r.reference.as_str(),
                r.kind.as_str(),
                r.source.locator.as_str(),
            )
        })
        .collect();
    assert_eq!(
        refs,
        [
            ("web", "application", "berth/sample-app:1"),
            ("worker", "worker", "berth/sample-app:1"),
        ]
    );
    assert_eq!(
        spec.resources[0].network.as_ref().unwrap().internal_port,
        8080
    );
    assert_eq!(
        spec.resources[0].runtime.health_check_path.as_deref(),
        Some("/healthz")
    );
    assert!(spec.resources[1].network.is_none());
    assert_eq!(
        spec.resources[1].runtime.start_command.as_deref(),
        Some("sleep infinity")
    );
    let domains: Vec<(&str, &str)> = spec
        .domains
        .iter()
        .map(|d| (d.hostname.as_str(), d.resource_ref.as_str()))
        .collect();
    assert_eq!(domains, [("shop.example.test", "web")]);
    // Postgres is a managed dependency: Berth gives it a data volume of its own.
    assert!(spec.volumes.is_empty());
    assert!(spec.source_blockers.is_empty());
}

#[test]
fn example_variables_and_dependency() {
    let spec = example().spec;
    let vars: Vec<VarRow> = spec
        .variables
        .iter()
        .map(|v| {
            (
                v.resource_ref.as_deref(),
                v.key.as_str(),
                v.value.as_deref(),
                v.secret_ref.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        vars,
        [
            (Some("web"), "LOG_LEVEL", Some("info"), None),
            (
                Some("web"),
                "SESSION_SECRET",
                None,
                Some("env://SESSION_SECRET")
            ),
            (Some("worker"), "QUEUE_NAME", Some("default"), None),
            (None, "APP_MODE", Some("production"), None),
        ]
    );
    assert!(
        spec.variables
            .iter()
            .filter(|v| v.secret_ref.is_some())
            .all(|v| v.kind == "secret")
    );
    let [dependency] = spec.dependencies.as_slice() else {
        panic!("one dependency")
    };
    assert_eq!(
        (dependency.reference.as_str(), dependency.kind.as_str()),
        ("postgres", "postgres")
    );
    assert_eq!(dependency.source_mode, "appaloft-managed");
    assert_eq!(dependency.connection_secret_ref, None);
    assert_eq!(dependency.image, None, "Berth's own image");
    let bindings: Vec<(&str, &str)> = dependency
        .bindings
        .iter()
        .map(|b| (b.resource_ref.as_str(), b.target_name.as_str()))
        .collect();
    assert_eq!(
        bindings,
        [("web", "DATABASE_URL"), ("worker", "DATABASE_URL")]
    );
}

#[test]
fn example_warnings() {
    let env = "environment-config.json";
    let expected = [
        format!("{env}: {PG} (Postgres) becomes the dependency postgres, a postgres Berth provisions with its own image, credentials and data volume (its variables and volume mounts are not migrated); its data is not copied."),
        format!("{env}: {WEB}.networking.serviceDomains.web-production-5d3e.up.railway.app is a Railway domain and is not migrated; point a domain of your own at Berth instead."),
        format!("{env}: {WEB}.variables: secret-looking SESSION_SECRET: values not copied; each becomes env://<KEY>, supplied at apply from your environment."),
        format!("{env}: {WEB}.variables: PUBLIC_URL reference Railway variables (${{{{…}}}}) that do not exist outside Railway and are not migrated; set them on Berth by hand."),
        "web.railway.json: environments.staging apply to other environments than production and are not used.".to_string(),
        "web.railway.json: deploy.healthcheckTimeout is not migrated: Berth uses its own health check timing.".to_string(),
        "web.railway.json: deploy.restartPolicyType ON_FAILURE is not migrated: Berth always restarts a stopped container.".to_string(),
        "web.railway.json: deploy.restartPolicyMaxRetries is not migrated: Berth retries without a limit.".to_string(),
    ];
    assert_eq!(example().spec.source_warnings, expected);
}

#[test]
fn no_seeded_value_leaks() {
    let bundle = example();
    let text = serde_json::to_string(&bundle).unwrap();
    for seeded in ["seed-session-secret-7f3a", "seed-pg-password-91c2"] {
        assert!(!text.contains(seeded), "{seeded}");
    }
}

#[test]
fn recognised_by_content_not_name() {
    let bundle = run(&[
        ("dump-1.txt", ENV_CONFIG),
        ("web/upload.json", WEB_CODE.replace("$schema", "x").as_str()),
    ]);
    assert_eq!(bundle.spec.resources.len(), 2);
    let files = BTreeMap::from([
        ("a.json".to_string(), ENV_CONFIG.to_string()),
        ("web/railway.toml".to_string(), "[deploy]\nstartCommand = \"./serve\"\nnumReplicas = 3\ncronSchedule = \"*/5 * * * *\"\npreDeployCommand = [\"./migrate\"]\n".to_string()),
    ]);
    let bundle = translate(&files, &Defaults::default()).unwrap();
    assert_eq!(
        bundle.spec.resources[0].runtime.start_command.as_deref(),
        Some("./serve")
    );
    let codes: Vec<&str> = bundle
        .spec
        .source_blockers
        .iter()
        .map(|b| b.code.as_str())
        .collect();
    assert_eq!(
        codes,
        [
            "railway_replicas_require_scale_profile",
            "railway_cron_requires_scheduled_task_mapping",
            "railway_pre_deploy_unsupported"
        ]
    );
    assert_eq!(
        bundle.spec.source_blockers[0].path,
        "web/railway.toml:deploy.numReplicas"
    );
}

#[test]
fn unrecognised_file_is_an_error_naming_it() {
    let files = BTreeMap::from([("notes.txt".to_string(), "hello".to_string())]);
    let error = translate(&files, &Defaults::default()).unwrap_err();
    assert_eq!(error.field, "source.files.notes.txt");
    assert!(error.message.contains("railway environment config --json"));
}

#[test]
fn code_file_for_an_unknown_service_is_an_error() {
    let files = BTreeMap::from([
        ("env.json".to_string(), ENV_CONFIG.to_string()),
        ("api.railway.json".to_string(), WEB_CODE.to_string()),
    ]);
    let error = translate(&files, &Defaults::default()).unwrap_err();
    assert_eq!(error.field, "source.files.api.railway.json");
}

#[test]
fn standalone_config_as_code_and_environment_blocks() {
    let code = r#"{"build":{"builder":"NIXPACKS","buildCommand":"make"},"deploy":{"startCommand":"./a"},
        "environments":{"staging":{"deploy":{"startCommand":"./b","numReplicas":2}}}}"#;
    let files = BTreeMap::from([("railway.json".to_string(), code.to_string())]);
    let defaults = Defaults {
        environment: Some(berth_api::migrations::BundleEnvironment {
            name: "staging".into(),
            kind: "staging".into(),
        }),
        ..Defaults::default()
    };
    let bundle = translate(&files, &defaults).unwrap();
    let resource = &bundle.spec.resources[0];
    assert_eq!(
        (resource.reference.as_str(), resource.source.kind.as_str()),
        ("app", "local-folder")
    );
    assert_eq!(resource.runtime.start_command.as_deref(), Some("./b"));
    assert_eq!(resource.runtime.build_command.as_deref(), Some("make"));
    assert_eq!(bundle.spec.environment.name, "staging");
    assert_eq!(
        bundle.spec.source_blockers[0].code,
        "railway_replicas_require_scale_profile"
    );
    assert!(
        bundle
            .spec
            .source_warnings
            .iter()
            .any(|w| w.contains("builder NIXPACKS"))
    );
}

#[test]
fn tcp_proxy_and_deleted_service() {
    let config = r#"{"services":{"s1":{"name":"api","source":{"repo":"acme/api","branch":"main"},
        "networking":{"tcpProxies":{"5432":{}}},"variables":{"PORT":{"value":"3000"}}},
        "s2":{"name":"old","isDeleted":true}}}"#;
    let bundle = run(&[("config.json", config)]);
    let resource = &bundle.spec.resources[0];
    assert_eq!(resource.source.locator, "https://github.com/acme/api");
    assert_eq!(resource.source.git_ref.as_deref(), Some("main"));
    assert_eq!(resource.network.as_ref().unwrap().internal_port, 3000);
    assert_eq!(bundle.spec.resources.len(), 1);
    assert_eq!(
        bundle.spec.source_blockers[0].code,
        "railway_tcp_proxy_unsupported"
    );
    assert!(
        bundle
            .spec
            .source_warnings
            .iter()
            .any(|w| w.contains("services.s2 (old) is deleted"))
    );
}

#[test]
fn appaloft_export() {
    let export = r#"{"apiVersion":"railway.appaloft.io/export/v1","kind":"RailwayProjectExport",
      "metadata":{"name":"Shop","projectId":"p1"},"environment":{"name":"production","kind":"production"},
      "target":{"deploymentTargetId":"srv_1"},
      "services":[{"ref":"web","name":"Web","source":{"image":"berth/sample-app:1"},
        "deploy":{"port":8080,"replicas":2,"cronSchedule":"0 * * * *"},
        "variables":[{"key":"API_TOKEN","value":"seed-token-1","exposure":"runtime"},{"key":"MODE","value":"x","exposure":"build-time"}],
        "domains":[{"hostname":"Shop.Example.Test"}],"volumes":[{"ref":"uploads","name":"uploads","mountPath":"/u","sizeMb":10}]}],
      "dependencies":[{"ref":"db","name":"db","kind":"postgres","providerKey":"railway-postgres","connectionSecretRef":"env://DB_URL",
        "bindings":[{"serviceRef":"web","targetName":"DATABASE_URL"}]}]}"#;
    let bundle = run(&[("export.json", export)]);
    assert_eq!(bundle.spec.project.name, "Shop");
    assert_eq!(bundle.spec.target.deployment_target_id, "srv_1");
    let paths: Vec<(&str, &str)> = bundle
        .spec
        .source_blockers
        .iter()
        .map(|b| (b.code.as_str(), b.path.as_str()))
        .collect();
    assert_eq!(
        paths,
        [
            (
                "railway_replicas_require_scale_profile",
                "services.0.deploy.replicas"
            ),
            (
                "railway_cron_requires_scheduled_task_mapping",
                "services.0.deploy.cronSchedule"
            ),
        ]
    );
    assert_eq!(
        bundle.spec.variables[0].secret_ref.as_deref(),
        Some("env://API_TOKEN")
    );
    assert_eq!(bundle.spec.variables[1].exposure, "build-time");
    assert_eq!(bundle.spec.domains[0].hostname, "shop.example.test");
    assert_eq!(bundle.spec.dependencies[0].source_mode, "imported-external");
    assert_eq!(bundle.spec.dependencies[0].bindings[0].resource_ref, "web");
    assert!(
        bundle
            .spec
            .source_warnings
            .iter()
            .any(|w| w.contains("metadata.projectId"))
    );
    assert!(
        !serde_json::to_string(&bundle)
            .unwrap()
            .contains("seed-token-1")
    );
}

/// The example planned: Postgres is provisioned and bound to web and worker (no blocker); a
/// MySQL service's references stay an imported dependency (Berth does not run MySQL).
#[test]
fn a_postgres_service_is_provisioned_and_bound_by_the_plan() {
    let mut bundle = example();
    bundle.spec.target.deployment_target_id = "srv-1".into();
    let plan = crate::plan::plan(bundle).unwrap();
    assert!(plan.blockers.is_empty(), "{:?}", plan.blockers);
    let ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
    for id in [
        "dependency:provision:postgres",
        "dependency:bind:postgres:web:DATABASE_URL",
        "dependency:bind:postgres:worker:DATABASE_URL",
    ] {
        assert!(ids.contains(&id), "{id} in {ids:?}");
    }
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.contains("data is not copied"))
    );

    let mysql = ENV_CONFIG
        .replace("\"name\": \"Postgres\"", "\"name\": \"MySQL\"")
        .replace("postgres:16", "mysql:8")
        .replace("${{Postgres.DATABASE_URL}}", "${{MySQL.MYSQL_URL}}");
    let spec = run(&[("environment-config.json", &mysql)]).spec;
    let [dependency] = spec.dependencies.as_slice() else {
        panic!("one dependency")
    };
    assert_eq!(dependency.source_mode, "imported-external");
    assert_eq!(
        dependency.connection_secret_ref.as_deref(),
        Some("env://MYSQL_MYSQL_URL")
    );
}

/// A shared variable that is a secret becomes one environment secret (the value supplied at
/// apply by its reference), not a secret per service; a plain one an environment variable.
#[test]
fn shared_secret_variables_become_one_environment_secret() {
    let shared = ENV_CONFIG.replace(
        "\"APP_MODE\": { \"value\": \"production\" }",
        "\"APP_MODE\": { \"value\": \"production\" }, \
         \"SENTRY_AUTH_TOKEN\": { \"value\": \"seed-sentry-token-4d1e\" }",
    );
    let mut bundle = run(&[("environment-config.json", &shared)]);
    bundle.spec.target.deployment_target_id = "srv-1".into();
    let plan = crate::plan::plan(bundle).unwrap();
    let ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
    assert!(ids.contains(&"environment-variable:APP_MODE:runtime"));
    let secret = plan
        .steps
        .iter()
        .find(|s| s.id == "environment-secret:SENTRY_AUTH_TOKEN:runtime")
        .expect("one environment secret");
    assert_eq!(secret.input["isSecret"], true);
    assert_eq!(
        secret.input["value"],
        serde_json::json!({"$secretRef": "env://SENTRY_AUTH_TOKEN"})
    );
    assert!(
        !ids.iter()
            .any(|id| id.contains("SENTRY") && id.starts_with("resource-"))
    );
    let text = serde_json::to_string(&plan).unwrap();
    assert!(!text.contains("seed-sentry-token"));
}

//! The Compose example, recognition by content, and the features that block.

use std::collections::BTreeMap;

use berth_api::migrations::MigrationBundle;
use berth_api::validate::FieldError;

use super::service::shell_word;
use super::translate;
use crate::adapters::Defaults;

const COMPOSE: &str = include_str!("../../../../../examples/migrate/compose/compose.yaml");

fn try_run(files: &[(&str, &str)]) -> Result<MigrationBundle, FieldError> {
    let files: BTreeMap<String, String> = files
        .iter()
        .map(|(name, content)| (name.to_string(), content.to_string()))
        .collect();
    translate(&files, &Defaults::default())
}

fn run(files: &[(&str, &str)]) -> MigrationBundle {
    try_run(files).unwrap()
}

#[test]
fn example() {
    let spec = run(&[("compose.yaml", COMPOSE)]).spec;
    assert_eq!(spec.project.name, "shop");
    let resources: Vec<(&str, &str, Option<u16>, Option<&str>)> = spec
        .resources
        .iter()
        .map(|r| {
            (
                r.reference.as_str(),
                r.kind.as_str(),
                r.network.as_ref().map(|n| n.internal_port),
                r.runtime.start_command.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        resources,
        [
            ("web", "application", Some(8080), None),
            ("worker", "worker", None, Some("sleep infinity"))
        ]
    );
    assert_eq!(
        spec.resources[0].runtime.health_check_path.as_deref(),
        Some("/healthz")
    );
    // The database is a managed dependency: Berth gives it a volume of its own.
    assert!(spec.volumes.is_empty());
    let [db] = spec.dependencies.as_slice() else {
        panic!("one dependency")
    };
    assert_eq!(
        (db.reference.as_str(), db.kind.as_str(), db.image.as_deref()),
        ("db", "postgres", Some("postgres:16"))
    );
    assert_eq!(db.connection_secret_ref, None);
    let bindings: Vec<(&str, &str)> = db
        .bindings
        .iter()
        .map(|b| (b.resource_ref.as_str(), b.target_name.as_str()))
        .collect();
    assert_eq!(bindings, [("web", "DATABASE_URL")]);
    let secrets: Vec<(&str, &str)> = spec
        .variables
        .iter()
        .filter(|v| v.secret_ref.is_some())
        .map(|v| (v.resource_ref.as_deref().unwrap(), v.key.as_str()))
        .collect();
    assert_eq!(secrets, [("web", "SESSION_SECRET")]);
    assert_eq!(spec.variables.len(), 5);
    assert!(spec.domains.is_empty() && spec.source_blockers.is_empty());
    assert_eq!(
        spec.source_warnings,
        [
            "compose.yaml: services.db: db becomes the dependency db, a postgres Berth provisions from postgres:16 with credentials and a data volume of its own (environment, restart, volumes not migrated); its data is not copied.",
            "compose.yaml: services.web.healthcheck.interval is not migrated: Berth uses its own health check timing.",
            "compose.yaml: services.web: DATABASE_URL become dependency bindings: Berth injects the managed database's own URL (its credentials, not the ones written here).",
            "compose.yaml: services.web: secret-looking SESSION_SECRET: values not copied; each becomes env://<KEY>, supplied at apply from your environment.",
            "compose.yaml: services.web.depends_on is not migrated: Berth deploys each resource on its own.",
        ]
    );
    let text = serde_json::to_string(&spec).unwrap();
    for seeded in ["seed-compose-session-4b2d", "seed-compose-db-pass"] {
        assert!(!text.contains(seeded), "{seeded}");
    }
}

#[test]
fn recognised_by_content_and_env_files_resolved() {
    let compose = "services:\n  api:\n    build: {context: ./api, dockerfile: Dockerfile.prod}\n    env_file: ./api.env\n    expose: [\"3000\"]\n";
    let bundle = run(&[
        ("whatever.txt", compose),
        (
            "api.env",
            "# c\nexport MODE=\"fast\"\nAPI_TOKEN=seed-env-token\n",
        ),
    ]);
    let api = &bundle.spec.resources[0];
    assert_eq!(
        (api.source.kind.as_str(), api.source.locator.as_str()),
        ("local-folder", "./api")
    );
    assert_eq!(
        (
            api.runtime.strategy.as_str(),
            api.runtime.dockerfile_path.as_deref()
        ),
        ("dockerfile", Some("Dockerfile.prod"))
    );
    assert_eq!(
        api.network
            .as_ref()
            .map(|n| (n.internal_port, n.exposure_mode.as_str())),
        Some((3000, "none"))
    );
    assert_eq!(bundle.spec.variables[0].value.as_deref(), Some("fast"));
    assert_eq!(
        bundle.spec.variables[1].secret_ref.as_deref(),
        Some("env://API_TOKEN")
    );
    assert!(
        !serde_json::to_string(&bundle)
            .unwrap()
            .contains("seed-env-token")
    );
}

#[test]
fn unrecognised_file_is_an_error_naming_it() {
    let error = try_run(&[("compose.yaml", COMPOSE), ("notes.md", "hello")]).unwrap_err();
    assert_eq!(error.field, "source.files.notes.md");
    let error = try_run(&[("x.yaml", "a: 1")]).unwrap_err();
    assert_eq!(error.field, "source.files.x.yaml");
}

#[test]
fn behaviour_changing_features_block() {
    let compose = r#"
x-common: &common
  restart: on-failure
services:
  app:
    <<: *common
    image: nginx
    ports: ["80:80", "443:443"]
    volumes: ["./site:/usr/share/nginx/html", "cache:/var/cache"]
    env_file: missing.env
    network_mode: host
    privileged: true
    cap_add: [NET_ADMIN]
    devices: ["/dev/fuse"]
    deploy: {replicas: 3}
    labels: {traefik.http.routers.app.rule: "Host(`a.example.test`)"}
    container_name: app
"#;
    let bundle = run(&[("c.yml", compose)]);
    let codes: Vec<&str> = bundle
        .spec
        .source_blockers
        .iter()
        .map(|b| b.code.as_str())
        .collect();
    assert_eq!(
        codes,
        [
            "compose_multiple_ports",
            "compose_env_file_missing",
            "compose_bind_mount_unsupported",
            "compose_replicas_require_scale_profile",
            "compose_network_mode_unsupported",
            "compose_privileged_unsupported",
            "compose_cap_add_unsupported",
            "compose_devices_unsupported",
        ]
    );
    let warnings = bundle.spec.source_warnings.join("\n");
    for expected in [
        "restart on-failure",
        "labels are not migrated (their proxy host rules",
        "services.app.container_name",
        "x-common is a Compose extension",
    ] {
        assert!(warnings.contains(expected), "{expected} in {warnings}");
    }
    assert_eq!(bundle.spec.volumes[0].reference, "cache");
}

#[test]
fn commands_are_shell_quoted() {
    assert_eq!(shell_word("a b"), "'a b'");
    assert_eq!(shell_word("it's"), r"'it'\''s'");
    assert_eq!(shell_word("--port=80"), "--port=80");
}

/// The example planned: its PostgreSQL is provisioned and bound to web (no blocker), the plan
/// says its data is not copied; a MySQL service stays a database resource with its image.
#[test]
fn a_postgres_service_is_provisioned_and_bound_by_the_plan() {
    let mut bundle = run(&[("compose.yaml", COMPOSE)]);
    bundle.spec.target.deployment_target_id = "srv-1".into();
    let plan = crate::plan::plan(bundle).unwrap();
    assert!(plan.blockers.is_empty(), "{:?}", plan.blockers);
    let ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
    let at = |id: &str| ids.iter().position(|s| *s == id).expect(id);
    assert!(at("dependency:provision:db") < at("resource:create:web"));
    assert!(at("dependency:bind:db:web:DATABASE_URL") < at("deployment:create:web"));
    let provision = &plan.steps[at("dependency:provision:db")];
    assert_eq!(provision.input["image"], "postgres:16");
    assert!(!ids.iter().any(|id| id.starts_with("resource:create:db")));
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.starts_with("Dependency db (postgres)") && w.contains("not copied"))
    );

    let mysql = "services:\n  app:\n    image: app:1\n    environment:\n      DB: mysql://u:p@db/app\n  db:\n    image: mysql:8\n";
    let spec = run(&[("compose.yaml", mysql)]).spec;
    assert!(spec.dependencies.is_empty());
    assert_eq!(spec.resources[1].kind, "database");
}

//! The Heroku example folder, content recognition and the `--shell` quoting rules.

use std::collections::BTreeMap;

use berth_api::migrations::MigrationBundle;

use super::{shell_quote, shell_unquote, translate};
use crate::adapters::Defaults;

const APP: &str = include_str!("../../../../../examples/migrate/heroku/app.json");
const PROCFILE: &str = include_str!("../../../../../examples/migrate/heroku/Procfile");
const CONFIG: &str = include_str!("../../../../../examples/migrate/heroku/config.txt");
const DOMAINS: &str = include_str!("../../../../../examples/migrate/heroku/domains.json");

fn run(files: &[(&str, &str)]) -> MigrationBundle {
    let files: BTreeMap<String, String> = files
        .iter()
        .map(|(name, content)| (name.to_string(), content.to_string()))
        .collect();
    translate(&files, &Defaults::default()).unwrap()
}

fn example() -> MigrationBundle {
    run(&[
        ("app.json", APP),
        ("Procfile", PROCFILE),
        ("config.txt", CONFIG),
        ("domains.json", DOMAINS),
    ])
}

#[test]
fn example_resources_variables_dependencies_domains() {
    let spec = example().spec;
    assert_eq!(spec.project.name, "shop");
    let resources: Vec<(&str, &str, Option<&str>, Option<u16>)> = spec
        .resources
        .iter()
        .map(|r| {
            (
                r.reference.as_str(),
                r.kind.as_str(),
                r.runtime.start_command.as_deref(),
                r.network.as_ref().map(|n| n.internal_port),
            )
        })
        .collect();
    assert_eq!(
        resources,
        [
            ("web", "application", Some("/bin/sample-app"), Some(5000)),
            ("worker", "worker", Some("sleep infinity"), None)
        ]
    );
    assert!(
        spec.resources
            .iter()
            .all(|r| r.source.kind == "docker-image" && r.source.locator == "berth/sample-app:1")
    );
    let vars: Vec<(&str, &str, Option<&str>, Option<&str>)> = spec
        .variables
        .iter()
        .map(|v| {
            (
                v.resource_ref.as_deref().unwrap(),
                v.key.as_str(),
                v.value.as_deref(),
                v.secret_ref.as_deref(),
            )
        })
        .collect();
    let mut expected = vec![("web", "PORT", Some("5000"), None)];
    for reference in ["web", "worker"] {
        for key in ["APP_MODE", "GREETING", "SECRET_KEY_BASE"] {
            expected.push((
                reference,
                key,
                None,
                Some(["env://", key].concat()).map(|s| &*s.leak()),
            ));
        }
    }
    assert_eq!(vars, expected);
    let [dependency] = spec.dependencies.as_slice() else {
        panic!("one dependency")
    };
    assert_eq!(
        (
            dependency.reference.as_str(),
            dependency.kind.as_str(),
            dependency.provider_key.as_str()
        ),
        ("database", "postgres", "heroku-postgresql")
    );
    assert_eq!(
        dependency.connection_secret_ref.as_deref(),
        Some("env://DATABASE_URL")
    );
    let bound: Vec<&str> = dependency
        .bindings
        .iter()
        .map(|b| b.resource_ref.as_str())
        .collect();
    assert_eq!(bound, ["web", "worker"]);
    assert_eq!(spec.domains.len(), 1);
    assert_eq!(
        (
            spec.domains[0].hostname.as_str(),
            spec.domains[0].resource_ref.as_str()
        ),
        ("shop.example.test", "web")
    );
    assert!(spec.volumes.is_empty());
    assert!(spec.source_blockers.is_empty());
}

#[test]
fn example_warnings() {
    assert_eq!(
        example().spec.source_warnings,
        [
            "app.json: env: SENTRY_DSN are optional and have no value; they are not migrated (set them on Berth if you use them).",
            "app.json: formation.web.size is not migrated: Berth sizes containers by the target server.",
            "app.json: formation.worker.size is not migrated: Berth sizes containers by the target server.",
            "app.json: buildpacks and stack are not migrated: Berth builds the app with its own builder.",
            "heroku: the web process binds $PORT on Heroku; on Berth PORT=5000 is set on resource web and traffic is routed to it.",
            "config.txt: config vars APP_MODE, GREETING, SECRET_KEY_BASE are not copied: each becomes env://<KEY> on every process, supplied at apply from your environment.",
            "config.txt: DATABASE_URL are add-on URLs: each becomes an imported-external dependency bound to every process, supplied at apply as env://<KEY> (a PostgreSQL or Redis is imported as a dependency resource Berth checks from the target server); the add-on's data is not copied.",
            "config.txt: HEROKU_APP_NAME are set by Heroku (HEROKU_*) and are not migrated.",
            "domains.json: shop.herokuapp.com is Heroku's own domain and is not migrated.",
        ]
    );
}

#[test]
fn no_seeded_value_leaks() {
    let text = serde_json::to_string(&example()).unwrap();
    for seeded in [
        "seed-heroku-db-pass",
        "seed-secret-key-base-5e1f",
        "hello from heroku",
    ] {
        assert!(!text.contains(seeded), "{seeded}");
    }
}

#[test]
fn recognised_by_content_whatever_the_names() {
    let mut renamed = run(&[("1", APP), ("2", PROCFILE), ("3", CONFIG), ("4", DOMAINS)]);
    let mut expected = example();
    assert_eq!(
        renamed.spec.source_warnings.len(),
        expected.spec.source_warnings.len()
    );
    renamed.spec.source_warnings.clear();
    expected.spec.source_warnings.clear();
    assert_eq!(renamed, expected);
    let json_config = r#"{"DATABASE_URL":"postgres://a:b@h/d","GREETING":"hello from heroku"}"#;
    let bundle = run(&[("Procfile", PROCFILE), ("vars.json", json_config)]);
    assert_eq!(
        bundle.spec.dependencies[0].connection_secret_ref.as_deref(),
        Some("env://DATABASE_URL")
    );
    assert_eq!(bundle.spec.resources[0].source.kind, "local-folder");
}

#[test]
fn unrecognised_file_is_an_error_naming_it() {
    let files = BTreeMap::from([("notes.md".to_string(), "# Notes\nsome text\n".to_string())]);
    let error = translate(&files, &Defaults::default()).unwrap_err();
    assert_eq!(error.field, "source.files.notes.md");
    assert!(error.message.contains("heroku config --shell"));
}

#[test]
fn release_and_formation_quantity_block() {
    let app = r#"{"name":"a","formation":{"web":{"quantity":3}}}"#;
    let bundle = run(&[
        ("app.json", app),
        ("Procfile", "release: ./migrate\nweb: ./serve\n// comment\n"),
    ]);
    let blockers: Vec<(&str, &str)> = bundle
        .spec
        .source_blockers
        .iter()
        .map(|b| (b.code.as_str(), b.path.as_str()))
        .collect();
    assert_eq!(
        blockers,
        [
            ("heroku_release_phase_unsupported", "Procfile:release"),
            (
                "heroku_formation_quantity_requires_scale_profile",
                "app.json:formation.web.quantity"
            ),
        ]
    );
    assert_eq!(bundle.spec.resources.len(), 1);
}

#[test]
fn shell_quoting_round_trips() {
    for value in [
        "plain",
        "",
        "with space",
        "it's",
        "a\"b",
        "$HOME `x` !",
        "back\\slash",
        "line\nbreak",
        "q'uote\\and\nnl",
        "p://u:p@h/d",
    ] {
        let quoted = shell_quote(value);
        assert_eq!(shell_unquote(&quoted).as_deref(), Some(value), "{quoted}");
    }
    assert_eq!(shell_quote("with space"), "'with space'");
    assert_eq!(shell_quote("it's"), "\"it's\"");
    assert_eq!(shell_unquote(r#""a\$b\n""#).as_deref(), Some("a$b\n"));
    assert_eq!(shell_unquote(r"'it\'s'").as_deref(), Some("it's"));
    assert_eq!(shell_unquote("'unterminated"), None);
}

#[test]
fn broken_config_line_names_the_line_not_the_value() {
    let files = BTreeMap::from([("c.txt".to_string(), "A=1\nB='seed-broken\n".to_string())]);
    let error = translate(&files, &Defaults::default()).unwrap_err();
    assert_eq!(error.field, "source.files.c.txt");
    assert!(error.message.contains("line 2") && !error.message.contains("seed-broken"));
}

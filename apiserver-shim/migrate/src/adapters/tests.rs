//! Dispatch and the rules every adapter shares.

use std::collections::BTreeMap;

use berth_api::migrations::{BundleTarget, VendorSource};

use super::draft::{Refs, has_credentials, is_secret_key, slugify};
use super::translate;

fn source(provider: &str, files: &[(&str, &str)]) -> VendorSource {
    VendorSource {
        provider: provider.into(),
        files: files
            .iter()
            .map(|(name, content)| (name.to_string(), content.to_string()))
            .collect::<BTreeMap<_, _>>(),
        target: None,
        project: None,
        environment: None,
    }
}

#[test]
fn unknown_provider_names_the_field_and_the_allowed_values() {
    let error = translate(&source("render", &[("x", "y")])).unwrap_err();
    assert_eq!(error.field, "source.provider");
    assert_eq!(error.allowed, ["railway", "heroku", "compose"]);
}

#[test]
fn no_files_is_an_error() {
    let error = translate(&source("heroku", &[])).unwrap_err();
    assert_eq!(error.field, "source.files");
}

#[test]
fn caller_target_wins_and_missing_target_stays_empty() {
    let files = [("Procfile", "web: ./server\n")];
    let bundle = translate(&source("heroku", &files)).unwrap();
    assert_eq!(bundle.spec.target.deployment_target_id, "");
    let mut with_target = source("Heroku", &files);
    with_target.target = Some(BundleTarget {
        deployment_target_id: "srv-1".into(),
        destination_id: None,
    });
    let bundle = translate(&with_target).unwrap();
    assert_eq!(bundle.spec.target.deployment_target_id, "srv-1");
    assert_eq!(bundle.metadata.source.unwrap().provider, "heroku");
}

#[test]
fn slugs_follow_the_ref_pattern() {
    assert_eq!(slugify("My Web_App!", "svc"), "my-web-app");
    assert_eq!(slugify("1st", "svc"), "svc-1st");
    assert_eq!(slugify("", "svc"), "svc");
    assert_eq!(slugify(&"a".repeat(80), "svc").len(), 63);
    let mut refs = Refs::default();
    assert_eq!(refs.allocate("Web", "svc"), "web");
    assert_eq!(refs.allocate("web", "svc"), "web-2");
    assert_eq!(refs.allocate("WEB", "svc"), "web-3");
    let long = "b".repeat(70);
    refs.allocate(&long, "svc");
    assert_eq!(refs.allocate(&long, "svc").len(), 63);
}

#[test]
fn secret_names_and_credential_urls() {
    for key in [
        "DB_PASSWORD",
        "SESSION_SECRET",
        "GITHUB_TOKEN",
        "API_KEY",
        "DATABASE_URL",
    ] {
        assert!(is_secret_key(key), "{key}");
    }
    for key in ["PORT", "LOG_LEVEL", "APP_MODE", "KEYBOARD_LAYOUT"] {
        assert!(!is_secret_key(key), "{key}");
    }
    assert!(has_credentials("redis://user:pw@host:6379"));
    assert!(!has_credentials("https://example.test/a@b"));
}

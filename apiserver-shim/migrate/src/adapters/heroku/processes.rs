//! Processes → resources, config vars → `env://` references or add-on dependencies, custom
//! domains → the web resource.

use berth_api::migrations::BundleNetwork;
use berth_api::validate::FieldError;

use super::Inputs;
use super::app::App;
use crate::adapters::draft::{Draft, list, plain, source};

/// The port a migrated `web` process listens on (Heroku assigns `$PORT`; Berth sets it).
pub const WEB_PORT: u16 = 5000;

pub(crate) fn translate(
    inputs: &Inputs,
    app: Option<&App>,
    draft: &mut Draft,
) -> Result<(), FieldError> {
    let src = app.and_then(|app| app.source.clone()).unwrap_or_else(|| {
        draft.warn("heroku: app.json names no repository or image: every process is migrated from the local folder `.`.");
        source("local-folder", ".")
    });
    let mut refs = Vec::new();
    for (kind, command) in process_types(inputs, app, draft) {
        if kind == "release" {
            let at = inputs
                .procfile
                .as_ref()
                .map_or("Procfile", |(file, _)| file);
            draft.block(
                "heroku_release_phase_unsupported",
                format!("{at}:release"),
                "The release process runs before every release goes live; Berth has no release \
                 phase, so dropping it would skip it (run it by hand and remove it from the Procfile).",
            );
            continue;
        }
        let web = kind == "web";
        let reference = draft.add_resource(
            &kind,
            if web { "application" } else { "worker" },
            src.clone(),
        );
        draft.resource(&reference).runtime.start_command = command;
        if web {
            web_port(&reference, draft);
        }
        refs.push(reference);
    }
    if let Some(app) = app {
        formation(app, draft);
        addons(app, inputs, draft);
    }
    variables(inputs, app, &refs, draft);
    domains(inputs, refs.iter().any(|r| r == "web"), draft)
}

/// Procfile types in file order, then formation types the Procfile lacks; `web` alone when
/// neither names any.
fn process_types(
    inputs: &Inputs,
    app: Option<&App>,
    draft: &mut Draft,
) -> Vec<(String, Option<String>)> {
    let mut types: Vec<(String, Option<String>)> = Vec::new();
    for (kind, command) in inputs.procfile.iter().flat_map(|(_, p)| p) {
        match types.iter_mut().find(|(known, _)| known == kind) {
            Some(entry) => entry.1 = Some(command.clone()),
            None => types.push((kind.clone(), Some(command.clone()))),
        }
    }
    for (kind, _, _) in app.iter().flat_map(|app| &app.formation) {
        if !types.iter().any(|(known, _)| known == kind) {
            types.push((kind.clone(), None));
        }
    }
    if types.is_empty() {
        draft.warn("heroku: no Procfile and no formation: one web process is migrated with the image's own command.");
        types.push(("web".into(), None));
    }
    types
}

fn web_port(reference: &str, draft: &mut Draft) {
    draft.resource(reference).network = Some(BundleNetwork {
        internal_port: WEB_PORT,
        upstream_protocol: "http".into(),
        exposure_mode: "reverse-proxy".into(),
        target_service_name: None,
    });
    draft
        .variables
        .push(plain("PORT", &WEB_PORT.to_string(), Some(reference)));
    draft.warn(format!(
        "heroku: the web process binds $PORT on Heroku; on Berth PORT={WEB_PORT} is set on resource {reference} and traffic is routed to it."
    ));
}

fn formation(app: &App, draft: &mut Draft) {
    for (kind, quantity, path) in &app.formation {
        if quantity.is_some_and(|n| n > 1) {
            draft.block(
                "heroku_formation_quantity_requires_scale_profile",
                path.clone(),
                format!("Process {kind} runs more than one dyno; more than one replica requires the R5 scale profile."),
            );
        }
    }
}

/// Add-ons whose URL is in the config export become dependencies; the others are warnings.
fn addons(app: &App, inputs: &Inputs, draft: &mut Draft) {
    let keys: Vec<&str> = inputs
        .config
        .iter()
        .flat_map(|(_, vars)| vars.iter().map(|(k, _)| k.as_str()))
        .collect();
    let unmapped: Vec<String> = app
        .addons
        .iter()
        .filter(|addon| {
            !keys.iter().any(|key| {
                addon_of(key, "").is_some_and(|(_, provider)| provider_matches(addon, provider))
            })
        })
        .cloned()
        .collect();
    if !unmapped.is_empty() {
        draft.warn(format!(
            "{}: addons {} are not migrated: no add-on URL of theirs is in the config export.",
            app.file,
            list(&unmapped)
        ));
    }
}

fn provider_matches(addon: &str, provider: &str) -> bool {
    let addon = addon.to_ascii_lowercase();
    provider
        .strip_prefix("heroku-")
        .is_some_and(|name| addon.contains(name) || (name == "mongodb" && addon.contains("mongo")))
}

/// `(dependency kind, providerKey)` of an add-on URL key.
pub(super) fn addon_of(key: &str, value: &str) -> Option<(&'static str, &'static str)> {
    let scheme = value.split("://").next().unwrap_or("").to_ascii_lowercase();
    match key {
        "DATABASE_URL" if scheme.starts_with("mysql") => Some(("mysql", "heroku-mysql")),
        "DATABASE_URL" => Some(("postgres", "heroku-postgresql")),
        "REDIS_URL" | "REDIS_TLS_URL" => Some(("redis", "heroku-redis")),
        "MONGODB_URI" => Some(("mongodb", "heroku-mongodb")),
        "CLOUDAMQP_URL" => Some(("generic", "heroku-cloudamqp")),
        _ if key.starts_with("HEROKU_POSTGRESQL_") && key.ends_with("_URL") => {
            Some(("postgres", "heroku-postgresql"))
        }
        _ => None,
    }
}

mod variables;
use variables::{domains, variables};

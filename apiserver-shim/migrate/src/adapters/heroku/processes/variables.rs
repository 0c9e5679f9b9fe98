//! Config vars and domains of a Heroku app.

use berth_api::migrations::{BundleBinding, BundleDependency, BundleDomain};
use berth_api::validate::FieldError;

use super::super::Inputs;
use super::super::app::{App, Env};
use super::addon_of;
use crate::adapters::draft::{Draft, env_ref, list, plain, secret};
use crate::adapters::fields::Obj;

/// app.json `env` defaults first, the config export over them; every process gets each.
pub(super) fn variables(inputs: &Inputs, app: Option<&App>, refs: &[String], draft: &mut Draft) {
    let mut planned: Vec<(String, Env)> = Vec::new();
    for (key, env) in app.iter().flat_map(|app| &app.env) {
        let env = match env {
            Env::Plain(value) => Env::Plain(value.clone()),
            Env::Secret => Env::Secret,
        };
        planned.push((key.clone(), env));
    }
    let (mut secrets, mut skipped, mut addon_keys) = (Vec::new(), Vec::new(), Vec::new());
    let file = inputs.config.as_ref().map_or("config", |(file, _)| *file);
    for (key, value) in inputs.config.iter().flat_map(|(_, vars)| vars) {
        planned.retain(|(known, _)| known != key);
        if let Some((kind, provider)) = addon_of(key, value) {
            dependency(key, kind, provider, refs, draft);
            addon_keys.push(key.clone());
        } else if key.starts_with("HEROKU_") {
            skipped.push(key.clone());
        } else {
            secrets.push(key.clone());
            planned.push((key.clone(), Env::Secret));
        }
    }
    for reference in refs {
        for (key, env) in &planned {
            draft.variables.push(match env {
                Env::Plain(value) => plain(key, value, Some(reference)),
                Env::Secret => secret(key, Some(reference)),
            });
        }
    }
    report(file, &secrets, &skipped, &addon_keys, draft);
}

fn report(
    file: &str,
    secrets: &[String],
    skipped: &[String],
    addons: &[String],
    draft: &mut Draft,
) {
    if !secrets.is_empty() {
        draft.warn(format!(
            "{file}: config vars {} are not copied: each becomes env://<KEY> on every process, supplied at apply from your environment.",
            list(secrets)
        ));
    }
    if !addons.is_empty() {
        draft.warn(format!(
            "{file}: {} are add-on URLs: each becomes an imported-external dependency bound to every process, supplied at apply as env://<KEY> (a PostgreSQL or Redis is imported as a dependency resource Berth checks from the target server); the add-on's data is not copied.",
            list(addons)
        ));
    }
    if !skipped.is_empty() {
        draft.warn(format!(
            "{file}: {} are set by Heroku (HEROKU_*) and are not migrated.",
            list(skipped)
        ));
    }
}

fn dependency(key: &str, kind: &str, provider: &str, refs: &[String], draft: &mut Draft) {
    let base = key.trim_end_matches("_URL").trim_end_matches("_URI");
    let reference = draft.dependency_refs.allocate(base, "dep");
    draft.dependencies.push(BundleDependency {
        reference,
        name: key.to_string(),
        kind: kind.to_string(),
        source_mode: "imported-external".into(),
        provider_key: provider.to_string(),
        connection_secret_ref: Some(env_ref(key)),
        image: None,
        bindings: refs
            .iter()
            .map(|reference| BundleBinding {
                resource_ref: reference.clone(),
                target_name: key.to_string(),
                scope: "runtime-only".into(),
                injection_mode: "env".into(),
            })
            .collect(),
    });
}

/// `heroku domains --json`: custom domains → the web resource; `*.herokuapp.com` stays.
pub(super) fn domains(inputs: &Inputs, has_web: bool, draft: &mut Draft) -> Result<(), FieldError> {
    let Some((file, value)) = &inputs.domains else {
        return Ok(());
    };
    for (index, item) in value.as_array().into_iter().flatten().enumerate() {
        let mut domain = Obj::new(file, &index.to_string(), item)?;
        let hostname = domain.str("hostname")?.unwrap_or("").to_ascii_lowercase();
        let kind = domain.str("kind")?.unwrap_or("custom");
        // State Heroku reports about the domain, not settings to migrate.
        for key in [
            "id",
            "cname",
            "status",
            "acm_status",
            "acm_status_reason",
            "sni_endpoint",
            "app",
            "created_at",
            "updated_at",
        ] {
            domain.get(key);
        }
        domain.warn_unread(draft);
        if kind == "heroku" || hostname.ends_with(".herokuapp.com") {
            draft.warn(format!(
                "{file}: {hostname} is Heroku's own domain and is not migrated."
            ));
        } else if has_web {
            draft.domains.push(BundleDomain {
                hostname,
                resource_ref: "web".into(),
                tls_policy: "automatic".into(),
            });
        } else {
            draft.block(
                "heroku_domain_without_web_process",
                format!("{file}:{index}.hostname"),
                format!("Domain {hostname} needs a web process, and the Procfile has none."),
            );
        }
    }
    Ok(())
}

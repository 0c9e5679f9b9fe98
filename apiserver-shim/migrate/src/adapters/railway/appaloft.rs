//! Appaloft's `railway.appaloft.io/export/v1` envelope (MIGRATION.md §3.1), mapped as Appaloft
//! maps it, with Berth's rules on top: unknown keys are warnings rather than silence, and a
//! secret-looking plain value becomes an `env://KEY` reference.

use berth_api::migrations::{
    BundleBinding, BundleDependency, BundleDomain, BundleEnvironment, BundleNetwork, BundleTarget,
    BundleVolume, MigrationBundle,
};
use berth_api::validate::FieldError;
use serde_json::Value;

use crate::adapters::Defaults;
use crate::adapters::draft::{Draft, image_source, is_secret, list, plain, secret, source};
use crate::adapters::fields::Obj;

/// The whole export.
pub(super) fn translate(
    file: &str,
    value: &Value,
    defaults: &Defaults,
) -> Result<MigrationBundle, FieldError> {
    let mut draft = Draft::default();
    let mut top = Obj::new(file, "", value)?;
    top.str("apiVersion")?;
    if top.str("kind")? != Some("RailwayProjectExport") {
        return Err(top.wrong("kind", "RailwayProjectExport"));
    }
    if let Some(mut metadata) = top.obj("metadata")? {
        draft.name = metadata.str("name")?.map(str::to_string);
        metadata.warn_unread(&mut draft);
    }
    if let Some(mut environment) = top.obj("environment")? {
        draft.environment = Some(BundleEnvironment {
            name: required(&mut environment, "name")?.to_string(),
            kind: environment.str("kind")?.unwrap_or("production").to_string(),
        });
        environment.warn_unread(&mut draft);
    }
    if let Some(mut target) = top.obj("target")? {
        draft.target = Some(BundleTarget {
            deployment_target_id: required(&mut target, "deploymentTargetId")?.to_string(),
            destination_id: target.str("destinationId")?.map(str::to_string),
        });
        target.warn_unread(&mut draft);
    }
    for (index, item) in top.arr("services")?.into_iter().flatten().enumerate() {
        service(
            Obj::new(file, &format!("services.{index}"), item)?,
            &mut draft,
        )?;
    }
    for (index, item) in top.arr("dependencies")?.into_iter().flatten().enumerate() {
        dependency(
            Obj::new(file, &format!("dependencies.{index}"), item)?,
            &mut draft,
        )?;
    }
    top.warn_unread(&mut draft);
    draft.finish("railway", "railway", defaults)
}

fn required<'a>(obj: &mut Obj<'a>, key: &str) -> Result<&'a str, FieldError> {
    obj.str(key)?
        .filter(|text| !text.trim().is_empty())
        .ok_or_else(|| obj.wrong(key, "a non-empty string"))
}

/// `services[i]`: source, build, deploy, variables, domains, volumes.
fn service(mut obj: Obj, draft: &mut Draft) -> Result<(), FieldError> {
    let given = required(&mut obj, "ref")?;
    let name = obj.str("name")?.unwrap_or(given).to_string();
    let mut src = obj
        .obj("source")?
        .ok_or_else(|| obj.wrong("source", "an object"))?;
    let image = src.str("image")?;
    let bundle_source = match (image, src.str("repositoryUrl")?) {
        (Some(image), _) => {
            let mut result = image_source(image);
            result.image_digest = src.str("imageDigest")?.map(str::to_string);
            result
        }
        (None, Some(url)) => {
            let mut result = source("remote-git", url);
            result.git_ref = src.str("branch")?.map(str::to_string);
            result.base_directory = src.str("rootDirectory")?.map(str::to_string);
            result
        }
        (None, None) => return Err(src.wrong("repositoryUrl", "given (or image)")),
    };
    src.warn_unread(draft);
    let reference = draft.add_resource(given, "application", bundle_source);
    draft.resource(&reference).name = name.clone();
    if let Some(build) = obj.obj("build")? {
        build_of(build, &reference, draft)?;
    }
    if let Some(deploy) = obj.obj("deploy")? {
        deploy_of(deploy, &reference, draft)?;
    }
    variables(&mut obj, &reference, draft)?;
    domains(&mut obj, &reference, draft)?;
    volumes(&mut obj, &reference, draft)?;
    obj.warn_unread(draft);
    Ok(())
}

fn build_of(mut build: Obj, reference: &str, draft: &mut Draft) -> Result<(), FieldError> {
    let builder = build.str("builder")?.map(str::to_ascii_lowercase);
    let command = build.str("buildCommand")?.map(str::to_string);
    let dockerfile = build.str("dockerfilePath")?.map(str::to_string);
    build.warn_unread(draft);
    let runtime = &mut draft.resource(reference).runtime;
    if builder.as_deref() == Some("dockerfile") {
        runtime.strategy = "dockerfile".into();
    }
    runtime.build_command = command;
    runtime.dockerfile_path = dockerfile;
    Ok(())
}

fn deploy_of(mut deploy: Obj, reference: &str, draft: &mut Draft) -> Result<(), FieldError> {
    let runtime_start = deploy.str("startCommand")?.map(str::to_string);
    let health = deploy.str("healthcheckPath")?.map(str::to_string);
    let port = deploy.uint("port")?;
    let port = match port {
        Some(port) => Some(
            u16::try_from(port)
                .ok()
                .filter(|port| *port > 0)
                .ok_or_else(|| deploy.wrong("port", "a port (1-65535)"))?,
        ),
        None => None,
    };
    if deploy.uint("replicas")?.is_some_and(|n| n > 1) {
        draft.block(
            "railway_replicas_require_scale_profile",
            format!("{}.replicas", deploy.path),
            format!("Service {reference} replicas require the R5 scale profile."),
        );
    }
    if deploy.str("cronSchedule")?.is_some() {
        draft.block(
            "railway_cron_requires_scheduled_task_mapping",
            format!("{}.cronSchedule", deploy.path),
            format!(
                "Service {reference} cron schedule requires an explicit ScheduledTask mapping."
            ),
        );
    }
    deploy.warn_unread(draft);
    let resource = draft.resource(reference);
    resource.runtime.start_command = runtime_start;
    resource.runtime.health_check_path = health;
    resource.network = port.map(|port| BundleNetwork {
        internal_port: port,
        upstream_protocol: "http".into(),
        exposure_mode: "reverse-proxy".into(),
        target_service_name: None,
    });
    Ok(())
}

/// `variables[]`: `{key, value | secretRef, exposure, secret}`.
fn variables(obj: &mut Obj, reference: &str, draft: &mut Draft) -> Result<(), FieldError> {
    let mut hidden = Vec::new();
    for (index, item) in obj.arr("variables")?.into_iter().flatten().enumerate() {
        let mut var = Obj::new(obj.file, &obj.child(&format!("variables.{index}")), item)?;
        let key = required(&mut var, "key")?;
        let value = var.str("value")?;
        let secret_ref = var.str("secretRef")?;
        let exposure = var.str("exposure")?.unwrap_or("runtime").to_string();
        let marked = var.bool("secret")?.unwrap_or(false);
        var.warn_unread(draft);
        let mut variable = match (value, secret_ref) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(var.wrong("value", "given, or secretRef, but not both"));
            }
            (None, Some(reference_to)) => {
                let mut variable = secret(key, Some(reference));
                variable.secret_ref = Some(reference_to.to_string());
                variable
            }
            (Some(value), None) if marked || is_secret(key, value) => {
                hidden.push(key.to_string());
                secret(key, Some(reference))
            }
            (Some(value), None) => plain(key, value, Some(reference)),
        };
        variable.exposure = exposure;
        draft.variables.push(variable);
    }
    if !hidden.is_empty() {
        draft.warn(format!(
            "{}: {}.variables: {} carry secret values; they are not copied: each becomes \
             env://<KEY>, supplied at apply from your environment.",
            obj.file,
            obj.path,
            list(&hidden)
        ));
    }
    Ok(())
}

fn domains(obj: &mut Obj, reference: &str, draft: &mut Draft) -> Result<(), FieldError> {
    for (index, item) in obj.arr("domains")?.into_iter().flatten().enumerate() {
        let mut domain = Obj::new(obj.file, &obj.child(&format!("domains.{index}")), item)?;
        let hostname = required(&mut domain, "hostname")?.to_ascii_lowercase();
        let tls = domain.str("tlsPolicy")?.unwrap_or("automatic").to_string();
        domain.warn_unread(draft);
        draft.domains.push(BundleDomain {
            hostname,
            resource_ref: reference.to_string(),
            tls_policy: tls,
        });
    }
    Ok(())
}

fn volumes(obj: &mut Obj, reference: &str, draft: &mut Draft) -> Result<(), FieldError> {
    for (index, item) in obj.arr("volumes")?.into_iter().flatten().enumerate() {
        let mut volume = Obj::new(obj.file, &obj.child(&format!("volumes.{index}")), item)?;
        let given = required(&mut volume, "ref")?;
        let name = volume.str("name")?.unwrap_or(given).to_string();
        let mount_path = required(&mut volume, "mountPath")?.to_string();
        let size_mb = volume.uint("sizeMb")?;
        volume.warn_unread(draft);
        let volume_ref = draft.volume_refs.allocate(given, "vol");
        draft.volumes.push(BundleVolume {
            reference: volume_ref,
            name,
            resource_ref: reference.to_string(),
            mount_path,
            size_mb,
        });
    }
    Ok(())
}

/// `dependencies[i]`: imported-external iff it carries a connection secret ref.
fn dependency(mut obj: Obj, draft: &mut Draft) -> Result<(), FieldError> {
    let given = required(&mut obj, "ref")?;
    let name = obj.str("name")?.unwrap_or(given).to_string();
    let kind = required(&mut obj, "kind")?.to_string();
    let provider_key = required(&mut obj, "providerKey")?.to_string();
    let connection = obj.str("connectionSecretRef")?.map(str::to_string);
    let mut bindings = Vec::new();
    for (index, item) in obj.arr("bindings")?.into_iter().flatten().enumerate() {
        let mut binding = Obj::new(obj.file, &obj.child(&format!("bindings.{index}")), item)?;
        bindings.push(BundleBinding {
            resource_ref: required(&mut binding, "serviceRef")?.to_string(),
            target_name: required(&mut binding, "targetName")?.to_string(),
            scope: binding.str("scope")?.unwrap_or("runtime-only").to_string(),
            injection_mode: binding.str("injectionMode")?.unwrap_or("env").to_string(),
        });
        binding.warn_unread(draft);
    }
    obj.warn_unread(draft);
    let mode = if connection.is_some() {
        "imported-external"
    } else {
        "appaloft-managed"
    };
    draft.dependencies.push(BundleDependency {
        reference: draft.dependency_refs.allocate(given, "dep"),
        name,
        kind,
        source_mode: mode.into(),
        provider_key,
        connection_secret_ref: connection,
        image: None,
        bindings,
    });
    Ok(())
}

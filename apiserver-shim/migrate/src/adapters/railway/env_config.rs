//! `railway environment config --json`: services keyed by id (a `name` beside them is used
//! when present), their sources, domains, variables, settings and volume mounts; shared
//! variables; volume sizes.

use std::collections::BTreeMap;

use berth_api::migrations::{BundleNetwork, BundleSource, BundleVolume};
use berth_api::validate::FieldError;

use super::settings::{Target, apply_build, apply_deploy};
use crate::adapters::draft::{Draft, database_kind, image_source, source};
use crate::adapters::fields::Obj;

mod variables;

pub(crate) use variables::Service;

/// A migrated service, for config-as-code files to find by name.
pub(crate) struct Known {
    pub name: String,
    pub reference: String,
    pub image: bool,
}

/// Translates the whole file into `draft`; returns the services it created.
pub(crate) fn translate(
    file: &str,
    value: &serde_json::Value,
    draft: &mut Draft,
) -> Result<Vec<Known>, FieldError> {
    let mut top = Obj::new(file, "", value)?;
    let services = top.obj("services")?;
    let shared = top.obj("sharedVariables")?;
    let volumes = volume_sizes(top.obj("volumes")?, draft)?;
    top.warn_unread(draft);
    let entries = match &services {
        Some(services) => services.members()?,
        None => Vec::new(),
    };
    let catalogue: Vec<Service> = entries
        .iter()
        .map(|(id, entry)| Service::describe(id, entry))
        .collect();
    let mut known = Vec::new();
    let mut mounted = Vec::new();
    // Managed databases first: a service may reference one listed after it.
    let (databases, entries): (Vec<_>, Vec<_>) = entries.into_iter().partition(|(id, entry)| {
        entry.peek("isDeleted") != Some(&serde_json::Value::Bool(true))
            && variables::managed_kind(&Service::describe(id, entry)).is_some()
    });
    for (id, entry) in &databases {
        let service = Service::describe(id, entry);
        if let Some(kind) = variables::managed_kind(&service) {
            variables::managed_dependency(entry, &service.name, kind, draft);
        }
        let mounts = entry.peek("volumeMounts").and_then(|m| m.as_object());
        mounted.extend(mounts.into_iter().flat_map(|m| m.keys().cloned()));
    }
    for (id, entry) in entries {
        if let Some(service) = service(id, entry, &catalogue, &volumes, &mut mounted, draft)? {
            known.push(service);
        }
    }
    if let Some(shared) = shared {
        variables::translate(shared, None, &catalogue, draft)?;
    }
    for id in volumes.keys().filter(|id| !mounted.contains(id)) {
        draft.warn(format!(
            "{file}: volumes.{id} is mounted by no service and is not migrated."
        ));
    }
    Ok(known)
}

/// `volumes.<id>.sizeMb`; a region is a warning.
fn volume_sizes(
    volumes: Option<Obj>,
    draft: &mut Draft,
) -> Result<BTreeMap<String, Option<u64>>, FieldError> {
    let mut sizes = BTreeMap::new();
    for (id, mut volume) in volumes
        .map(|v| v.members())
        .transpose()?
        .unwrap_or_default()
    {
        sizes.insert(
            id.to_string(),
            volume.uint("sizeMb")?.filter(|size| *size > 0),
        );
        volume.warn_unread(draft);
    }
    Ok(sizes)
}

/// One service; `None` when it is deleted.
fn service(
    id: &str,
    mut entry: Obj,
    catalogue: &[Service],
    volumes: &BTreeMap<String, Option<u64>>,
    mounted: &mut Vec<String>,
    draft: &mut Draft,
) -> Result<Option<Known>, FieldError> {
    let name = entry.str("name")?.unwrap_or(id).to_string();
    if entry.bool("isDeleted")? == Some(true) {
        draft.warn(format!(
            "{}: {} ({name}) is deleted on Railway and is not migrated.",
            entry.file, entry.path
        ));
        return Ok(None);
    }
    let (source, image) = service_source(entry.obj("source")?, draft)?;
    let networking = Networking::read(entry.obj("networking")?, draft)?;
    let port = networking.port().or(port_variable(&entry));
    let database = database_kind(&format!("{name} {}", image.unwrap_or("")));
    let kind = match (database, port) {
        (Some(_), _) => "database",
        (None, Some(_)) => "application",
        (None, None) => "worker",
    };
    let reference = draft.add_resource(&name, kind, source);
    if let Some(port) = port {
        draft.resource(&reference).network = Some(network(port));
    }
    if let Some(database) = database {
        draft.warn(format!(
            "{}: {} ({name}) looks like a {database} database: it is migrated as an empty database \
             resource; its data is not copied.",
            entry.file, entry.path
        ));
    }
    networking.emit(&reference, &name, port, draft);
    let target = Target {
        reference: &reference,
        name: &name,
        image: image.is_some(),
    };
    if let Some(build) = entry.obj("build")? {
        apply_build(build, &target, draft)?;
    }
    if let Some(deploy) = entry.obj("deploy")? {
        apply_deploy(deploy, &target, draft)?;
    }
    if let Some(vars) = entry.obj("variables")? {
        variables::translate(vars, Some(&reference), catalogue, draft)?;
    }
    if let Some(mounts) = entry.obj("volumeMounts")? {
        volume_mounts(mounts, &reference, volumes, mounted, draft)?;
    }
    entry.warn_unread(draft);
    let image = image.is_some();
    Ok(Some(Known {
        name,
        reference,
        image,
    }))
}

/// `source.image` → docker-image; `source.repo` → remote-git (GitHub for `owner/name`).
fn service_source<'a>(
    source_obj: Option<Obj<'a>>,
    draft: &mut Draft,
) -> Result<(BundleSource, Option<&'a str>), FieldError> {
    let Some(mut obj) = source_obj else {
        draft.warn("railway: a service without `source` is migrated from the local folder `.`.");
        return Ok((source("local-folder", "."), None));
    };
    let image = obj.str("image")?;
    let repo = obj.str("repo")?;
    let branch = obj.str("branch")?;
    let root = obj.str("rootDirectory")?;
    let mut result = match (image, repo) {
        (Some(image), _) => image_source(image),
        (None, Some(repo)) => source("remote-git", &repo_url(repo)),
        (None, None) => {
            draft.warn(format!(
                "{}: {} names neither image nor repo; the service is migrated from the local folder `.`.",
                obj.file, obj.path
            ));
            source("local-folder", ".")
        }
    };
    if image.is_none() {
        result.git_ref = branch.map(str::to_string);
        result.base_directory = root.map(str::to_string);
    }
    obj.warn_unread(draft);
    Ok((result, image))
}

/// `owner/name` is a GitHub repository; anything else is already a URL.
fn repo_url(repo: &str) -> String {
    let parts: Vec<&str> = repo.split('/').collect();
    if !repo.contains(':') && parts.len() == 2 && parts.iter().all(|part| !part.is_empty()) {
        format!("https://github.com/{repo}")
    } else {
        repo.to_string()
    }
}

/// A numeric `PORT` variable: what the app listens on when no domain says.
fn port_variable(entry: &Obj) -> Option<u16> {
    let value = entry.peek("variables")?.get("PORT")?.get("value")?;
    value.as_str()?.trim().parse().ok().filter(|port| *port > 0)
}

fn network(port: u16) -> BundleNetwork {
    BundleNetwork {
        internal_port: port,
        upstream_protocol: "http".into(),
        exposure_mode: "reverse-proxy".into(),
        target_service_name: None,
    }
}

/// `volumeMounts.<volumeId>.mountPath` → a volume of this resource, sized from `volumes`.
fn volume_mounts(
    mounts: Obj,
    reference: &str,
    volumes: &BTreeMap<String, Option<u64>>,
    mounted: &mut Vec<String>,
    draft: &mut Draft,
) -> Result<(), FieldError> {
    for (id, mut mount) in mounts.members()? {
        let Some(path) = mount.str("mountPath")? else {
            return Err(mount.wrong("mountPath", "a path"));
        };
        mount.warn_unread(draft);
        let volume_ref = draft.volume_refs.allocate(id, "vol");
        draft.volumes.push(BundleVolume {
            reference: volume_ref,
            name: id.to_string(),
            resource_ref: reference.to_string(),
            mount_path: path.to_string(),
            size_mb: volumes.get(id).copied().flatten(),
        });
        mounted.push(id.to_string());
    }
    Ok(())
}

/// `networking`: domains carry the port; TCP proxies are blockers.
#[derive(Default)]
struct Networking {
    file: String,
    path: String,
    custom: Vec<(String, Option<u16>)>,
    railway: Vec<(String, Option<u16>)>,
    tcp: Vec<String>,
}

mod networking;

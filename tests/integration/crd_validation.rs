//! The API server itself enforces the limits of spec §8 and every fully enumerated value set:
//! bad YAML is refused with a message naming the field, and nothing is stored. Minimal valid
//! objects of every kind are accepted and come back with their defaults filled in.

use berth_crds::certificate::Certificate;
use berth_crds::dependency_resource::DependencyResource;
use berth_crds::deploy_token::DeployToken;
use berth_crds::deployment::Deployment;
use berth_crds::domain_binding::DomainBinding;
use berth_crds::invitation::Invitation;
use berth_crds::member::Member;
use berth_crds::migration::Migration;
use berth_crds::overlay_decision::OverlayDecision;
use berth_crds::resource::Resource;
use berth_crds::retention_policy::RetentionPolicy;
use berth_crds::route_surface_decision::RouteSurfaceDecision;
use berth_crds::server::Server;
use berth_crds::session::Session;
use berth_crds::ssh_credential::SshCredential;
use berth_crds::storage_volume::StorageVolume;
use berth_crds::threshold_policy::ThresholdPolicy;
use berth_crds::usage_intent::UsageIntent;
use berth_crds::user::User;
use berth_tests::{TEST_LABEL, TestNamespace, client, random_suffix};
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

/// A digest in the accepted `sha256:<64 hex>` form (of a made-up value).
const DIGEST: &str = "sha256:30093be9dc00df017eae7231e14d112cbe30594147b88e0923f7d3c748b5d72a";
/// One more than the largest port the spec accepts (2^53).
const TOO_BIG: i64 = 9_007_199_254_740_992;

/// The kinds exercised here, as dynamic API resources.
fn api_resource(kind: &str) -> ApiResource {
    match kind {
        "User" => ApiResource::erase::<User>(&()),
        "Session" => ApiResource::erase::<Session>(&()),
        "Member" => ApiResource::erase::<Member>(&()),
        "Invitation" => ApiResource::erase::<Invitation>(&()),
        "SshCredential" => ApiResource::erase::<SshCredential>(&()),
        "Server" => ApiResource::erase::<Server>(&()),
        "Resource" => ApiResource::erase::<Resource>(&()),
        "Deployment" => ApiResource::erase::<Deployment>(&()),
        "DomainBinding" => ApiResource::erase::<DomainBinding>(&()),
        "Certificate" => ApiResource::erase::<Certificate>(&()),
        "DeployToken" => ApiResource::erase::<DeployToken>(&()),
        "ThresholdPolicy" => ApiResource::erase::<ThresholdPolicy>(&()),
        "RetentionPolicy" => ApiResource::erase::<RetentionPolicy>(&()),
        "UsageIntent" => ApiResource::erase::<UsageIntent>(&()),
        "OverlayDecision" => ApiResource::erase::<OverlayDecision>(&()),
        "RouteSurfaceDecision" => ApiResource::erase::<RouteSurfaceDecision>(&()),
        "Migration" => ApiResource::erase::<Migration>(&()),
        "StorageVolume" => ApiResource::erase::<StorageVolume>(&()),
        "DependencyResource" => ApiResource::erase::<DependencyResource>(&()),
        other => panic!("no API resource for {other}"),
    }
}

const KINDS: &[&str] = &[
    "User",
    "Session",
    "Member",
    "Invitation",
    "SshCredential",
    "Server",
    "Resource",
    "Deployment",
    "DomainBinding",
    "Certificate",
    "DeployToken",
    "ThresholdPolicy",
    "RetentionPolicy",
    "UsageIntent",
    "OverlayDecision",
    "RouteSurfaceDecision",
    "Migration",
    "StorageVolume",
    "DependencyResource",
];

/// A handle for `kind`: cluster-wide for User, in `namespace` for everything else.
fn api(client: &Client, namespace: &str, kind: &str) -> Api<DynamicObject> {
    let resource = api_resource(kind);
    if kind == "User" {
        Api::all_with(client.clone(), &resource)
    } else {
        Api::namespaced_with(client.clone(), namespace, &resource)
    }
}

/// A small valid spec of `kind`; the rows below break one field of it at a time.
fn valid_spec(kind: &str) -> Value {
    match kind {
        "User" => json!({ "email": "ada@acme.example" }),
        "Session" => json!({
            "userId": "ada",
            "clientKind": "web",
            "tokenDigest": DIGEST,
            "expiresAt": "2030-01-01T00:00:00Z",
        }),
        "Member" => json!({ "userId": "ada", "email": "ada@acme.example", "role": "owner" }),
        "Invitation" => json!({
            "email": "grace@acme.example",
            "role": "admin",
            "inviterUserId": "ada",
            "expiresAt": "2030-01-01T00:00:00Z",
        }),
        "SshCredential" => json!({
            "name": "Deploy key",
            "privateKeySecretRef": { "name": "deploy-key" },
        }),
        "Server" => json!({ "host": "203.0.113.20", "credentialId": "deploy-key", "proxy": {} }),
        "Resource" => json!({
            "projectId": "shop",
            "environmentId": "shop-production",
            "name": "Storefront",
            "kind": "application",
            "services": [{ "name": "web", "kind": "web" }],
            "runtimeProfile": { "healthCheck": {} },
            "networkProfile": { "internalPort": 8080 },
            "accessProfile": {},
            "storageAttachments": [{
                "attachmentId": "uploads",
                "storageVolumeId": "vol-1",
                "destinationPath": "/data",
            }],
            "variables": [{ "key": "LOG_LEVEL", "value": "info" }],
        }),
        "Deployment" => json!({
            "resourceId": "storefront",
            "projectId": "shop",
            "environmentId": "shop-production",
            "serverId": "web-1",
        }),
        "DomainBinding" => json!({ "resourceId": "storefront", "hostname": "shop.acme.example" }),
        "Certificate" => json!({ "domainBindingId": "shop-acme-example" }),
        "DeployToken" => json!({
            "displayName": "CI",
            "scope": { "resourceIds": ["storefront"] },
            "secretDigest": DIGEST,
            "secretSuffix": "x9Qa",
        }),
        "ThresholdPolicy" => json!({
            "scope": { "kind": "server", "serverId": "web-1" },
            "rules": [{
                "ruleId": "cpu",
                "signal": "cpu",
                "metric": "containerCpuPercent",
                "critical": 90,
                "comparator": "greater-than-or-equal",
            }],
        }),
        "RetentionPolicy" => json!({ "category": "audit-rows", "retentionDays": 30 }),
        "UsageIntent" => json!({
            "idempotencyKey": "k-1",
            "capabilityKey": "deployments.create",
            "source": "cli",
        }),
        "OverlayDecision" => json!({ "operationKey": "deployments.preview", "source": "cli" }),
        "RouteSurfaceDecision" => json!({
            "operationKey": "routes.expose",
            "source": "cli",
            "surfaceKind": "generated-access",
        }),
        "Migration" => json!({
            "plan": {
                "protocol": "platform-migration/v1", "state": "ready",
                "bundleDigest": DIGEST, "planDigest": DIGEST,
                "steps": [{
                    "id": "project", "operationKey": "projects.create", "dependsOn": [],
                    "input": { "name": "Shop", "labels": { "team": "web" } },
                }],
                "blockers": [], "warnings": [],
            },
            "digest": DIGEST,
        }),
        "StorageVolume" => json!({
            "projectId": "shop",
            "environmentId": "shop-production",
            "name": "Uploads",
            "kind": "bind-mount",
            "sourcePath": "/srv/uploads",
        }),
        "DependencyResource" => json!({
            "kind": "postgres",
            "projectId": "shop",
            "environmentId": "shop-production",
            "serverId": "local",
            "name": "Main database",
            "exposure": { "hostPort": 15432, "allowFrom": ["203.0.113.0/24"] },
        }),
        other => panic!("no valid spec for {other}"),
    }
}

/// One invalid object: `kind`'s valid spec with the field at `pointer` (JSON pointer into the
/// spec) set to `value`, or removed when `value` is `None`. `field` is the path the API server
/// must name.
struct Invalid {
    kind: &'static str,
    pointer: &'static str,
    value: Option<Value>,
    field: &'static str,
}

fn set(kind: &'static str, pointer: &'static str, value: Value, field: &'static str) -> Invalid {
    Invalid {
        kind,
        pointer,
        value: Some(value),
        field,
    }
}

fn remove(kind: &'static str, pointer: &'static str, field: &'static str) -> Invalid {
    Invalid {
        kind,
        pointer,
        value: None,
        field,
    }
}

/// One row per limit of spec §8 that lives in a CRD, per fully enumerated value set, and per
/// secret-shaped field that must hold a digest.
#[rustfmt::skip]
fn invalid_rows() -> Vec<Invalid> {
    vec![
        // §8: network profile ports are > 0 and <= 9007199254740991.
        set("Resource", "/networkProfile/internalPort", json!(0), "spec.networkProfile.internalPort"),
        set("Resource", "/networkProfile/internalPort", json!(TOO_BIG), "spec.networkProfile.internalPort"),
        remove("Resource", "/networkProfile/internalPort", "spec.networkProfile.internalPort"),
        set("Resource", "/networkProfile/hostPort", json!(0), "spec.networkProfile.hostPort"),
        set("Resource", "/networkProfile/hostPort", json!(TOO_BIG), "spec.networkProfile.hostPort"),
        set("Resource", "/networkProfile/targetServiceName", json!(""), "spec.networkProfile.targetServiceName"),
        set("Resource", "/accessProfile/pathPrefix", json!(""), "spec.accessProfile.pathPrefix"),
        // §8: retentionDays >= 1.
        set("RetentionPolicy", "/retentionDays", json!(0), "spec.retentionDays"),
        remove("RetentionPolicy", "/retentionDays", "spec.retentionDays"),
        // §8: identifier and filter strings have length >= 1.
        set("Session", "/userId", json!(""), "spec.userId"),
        set("Member", "/userId", json!(""), "spec.userId"),
        set("Invitation", "/inviterUserId", json!(""), "spec.inviterUserId"),
        set("Server", "/credentialId", json!(""), "spec.credentialId"),
        set("Resource", "/projectId", json!(""), "spec.projectId"),
        set("Resource", "/environmentId", json!(""), "spec.environmentId"),
        set("Resource", "/services/0/name", json!(""), "spec.services[0].name"),
        set("Resource", "/storageAttachments/0/storageVolumeId", json!(""), "spec.storageAttachments[0].storageVolumeId"),
        set("Resource", "/storageAttachments/0/destinationPath", json!("data"), "spec.storageAttachments[0].destinationPath"),
        set("Deployment", "/resourceId", json!(""), "spec.resourceId"),
        set("Deployment", "/projectId", json!(""), "spec.projectId"),
        set("Deployment", "/environmentId", json!(""), "spec.environmentId"),
        set("Deployment", "/serverId", json!(""), "spec.serverId"),
        set("Deployment", "/destinationId", json!(""), "spec.destinationId"),
        set("DomainBinding", "/pathPrefix", json!(""), "spec.pathPrefix"),
        set("Certificate", "/domainBindingId", json!(""), "spec.domainBindingId"),
        set("Certificate", "/providerKey", json!(""), "spec.providerKey"),
        set("Certificate", "/challengeType", json!(""), "spec.challengeType"),
        set("DeployToken", "/scope/resourceIds/0", json!(""), "spec.scope.resourceIds[0]"),
        set("ThresholdPolicy", "/scope/kind", json!(""), "spec.scope.kind"),
        set("ThresholdPolicy", "/scope/serverId", json!(""), "spec.scope.serverId"),
        set("UsageIntent", "/idempotencyKey", json!(""), "spec.idempotencyKey"),
        set("UsageIntent", "/capabilityKey", json!(""), "spec.capabilityKey"),
        set("UsageIntent", "/source", json!(""), "spec.source"),
        set("UsageIntent", "/organizationId", json!(""), "spec.organizationId"),
        set("OverlayDecision", "/operationKey", json!(""), "spec.operationKey"),
        set("OverlayDecision", "/source", json!(""), "spec.source"),
        set("RouteSurfaceDecision", "/surfaceKind", json!(""), "spec.surfaceKind"),
        set("StorageVolume", "/projectId", json!(""), "spec.projectId"),
        set("StorageVolume", "/name", json!(""), "spec.name"),
        remove("StorageVolume", "/environmentId", "spec.environmentId"),
        set("StorageVolume", "/sourcePath", json!("srv/uploads"), "spec.sourcePath"),
        set("StorageVolume", "/sourcePath", json!("/"), "spec.sourcePath"),
        set("StorageVolume", "/sourcePath", json!("/srv/$(id)"), "spec.sourcePath"),
        set("DependencyResource", "/name", json!(""), "spec.name"),
        remove("DependencyResource", "/serverId", "spec.serverId"),
        // A host port only for listed source addresses: never open to everyone.
        remove("DependencyResource", "/exposure/allowFrom", "spec.exposure.allowFrom"),
        set("DependencyResource", "/exposure/allowFrom", json!([]), "spec.exposure.allowFrom"),
        set("DependencyResource", "/exposure/allowFrom/0", json!("anywhere"), "spec.exposure.allowFrom[0]"),
        set("DependencyResource", "/exposure/hostPort", json!(0), "spec.exposure.hostPort"),
        // Ports and probe settings Berth itself bounds.
        set("Server", "/port", json!(0), "spec.port"),
        set("Server", "/port", json!(65536), "spec.port"),
        set("Server", "/proxy/httpsPort", json!(0), "spec.proxy.httpsPort"),
        set("Resource", "/runtimeProfile/healthCheck/intervalSeconds", json!(0), "spec.runtimeProfile.healthCheck.intervalSeconds"),
        set("Resource", "/runtimeProfile/healthCheck/retries", json!(-1), "spec.runtimeProfile.healthCheck.retries"),
        // Secret material never goes in a spec: only `sha256:` digests are accepted.
        set("Session", "/tokenDigest", json!("my-bearer-token"), "spec.tokenDigest"),
        set("DeployToken", "/secretDigest", json!("plaintext-secret"), "spec.secretDigest"),
        set("Migration", "/digest", json!("sha256:abc"), "spec.digest"),
        // Shapes Berth checks so typos fail at apply time, not in the controller.
        set("User", "/email", json!("not-an-email"), "spec.email"),
        set("DomainBinding", "/hostname", json!("https://shop.acme.example/"), "spec.hostname"),
        // Full enumerations.
        set("Resource", "/kind", json!("lambda"), "spec.kind"),
        set("Resource", "/services/0/kind", json!("frontend"), "spec.services[0].kind"),
        set("Resource", "/networkProfile/upstreamProtocol", json!("udp"), "spec.networkProfile.upstreamProtocol"),
        set("Resource", "/networkProfile/exposureMode", json!("public"), "spec.networkProfile.exposureMode"),
        set("Resource", "/accessProfile/generatedAccessMode", json!("enabled"), "spec.accessProfile.generatedAccessMode"),
        set("Resource", "/runtimeProfile/restartPolicy", json!("sometimes"), "spec.runtimeProfile.restartPolicy"),
        set("Resource", "/variables/0/exposure", json!("deploy-time"), "spec.variables[0].exposure"),
        set("Member", "/role", json!("viewer"), "spec.role"),
        set("Invitation", "/role", json!("viewer"), "spec.role"),
        set("RetentionPolicy", "/scope", json!("project"), "spec.scope"),
        set("RetentionPolicy", "/category", json!("metrics"), "spec.category"),
        set("Certificate", "/reason", json!("revoke"), "spec.reason"),
        set("Server", "/proxy/kind", json!("nginx"), "spec.proxy.kind"),
        set("Server", "/lifecycleStatus", json!("archived"), "spec.lifecycleStatus"),
        set("SshCredential", "/kind", json!("password"), "spec.kind"),
        set("Migration", "/protocol", json!("platform-migration/v2"), "spec.protocol"),
        set("Migration", "/plan/state", json!("maybe"), "spec.plan.state"),
        remove("Migration", "/plan/planDigest", "spec.plan.planDigest"),
        set("StorageVolume", "/kind", json!("tmpfs"), "spec.kind"),
        set("DependencyResource", "/kind", json!("mysql"), "spec.kind"),
        set("DependencyResource", "/source", json!("external"), "spec.source"),
    ]
}

/// Sets (or removes) the value at a JSON pointer whose parent exists or is an object to create.
fn apply_mutation(spec: &mut Value, pointer: &str, value: Option<Value>) {
    let (parent, last) = pointer.rsplit_once('/').expect("pointer has a parent");
    let mut target = spec;
    for token in parent.split('/').skip(1) {
        target = match target {
            Value::Array(items) => &mut items[token.parse::<usize>().expect("array index")],
            Value::Object(map) => map.entry(token).or_insert_with(|| json!({})),
            _ => panic!("{pointer}: {token} is not a container"),
        };
    }
    match (target, value) {
        (Value::Object(map), Some(value)) => {
            map.insert(last.to_string(), value);
        }
        (Value::Object(map), None) => {
            map.remove(last);
        }
        (Value::Array(items), Some(value)) => items[last.parse::<usize>().unwrap()] = value,
        (other, _) => panic!("{pointer}: cannot change {other}"),
    }
}

fn object(kind: &str, name: &str, spec: Value) -> DynamicObject {
    let mut object = DynamicObject::new(name, &api_resource(kind)).data(json!({ "spec": spec }));
    object.metadata.labels = Some([(TEST_LABEL.to_string(), "true".to_string())].into());
    object
}

/// Whether `message` names `field`: Kubernetes 1.20 drops list indices from the path
/// (`spec.services.kind`), later versions keep them (`spec.services[0].kind`).
fn names_field(message: &str, field: &str) -> bool {
    let without_indices: String = {
        let mut out = String::new();
        let mut in_index = false;
        for c in field.chars() {
            match c {
                '[' => in_index = true,
                ']' => in_index = false,
                _ if !in_index => out.push(c),
                _ => {}
            }
        }
        out
    };
    message.contains(&format!("{field}:")) || message.contains(&format!("{without_indices}:"))
}

/// Deletes cluster-scoped test objects (Users) when the test ends, pass or fail. It builds its
/// own client: a kube `Client` serves requests from a task on the runtime that created it, and
/// that runtime is blocked while `drop` runs.
struct ClusterCleanup {
    resource: ApiResource,
    names: Vec<String>,
}

impl Drop for ClusterCleanup {
    fn drop(&mut self) {
        let resource = self.resource.clone();
        let names = std::mem::take(&mut self.names);
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime for cleanup");
            runtime.block_on(async move {
                let api = Api::<DynamicObject>::all_with(client().await, &resource);
                for name in names {
                    let _ = api.delete(&name, &DeleteParams::background()).await;
                }
            });
        })
        .join();
    }
}

// Multi-threaded: `TestNamespace`'s drop blocks this thread while the client's request task
// (spawned on this runtime) must keep running to carry the delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_server_rejects_values_outside_spec_limits_and_enums() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "crdval").await;
    let suffix = random_suffix();
    let mut failures = Vec::new();

    for (index, row) in invalid_rows().into_iter().enumerate() {
        let what = format!(
            "{} {} = {}",
            row.kind,
            row.pointer,
            row.value
                .as_ref()
                .map_or("<removed>".to_string(), Value::to_string)
        );
        let mut spec = valid_spec(row.kind);
        apply_mutation(&mut spec, row.pointer, row.value);
        let name = format!("bad-{index}-{suffix}");
        let api = api(&client, &ns.name, row.kind);
        match api
            .create(&PostParams::default(), &object(row.kind, &name, spec))
            .await
        {
            Ok(_) => {
                failures.push(format!("{what}: accepted"));
                let _ = api.delete(&name, &DeleteParams::default()).await;
            }
            Err(kube::Error::Api(status)) => {
                let message = &status.message;
                if status.code != 422 {
                    failures.push(format!("{what}: HTTP {} ({message})", status.code));
                }
                let explained = ["Invalid value", "Unsupported value", "Required value"]
                    .iter()
                    .any(|phrase| message.contains(phrase));
                if !explained || !names_field(message, row.field) {
                    failures.push(format!(
                        "{what}: message does not name {}: {message}",
                        row.field
                    ));
                }
            }
            Err(other) => failures.push(format!("{what}: {other}")),
        }
        if api
            .get_opt(&name)
            .await
            .expect("get after rejection")
            .is_some()
        {
            failures.push(format!("{what}: object {name} exists after rejection"));
        }
    }

    // Nothing at all was stored in the namespace.
    for kind in KINDS.iter().filter(|k| **k != "User") {
        let stored = api(&client, &ns.name, kind)
            .list(&ListParams::default())
            .await
            .expect("list");
        if !stored.items.is_empty() {
            failures.push(format!("{kind}: {} objects stored", stored.items.len()));
        }
    }

    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Fields the API server must default on the valid spec of `kind`: (JSON pointer, value).
fn expected_defaults(kind: &str) -> Vec<(&'static str, Value)> {
    match kind {
        "Session" => vec![("/revoked", json!(false))],
        "Member" => vec![("/active", json!(true))],
        "Invitation" => vec![("/revoked", json!(false))],
        "SshCredential" => vec![
            ("/kind", json!("ssh-private-key")),
            ("/privateKeySecretRef/key", json!("privateKey")),
        ],
        "Server" => vec![
            ("/port", json!(22)),
            ("/username", json!("root")),
            ("/providerKey", json!("generic-ssh")),
            ("/lifecycleStatus", json!("active")),
            ("/dockerSocketPath", json!("/var/run/docker.sock")),
            ("/proxy/kind", json!("caddy")),
            ("/proxy/image", json!("berth/edge-caddy:2.6.2")),
            ("/proxy/httpPort", json!(80)),
            ("/proxy/httpsPort", json!(443)),
        ],
        "Resource" => vec![
            ("/networkProfile/upstreamProtocol", json!("http")),
            ("/networkProfile/exposureMode", json!("reverse-proxy")),
            ("/accessProfile/generatedAccessMode", json!("inherit")),
            ("/accessProfile/pathPrefix", json!("/")),
            ("/runtimeProfile/restartPolicy", json!("unless-stopped")),
            ("/runtimeProfile/healthCheck/path", json!("/")),
            ("/runtimeProfile/healthCheck/expectedStatusCode", json!(200)),
            ("/runtimeProfile/healthCheck/intervalSeconds", json!(5)),
            ("/runtimeProfile/healthCheck/timeoutSeconds", json!(5)),
            ("/runtimeProfile/healthCheck/retries", json!(3)),
            ("/runtimeProfile/healthCheck/startPeriodSeconds", json!(0)),
            ("/autoDeploy/enabled", json!(false)),
            ("/autoDeploy/triggerKind", json!("git-push")),
            ("/variables/0/exposure", json!("runtime")),
        ],
        "Deployment" => vec![("/cancelRequested", json!(false))],
        "DomainBinding" => vec![("/pathPrefix", json!("/")), ("/tlsMode", json!("auto"))],
        "Certificate" => vec![("/reason", json!("issue"))],
        "DeployToken" => vec![("/revoked", json!(false)), ("/scope/projectIds", json!([]))],
        "ThresholdPolicy" => vec![("/enabled", json!(true))],
        "RetentionPolicy" => vec![
            ("/scope", json!("organization")),
            ("/enabled", json!(true)),
            ("/dryRunSchedulingEnabled", json!(false)),
            ("/destructiveSchedulingEnabled", json!(false)),
        ],
        "UsageIntent" => vec![("/status", json!("accepted"))],
        "OverlayDecision" | "RouteSurfaceDecision" => vec![("/decision", json!("enabled"))],
        "Migration" => vec![
            ("/protocol", json!("platform-migration/v1")),
            // A step's arbitrary input survives, nested objects included.
            ("/plan/steps/0/id", json!("project")),
            ("/plan/steps/0/input/labels/team", json!("web")),
        ],
        _ => vec![],
    }
}

// Multi-threaded: `TestNamespace`'s drop blocks this thread while the client's request task
// (spawned on this runtime) must keep running to carry the delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_server_accepts_minimal_objects_and_fills_defaults() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "crddef").await;
    let suffix = random_suffix();
    let user_name = format!("t-user-{suffix}");
    let _users = ClusterCleanup {
        resource: api_resource("User"),
        names: vec![user_name.clone()],
    };
    let mut failures = Vec::new();

    for kind in KINDS {
        let name = if *kind == "User" {
            user_name.clone()
        } else {
            format!("ok-{suffix}")
        };
        let created = match api(&client, &ns.name, kind)
            .create(
                &PostParams::default(),
                &object(kind, &name, valid_spec(kind)),
            )
            .await
        {
            Ok(created) => created,
            Err(error) => {
                failures.push(format!("{kind}: minimal object refused: {error}"));
                continue;
            }
        };
        let spec = &created.data["spec"];
        for (pointer, expected) in expected_defaults(kind) {
            let actual = spec.pointer(pointer);
            if actual != Some(&expected) {
                failures.push(format!(
                    "{kind} spec{pointer}: expected {expected}, got {actual:?}"
                ));
            }
        }
    }

    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

//! Whether a Resource's declared spec is what its serving deployment runs: which top-level spec
//! fields take a new attempt to reach the server and which apply at once (one table, which the
//! README repeats), and the `deployedState` the Resource's status and `GET /resources/{id}`
//! report.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a change of a spec field reaches what runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldEffect {
    /// Only a new deployment attempt carries it to the server.
    NewAttempt,
    /// The controller acts on it (or nothing on the server depends on it) without an attempt.
    AtOnce,
}

/// One row of [`SPEC_FIELDS`].
#[derive(Clone, Copy, Debug)]
pub struct SpecField {
    /// The top-level field of `Resource.spec`, as YAML spells it.
    pub field: &'static str,
    pub effect: FieldEffect,
    /// Why, for people (the README's table says the same).
    pub why: &'static str,
}

/// Every top-level field of a Resource's spec and how a change of it takes effect. A change of
/// a `NewAttempt` field leaves the Resource `Deployed=False` (reason `ChangesNotDeployed`)
/// until an attempt made from the new spec succeeds; an `AtOnce` field never does.
pub const SPEC_FIELDS: &[SpecField] = &[
    SpecField {
        field: "projectId",
        effect: FieldEffect::NewAttempt,
        why: "the container's labels and the project's variables",
    },
    SpecField {
        field: "environmentId",
        effect: FieldEffect::NewAttempt,
        why: "the container's labels and the environment's variables",
    },
    SpecField {
        field: "serverId",
        effect: FieldEffect::NewAttempt,
        why: "the server the container runs on",
    },
    SpecField {
        field: "destinationId",
        effect: FieldEffect::NewAttempt,
        why: "the destination on the server",
    },
    SpecField {
        field: "name",
        effect: FieldEffect::AtOnce,
        why: "display name (when `slug` is unset the generated host derives from it: that \
              counts as a change of `slug`)",
    },
    SpecField {
        field: "slug",
        effect: FieldEffect::NewAttempt,
        why: "the generated host name, which a deployment writes to the edge proxy",
    },
    SpecField {
        field: "kind",
        effect: FieldEffect::NewAttempt,
        why: "how the resource is built and run",
    },
    SpecField {
        field: "description",
        effect: FieldEffect::AtOnce,
        why: "free text",
    },
    SpecField {
        field: "services",
        effect: FieldEffect::AtOnce,
        why: "a record of what the resource runs; nothing on the server reads it",
    },
    SpecField {
        field: "source",
        effect: FieldEffect::NewAttempt,
        why: "what is fetched, built or pulled",
    },
    SpecField {
        field: "runtimeProfile",
        effect: FieldEffect::NewAttempt,
        why: "build strategy, commands, health check and restart policy of the container",
    },
    SpecField {
        field: "networkProfile",
        effect: FieldEffect::NewAttempt,
        why: "the port, the published port and the route of the container",
    },
    SpecField {
        field: "accessProfile",
        effect: FieldEffect::NewAttempt,
        why: "the generated route (on or off, path prefix), which a deployment writes to the \
              edge proxy",
    },
    SpecField {
        field: "autoDeploy",
        effect: FieldEffect::AtOnce,
        why: "when later changes deploy by themselves; on, the pending change deploys at once",
    },
    SpecField {
        field: "firstDeployment",
        effect: FieldEffect::AtOnce,
        why: "`on-create` (default) or `on-request`: whether the first deployment waits to be asked for",
    },
    SpecField {
        field: "storageAttachments",
        effect: FieldEffect::NewAttempt,
        why: "the container's mounts",
    },
    SpecField {
        field: "deploymentHistoryLimit",
        effect: FieldEffect::AtOnce,
        why: "how many finished attempts are kept",
    },
    SpecField {
        field: "variables",
        effect: FieldEffect::NewAttempt,
        why: "the container's environment and build args (with auto-deploy on, a change starts \
              an attempt by itself)",
    },
    SpecField {
        field: "dependencyBindings",
        effect: FieldEffect::NewAttempt,
        why: "the bound databases' URLs in the container's environment and the networks it \
              joins",
    },
    SpecField {
        field: "secretsRef",
        effect: FieldEffect::NewAttempt,
        why: "the Secret whose values the container gets",
    },
    SpecField {
        field: "imagePullSecretRef",
        effect: FieldEffect::AtOnce,
        why: "read when an attempt pulls a missing image; changes nothing that runs",
    },
    SpecField {
        field: "runtime",
        effect: FieldEffect::AtOnce,
        why: "stop, start or restart: carried out by the controller without an attempt",
    },
];

/// Not a spec field: the effective configuration (variables and secret values of the resource,
/// its environment, project and organization) the serving attempt started with, compared by
/// its `configFingerprint`. Listed among the changes not deployed when it moved.
pub const CONFIGURATION: &str = "configuration";

/// How a field's change takes effect; `None` for a name not in [`SPEC_FIELDS`].
pub fn effect_of(field: &str) -> Option<FieldEffect> {
    SPEC_FIELDS
        .iter()
        .find(|f| f.field == field)
        .map(|f| f.effect)
}

/// Whether the declared spec is what serves (`status.deployedState` of a Resource, and the
/// same in `GET /resources/{id}`). Absent while no deployment serves.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeployedState {
    /// Whether the serving deployment runs the declared spec (fields that apply at once
    /// aside).
    pub up_to_date: bool,
    /// Id (object name) of the serving Deployment.
    pub deployment_id: String,
    /// The Resource's `metadata.generation` the serving Deployment was made from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_generation: Option<i64>,
    /// Top-level spec fields (and `configuration`) changed since the serving Deployment was
    /// made and not deployed yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes_not_deployed: Vec<String>,
    /// Id of an attempt now running that carries the declared spec, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploying_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_listed_once() {
        let mut names: Vec<&str> = SPEC_FIELDS.iter().map(|f| f.field).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
        assert_eq!(effect_of("runtimeProfile"), Some(FieldEffect::NewAttempt));
        assert_eq!(effect_of("description"), Some(FieldEffect::AtOnce));
        assert_eq!(effect_of(CONFIGURATION), None);
    }
}

//! The planner's tests, on one fixture: a web app, a worker, a Postgres database with a
//! volume, an environment variable, a resource secret and a domain.

mod apply;
mod environment_secrets;
mod integrity;
mod managed;
mod planning;

use berth_api::migrations::MigrationPlan;
use berth_api::validate::FieldError;
use serde_json::{Value, json};

use super::{parse_bundle, plan};

pub fn fixture() -> Value {
    json!({
        "apiVersion": "appaloft.io/migration/v1",
        "kind": "MigrationBundle",
        "metadata": {"name": "shop", "source": {"provider": "Railway"}},
        "spec": {
            "project": {"name": "Shop"},
            "environment": {"name": "production", "kind": "production"},
            "target": {"deploymentTargetId": "srv-1"},
            "resources": [
                {
                    "ref": "web", "name": "Web",
                    "source": {"kind": "docker-image", "locator": "ghcr.io/acme/web:1.2"},
                    "runtime": {"healthCheckPath": "/healthz"},
                    "network": {"internalPort": 8080}
                },
                {
                    "ref": "worker", "name": "Worker", "kind": "worker",
                    "source": {"kind": "docker-image", "locator": "ghcr.io/acme/worker:1.2"},
                    "runtime": {"startCommand": "node worker.js"}
                },
                {
                    "ref": "db", "name": "Database", "kind": "database",
                    "source": {"kind": "docker-image", "locator": "postgres:16"},
                    "network": {"internalPort": 5432, "upstreamProtocol": "tcp", "exposureMode": "none"}
                }
            ],
            "variables": [
                {"key": "LOG_LEVEL", "value": "info", "exposure": "runtime"},
                {"key": "STRIPE_KEY", "secretRef": "env://STRIPE_KEY", "exposure": "runtime", "kind": "secret", "resourceRef": "web"}
            ],
            "volumes": [
                {"ref": "pgdata", "name": "pgdata", "resourceRef": "db", "mountPath": "/var/lib/postgresql/data"}
            ],
            "domains": [{"hostname": "Shop.Example.com", "resourceRef": "web"}]
        }
    })
}

/// The plan of a bundle value, or the field error.
pub fn plan_of(value: &Value) -> Result<MigrationPlan, FieldError> {
    plan(parse_bundle(value)?)
}

pub fn fixture_plan() -> MigrationPlan {
    plan_of(&fixture()).expect("the fixture plans")
}

/// The fixture with `edit` applied to its `spec`.
pub fn with_spec(edit: impl FnOnce(&mut Value)) -> Value {
    let mut value = fixture();
    edit(&mut value["spec"]);
    value
}

/// The field a bundle is refused by.
pub fn refused(value: &Value) -> String {
    plan_of(value).expect_err("refused").field
}

pub fn ids(plan: &MigrationPlan) -> Vec<&str> {
    plan.steps.iter().map(|s| s.id.as_str()).collect()
}

pub fn step<'a>(plan: &'a MigrationPlan, id: &str) -> &'a berth_api::migrations::Step {
    plan.steps.iter().find(|s| s.id == id).expect(id)
}

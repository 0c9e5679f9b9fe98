//! The shape every step shares: its id, operation and input, the output it produces and how
//! cleanup undoes it; and the ids of the two steps every plan starts with.

use std::collections::BTreeMap;

use berth_api::migrations::{Step, StepCleanup};
use serde_json::Value;

pub const PROJECT: &str = "project:create";
pub const ENVIRONMENT: &str = "environment:create";

/// One step; `produces` is the one output most steps have (`id` of the result).
pub fn step(id: String, operation: &str, depends_on: Vec<String>, input: Value) -> Step {
    let Value::Object(input) = input else {
        unreachable!("step inputs are objects")
    };
    Step {
        id,
        operation_key: operation.into(),
        depends_on,
        input,
        produces: None,
        cleanup: None,
    }
}

pub fn produces(mut step: Step, output: &str) -> Step {
    step.produces = Some(BTreeMap::from([(output.to_string(), "id".to_string())]));
    step
}

pub fn cleanup(mut step: Step, operation: &str, input: Option<Value>) -> Step {
    step.cleanup = Some(StepCleanup {
        operation_key: operation.into(),
        ownership: "created-by-receipt".into(),
        input: input.and_then(|v| match v {
            Value::Object(map) => Some(map),
            _ => None,
        }),
    });
    step
}

//! A resource's network, access and runtime profiles: each POST replaces that part of it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource_input::{AccessProfileInput, NetworkProfileInput, RuntimeProfileInput};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetNetworkProfile {
    pub network_profile: NetworkProfileInput,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetAccessProfile {
    pub access_profile: AccessProfileInput,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetRuntimeProfile {
    pub runtime_profile: RuntimeProfileInput,
}

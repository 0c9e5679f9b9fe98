//! Calls the shim makes for itself. A `Migration` written with kubectl (or synced by a GitOps
//! tool) runs its steps through the ordinary operations like one applied over REST, but it has
//! no REST caller: whoever wrote it holds Kubernetes RBAC over the organization's namespace
//! (and could write every object the steps write), so its steps run as the organization's
//! owner, recorded as actor `migration/<name>`. The bearer token exists only in this process,
//! for the duration of one run.

use std::collections::HashMap;
use std::sync::Mutex;

use berth_crds::member::OrganizationRole;

use super::{Caller, CallerOrganization, Principal};
use crate::token;

/// Prefix of internal tokens; never issued to anyone.
pub const INTERNAL_PREFIX: &str = "bit_";

static GRANTS: Mutex<Option<HashMap<String, Caller>>> = Mutex::new(None);

/// A live internal token; revoked when dropped.
pub struct Grant {
    secret: String,
}

impl Grant {
    /// A token acting as the owner of `organization` for the migration `name`.
    pub fn for_migration(name: &str, organization_id: &str, namespace: &str) -> Self {
        let secret = token::generate(INTERNAL_PREFIX);
        let caller = Caller {
            principal: Principal::Migration {
                migration: name.to_string(),
            },
            organization: Some(CallerOrganization {
                id: organization_id.to_string(),
                namespace: namespace.to_string(),
                role: OrganizationRole::Owner,
                member_id: None,
            }),
        };
        let mut grants = GRANTS.lock().unwrap_or_else(|e| e.into_inner());
        grants
            .get_or_insert_default()
            .insert(token::digest(&secret), caller);
        Self { secret }
    }

    /// The `Authorization` header value.
    pub fn header(&self) -> String {
        format!("Bearer {}", self.secret)
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        let mut grants = GRANTS.lock().unwrap_or_else(|e| e.into_inner());
        grants
            .get_or_insert_default()
            .remove(&token::digest(&self.secret));
    }
}

/// The caller an internal token stands for, while it is live.
pub fn caller(secret: &str) -> Option<Caller> {
    let grants = GRANTS.lock().unwrap_or_else(|e| e.into_inner());
    grants.as_ref()?.get(&token::digest(secret)).cloned()
}

//! The table rows of the API's records: each reads the record's typed fields (berth-api), so
//! a field renamed on one side breaks the build of both. `-o json|yaml` prints the answer as
//! it came, never these.

use berth_api::deploy_tokens::TokenRecord;
use berth_api::environments::EnvironmentRecord;
use berth_api::members::MemberRecord;
use berth_api::organizations::OrganizationSummary;
use berth_api::projects::ProjectRecord;
use berth_api::variables::VariableEntry;

use crate::output::{Row, optional, text};

impl Row for ProjectRecord {
    const HEADERS: &'static [&'static str] = &["ID", "SLUG", "NAME", "STATUS", "CREATED"];

    fn cells(&self) -> Vec<String> {
        [
            &self.id,
            &self.slug,
            &self.name,
            &self.lifecycle_status,
            &self.created_at,
        ]
        .map(|value| text(value))
        .to_vec()
    }

    fn id(&self) -> &str {
        &self.id
    }
}

impl Row for EnvironmentRecord {
    const HEADERS: &'static [&'static str] =
        &["ID", "PROJECT", "NAME", "KIND", "STATUS", "CREATED"];

    fn cells(&self) -> Vec<String> {
        [
            &self.id,
            &self.project_id,
            &self.name,
            &self.kind,
            &self.lifecycle_status,
            &self.created_at,
        ]
        .map(|value| text(value))
        .to_vec()
    }

    fn id(&self) -> &str {
        &self.id
    }
}

impl Row for MemberRecord {
    const HEADERS: &'static [&'static str] = &["ID", "EMAIL", "NAME", "ROLE", "STATUS", "JOINED"];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.member_id),
            text(&self.email),
            optional(self.display_name.as_ref()),
            text(&self.role),
            text(&self.status),
            text(&self.joined_at),
        ]
    }

    fn id(&self) -> &str {
        &self.member_id
    }
}

/// A variable or secret; the value is the API's, masked (`****`) for secrets.
impl Row for VariableEntry {
    const HEADERS: &'static [&'static str] = &["KEY", "VALUE", "EXPOSURE", "SCOPE", "SECRET"];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.key),
            text(&self.value),
            text(&self.exposure),
            text(&self.scope),
            self.is_secret.to_string(),
        ]
    }

    fn id(&self) -> &str {
        &self.key
    }
}

/// A deploy token: never its secret, which the record does not carry.
impl Row for TokenRecord {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "NAME",
        "STATUS",
        "SUFFIX",
        "PROJECTS",
        "RESOURCES",
        "EXPIRES",
        "LAST USED",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.token_id),
            text(&self.display_name),
            text(&self.status),
            text(&self.secret_suffix),
            text(&self.scope.project_ids.join(",")),
            text(&self.scope.resource_ids.join(",")),
            optional(self.expires_at.as_ref()),
            optional(self.last_used_at.as_ref()),
        ]
    }

    fn id(&self) -> &str {
        &self.token_id
    }
}

/// One of the caller's organizations, the current one marked `*`.
pub struct OrganizationRow<'a> {
    pub organization: &'a OrganizationSummary,
    pub current: bool,
}

impl Row for OrganizationRow<'_> {
    const HEADERS: &'static [&'static str] = &["", "ID", "SLUG", "NAME", "ROLE"];

    fn cells(&self) -> Vec<String> {
        let o = self.organization;
        vec![
            text(if self.current { "*" } else { "" }),
            text(&o.organization_id),
            text(&o.slug),
            text(&o.name),
            text(&o.role),
        ]
    }

    fn id(&self) -> &str {
        &self.organization.organization_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{Format, Output, col};
    use serde_json::json;

    /// The typed rows print what the JSON-pointer columns printed before them.
    #[test]
    fn typed_rows_print_the_table_people_saw() {
        let out = Output {
            format: Format::Table,
            quiet: false,
            color: false,
        };
        let answer = json!({"memberId": "mem-1", "userId": "usr-1", "role": "owner",
            "joinedAt": "2030-01-01T00:00:00Z", "email": "ana@example.com", "status": "active"});
        let member: MemberRecord = serde_json::from_value(answer.clone()).unwrap();
        let columns = [
            col("ID", "/memberId"),
            col("EMAIL", "/email"),
            col("NAME", "/displayName"),
            col("ROLE", "/role"),
            col("STATUS", "/status"),
            col("JOINED", "/joinedAt"),
        ];
        assert_eq!(
            out.grid(MemberRecord::HEADERS, vec![member.cells()]),
            out.table(&[answer], &columns)
        );
        let entry: VariableEntry = serde_json::from_value(json!({"resourceId": "res-1",
            "key": "TOKEN", "value": "****", "scope": "resource", "exposure": "runtime",
            "isSecret": true, "kind": "secret"}))
        .unwrap();
        assert_eq!(
            entry.cells(),
            ["TOKEN", "****", "runtime", "resource", "true"]
        );
    }
}

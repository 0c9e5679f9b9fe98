//! Deployment attempts that outlive their objects: the controller removes finished Deployments
//! beyond a resource's history limit, and the REST shim keeps each attempt's last state here
//! (as the object looked, trimmed) so `GET /deployments` still lists and shows the whole
//! history. One row per attempt, replaced as the attempt changes; `removed` once its object is
//! gone. Rows go with their resource (`forget_resource`) and with the timelines' retention.

use crate::StoreError;

/// One attempt as last seen.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRecord {
    pub namespace: String,
    pub deployment: String,
    pub resource: String,
    pub project: String,
    pub environment: String,
    pub server: String,
    /// The attempt's status as the wire spells it (`succeeded`, …; `created` before any).
    pub status: String,
    /// When the Deployment was created (Unix milliseconds): the list's order.
    pub created_ms: i64,
    /// Whether the Deployment object is gone.
    pub removed: bool,
    /// The Deployment object as JSON (no managed fields).
    pub object: String,
}

/// Which removed attempts to read, newest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttemptQuery {
    pub namespace: String,
    pub resource: Option<String>,
    pub project: Option<String>,
    pub environment: Option<String>,
    pub server: Option<String>,
    pub status: Option<String>,
    /// A deploy token's scope: when not empty, only attempts of these (each list alone).
    pub within_resources: Vec<String>,
    pub within_projects: Vec<String>,
    pub within_environments: Vec<String>,
    /// Only attempts older than this `(created_ms, deployment)`: the page cursor.
    pub before: Option<(i64, String)>,
    pub limit: usize,
}

/// Where removed attempts are kept: every [`ObservationStore`](crate::ObservationStore) keeps them.
pub trait AttemptStore: Send + Sync {
    /// Adds or replaces each record (by namespace and deployment).
    fn record_attempts(&self, records: &[AttemptRecord]) -> Result<(), StoreError>;
    /// Marks the attempts as removed (their objects are gone); unknown ones are skipped.
    fn mark_removed(&self, namespace: &str, deployments: &[String]) -> Result<(), StoreError>;
    /// `(namespace, deployment)` of every attempt not marked removed.
    fn unremoved_attempts(&self) -> Result<Vec<(String, String)>, StoreError>;
    /// The removed attempts `query` selects, newest first, up to its limit.
    fn removed_attempts(&self, query: &AttemptQuery) -> Result<Vec<AttemptRecord>, StoreError>;
    /// How many removed attempts `query` selects (its cursor and limit aside).
    fn count_removed(&self, query: &AttemptQuery) -> Result<u64, StoreError>;
    /// One attempt, removed or not.
    fn attempt(
        &self,
        namespace: &str,
        deployment: &str,
    ) -> Result<Option<AttemptRecord>, StoreError>;
    /// How many timeline entries each of `deployments` (of one resource) has.
    fn timeline_counts(
        &self,
        namespace: &str,
        resource: &str,
        deployments: &[String],
    ) -> Result<Vec<(String, i64)>, StoreError>;
}

/// The same SQL suits SQLite and PostgreSQL (placeholders numbered for each).
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS deployment_attempts (
    namespace   TEXT    NOT NULL,
    deployment  TEXT    NOT NULL,
    resource    TEXT    NOT NULL,
    project     TEXT    NOT NULL,
    environment TEXT    NOT NULL,
    server      TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    created_ms  BIGINT  NOT NULL,
    removed     BOOLEAN NOT NULL,
    object      TEXT    NOT NULL,
    PRIMARY KEY (namespace, deployment)
);
CREATE INDEX IF NOT EXISTS deployment_attempts_by_resource
    ON deployment_attempts (namespace, resource, removed, created_ms);
CREATE INDEX IF NOT EXISTS deployment_attempts_by_age
    ON deployment_attempts (namespace, removed, created_ms);
";

pub(crate) const UPSERT: &str = "
INSERT INTO deployment_attempts
    (namespace, deployment, resource, project, environment, server, status, created_ms,
     removed, object)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
ON CONFLICT (namespace, deployment) DO UPDATE SET
    resource = excluded.resource, project = excluded.project,
    environment = excluded.environment, server = excluded.server, status = excluded.status,
    created_ms = excluded.created_ms, removed = excluded.removed, object = excluded.object";

pub(crate) const MARK_REMOVED: &str =
    "UPDATE deployment_attempts SET removed = TRUE WHERE namespace = ?1 AND deployment = ?2";

pub(crate) const UNREMOVED: &str =
    "SELECT namespace, deployment FROM deployment_attempts WHERE removed = FALSE";

pub(crate) const COLUMNS: &str = "namespace, deployment, resource, project, environment, server, \
     status, created_ms, removed, object";

pub(crate) const ONE: &str = "SELECT namespace, deployment, resource, project, environment, \
     server, status, created_ms, removed, object FROM deployment_attempts \
     WHERE namespace = ?1 AND deployment = ?2";

/// Removed attempts go with the timelines' retention (`?1` the cutoff, Unix milliseconds).
pub(crate) const PRUNE: &str =
    "DELETE FROM deployment_attempts WHERE removed = TRUE AND created_ms < ?1";

/// Forgetting a resource and pruning timelines take its attempts along.
pub(crate) const FORGET: &str =
    "DELETE FROM deployment_attempts WHERE namespace = ?1 AND resource = ?2";

/// A bound value of a built query.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Text(String),
    Integer(i64),
}

/// How a SQL dialect spells a placeholder and a list of values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

/// A `WHERE` clause and its values, placeholders numbered from 1.
pub(crate) struct Filter {
    dialect: Dialect,
    conditions: Vec<String>,
    pub(crate) values: Vec<Value>,
}

impl Filter {
    fn placeholder(&mut self, value: Value) -> String {
        self.values.push(value);
        match self.dialect {
            Dialect::Sqlite => format!("?{}", self.values.len()),
            Dialect::Postgres => format!("${}", self.values.len()),
        }
    }

    fn equals(&mut self, column: &str, value: Option<&String>) {
        if let Some(value) = value {
            let p = self.placeholder(Value::Text(value.clone()));
            self.conditions.push(format!("{column} = {p}"));
        }
    }

    /// `column IN (…)`; both dialects take a list of placeholders.
    fn within(&mut self, column: &str, values: &[String]) {
        if values.is_empty() {
            return;
        }
        let list: Vec<String> = values
            .iter()
            .map(|v| self.placeholder(Value::Text(v.clone())))
            .collect();
        self.conditions
            .push(format!("{column} IN ({})", list.join(", ")));
    }

    /// The removed attempts `query` selects; with `paged`, only those before its cursor.
    pub(crate) fn of(query: &AttemptQuery, dialect: Dialect, paged: bool) -> Self {
        let mut filter = Self {
            dialect,
            conditions: vec!["removed = TRUE".into()],
            values: Vec::new(),
        };
        let namespace = Some(query.namespace.clone());
        filter.equals("namespace", namespace.as_ref());
        filter.equals("resource", query.resource.as_ref());
        filter.equals("project", query.project.as_ref());
        filter.equals("environment", query.environment.as_ref());
        filter.equals("server", query.server.as_ref());
        filter.equals("status", query.status.as_ref());
        filter.within("resource", &query.within_resources);
        filter.within("project", &query.within_projects);
        filter.within("environment", &query.within_environments);
        if let (true, Some((created_ms, deployment))) = (paged, &query.before) {
            let (a, b) = (
                filter.placeholder(Value::Integer(*created_ms)),
                filter.placeholder(Value::Text(deployment.clone())),
            );
            let c = filter.placeholder(Value::Integer(*created_ms));
            filter.conditions.push(format!(
                "(created_ms < {a} OR (created_ms = {c} AND deployment < {b}))"
            ));
        }
        filter
    }

    pub(crate) fn sql(&self) -> String {
        self.conditions.join(" AND ")
    }

    /// The page of removed attempts, newest first.
    pub(crate) fn select(query: &AttemptQuery, dialect: Dialect) -> (String, Vec<Value>) {
        let mut filter = Self::of(query, dialect, true);
        let limit = filter.placeholder(Value::Integer(
            i64::try_from(query.limit).unwrap_or(i64::MAX),
        ));
        let sql = format!(
            "SELECT {COLUMNS} FROM deployment_attempts WHERE {} \
             ORDER BY created_ms DESC, deployment DESC LIMIT {limit}",
            filter.sql()
        );
        (sql, filter.values)
    }

    pub(crate) fn count(query: &AttemptQuery, dialect: Dialect) -> (String, Vec<Value>) {
        let filter = Self::of(query, dialect, false);
        let sql = format!(
            "SELECT count(*) FROM deployment_attempts WHERE {}",
            filter.sql()
        );
        (sql, filter.values)
    }
}

/// `SELECT deployment, count(*)` of the timelines of `deployments` of one resource.
pub(crate) fn timeline_counts_sql(dialect: Dialect, deployments: usize) -> String {
    let placeholder = |n: usize| match dialect {
        Dialect::Sqlite => format!("?{n}"),
        Dialect::Postgres => format!("${n}"),
    };
    let list: Vec<String> = (3..3 + deployments).map(placeholder).collect();
    format!(
        "SELECT deployment, count(*) FROM deployment_timeline \
         WHERE namespace = {} AND resource = {} AND deployment IN ({}) GROUP BY deployment",
        placeholder(1),
        placeholder(2),
        list.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_filters_by_scope_and_cursor_with_numbered_placeholders() {
        let query = AttemptQuery {
            namespace: "org-a".into(),
            resource: Some("web".into()),
            within_projects: vec!["prj-1".into(), "prj-2".into()],
            before: Some((10, "dep-web-3".into())),
            limit: 5,
            ..AttemptQuery::default()
        };
        let (sql, values) = Filter::select(&query, Dialect::Postgres);
        assert!(sql.contains("namespace = $1 AND resource = $2"), "{sql}");
        assert!(sql.contains("project IN ($3, $4)"), "{sql}");
        assert!(sql.contains("created_ms < $5 OR (created_ms = $7 AND deployment < $6)"));
        assert!(sql.ends_with("LIMIT $8"), "{sql}");
        assert_eq!(values.len(), 8);
        let (count, values) = Filter::count(&query, Dialect::Sqlite);
        assert!(
            !count.contains("created_ms <"),
            "the cursor does not count: {count}"
        );
        assert_eq!(values.len(), 4);
    }
}

//! Runtime monitoring samples (spec §2.2 "Monitoring sample", §4.5): what the controller's
//! server observer measured on each tick, for a server's host and for each managed container,
//! recorded in one call per server and tick, and read back by the shim's
//! `GET /runtime-monitoring/samples` by scope and window. Each row keeps the whole sample as
//! JSON (`sample`) beside the columns queries filter on.

use berth_crds::monitoring::{MonitoringSample, STORED_METRICS, ScopeKind};

use super::StoreError;

/// Table and indexes of the samples, created when a store opens; the same SQL suits SQLite and
/// PostgreSQL.
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS monitoring_samples (
    sample_id   TEXT   PRIMARY KEY,
    namespace   TEXT   NOT NULL,
    server      TEXT   NOT NULL,
    scope       TEXT   NOT NULL,
    project     TEXT,
    environment TEXT,
    resource    TEXT,
    deployment  TEXT,
    observed_ms BIGINT NOT NULL,
    sample      TEXT   NOT NULL
);
CREATE INDEX IF NOT EXISTS monitoring_samples_by_server
    ON monitoring_samples (namespace, server, observed_ms);
CREATE INDEX IF NOT EXISTS monitoring_samples_by_resource
    ON monitoring_samples (namespace, resource, observed_ms);
CREATE INDEX IF NOT EXISTS monitoring_samples_by_age
    ON monitoring_samples (observed_ms);
";

/// The rollup table of one backend: its columns (the same for both) and its primary key, with
/// the indexes both use.
macro_rules! rollups_schema {
    ($primary_key:literal, $table_options:literal, $extra_indexes:literal) => {
        concat!(
            "
CREATE TABLE IF NOT EXISTS monitoring_rollups (
    namespace   TEXT   NOT NULL,
    series      TEXT   NOT NULL,
    tier        TEXT   NOT NULL,
    bucket_ms   BIGINT NOT NULL,
    metric      TEXT   NOT NULL,
    server      TEXT   NOT NULL,
    scope       TEXT   NOT NULL,
    project     TEXT,
    environment TEXT,
    resource    TEXT,
    deployment  TEXT,
    n           BIGINT NOT NULL,
    total       DOUBLE PRECISION NOT NULL,
    lo          DOUBLE PRECISION NOT NULL,
    hi          DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (",
            $primary_key,
            ")
)",
            $table_options,
            ";
CREATE INDEX IF NOT EXISTS monitoring_rollups_by_resource
    ON monitoring_rollups (namespace, tier, resource, bucket_ms);
CREATE INDEX IF NOT EXISTS monitoring_rollups_by_server
    ON monitoring_rollups (namespace, tier, server, bucket_ms);
CREATE INDEX IF NOT EXISTS monitoring_rollups_by_age
    ON monitoring_rollups (bucket_ms);
",
            $extra_indexes
        )
    };
}

/// SQLite keeps the rollups clustered by tier and scope (no rowid): a week of one tier's
/// totals, or of every container, is one contiguous range of pages, not rows strewn among
/// the far more numerous minute buckets.
pub(crate) const SQLITE_ROLLUPS_SCHEMA: &str = rollups_schema!(
    "namespace, tier, scope, series, bucket_ms, metric",
    " WITHOUT ROWID",
    ""
);
/// PostgreSQL: a heap, and an index for reads by tier and scope.
pub(crate) const POSTGRES_ROLLUPS_SCHEMA: &str = rollups_schema!(
    "namespace, series, tier, bucket_ms, metric",
    "",
    "CREATE INDEX IF NOT EXISTS monitoring_rollups_by_scope
    ON monitoring_rollups (namespace, tier, scope, bucket_ms);"
);

/// Adds one contribution to a rollup row (the same SQL for both backends, given the
/// backend's primary key; `excluded` is the row that conflicted). A macro, so statements can
/// `concat!` it.
macro_rules! upsert_rollup_tail {
    ($primary_key:literal) => {
        concat!(
            "
ON CONFLICT (",
            $primary_key,
            ") DO UPDATE SET
    n = monitoring_rollups.n + excluded.n,
    total = monitoring_rollups.total + excluded.total,
    lo = CASE WHEN excluded.lo < monitoring_rollups.lo THEN excluded.lo
              ELSE monitoring_rollups.lo END,
    hi = CASE WHEN excluded.hi > monitoring_rollups.hi THEN excluded.hi
              ELSE monitoring_rollups.hi END"
        )
    };
}
pub(crate) use upsert_rollup_tail;

/// Rollup granularities (`bucket` of `GET /runtime-monitoring/rollup`), kept as samples are
/// recorded so a window of weeks reads a few rows per series, not every sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tier {
    Minute,
    FiveMinute,
    Hour,
}

impl Tier {
    pub const ALL: [Tier; 3] = [Tier::Minute, Tier::FiveMinute, Tier::Hour];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minute => "minute",
            Self::FiveMinute => "five-minute",
            Self::Hour => "hour",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == value)
    }

    pub fn millis(self) -> i64 {
        match self {
            Self::Minute => 60_000,
            Self::FiveMinute => 300_000,
            Self::Hour => 3_600_000,
        }
    }

    /// Start of the bucket holding `at_ms`.
    pub fn bucket(self, at_ms: i64) -> i64 {
        at_ms - at_ms.rem_euclid(self.millis())
    }
}

/// One series' aggregate of one metric over one bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct RollupRow {
    /// `host:<server>` for a host, else the container id.
    pub series: String,
    pub server: String,
    /// `server` (a host) or `resource` (a container), as in the samples table.
    pub scope: String,
    pub project: Option<String>,
    pub environment: Option<String>,
    pub resource: Option<String>,
    pub deployment: Option<String>,
    pub bucket_ms: i64,
    /// A `Totals` field's JSON name, e.g. `containerCpuPercent`.
    pub metric: String,
    pub count: i64,
    pub total: f64,
    pub min: f64,
    pub max: f64,
}

impl RollupRow {
    /// Whether the row measures hosts (one, or all of them), not containers.
    pub fn of_hosts(&self) -> bool {
        self.scope == SERVER_SCOPE || self.scope == TOTAL_HOSTS
    }

    /// A row with no key and no sums, to fill in.
    fn empty() -> Self {
        Self {
            series: String::new(),
            server: String::new(),
            scope: String::new(),
            project: None,
            environment: None,
            resource: None,
            deployment: None,
            bucket_ms: 0,
            metric: String::new(),
            count: 0,
            total: 0.0,
            min: 0.0,
            max: 0.0,
        }
    }
}

/// What rollup to read: the filters of [`SampleQuery`] (its `limit` unused), a tier, and
/// whether the scope's totals will do.
#[derive(Debug, Clone)]
pub struct RollupQuery {
    pub filters: SampleQuery,
    pub tier: Tier,
    pub detail: Detail,
}

/// How much of a rollup a reader needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// The scope's sum per bucket: the pre-summed totals rows where the filters match a
    /// grouping the store keeps (the namespace, a project, an environment, a server), so a
    /// week of a whole organization reads a few rows per bucket; every series otherwise.
    Totals,
    /// Every container's and host's own rows (a deploy token filters out what it may not see).
    Series,
}

/// One sample and whose it is.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRecord {
    /// The organization namespace of the server measured.
    pub namespace: String,
    /// When the server read its counters, in Unix milliseconds (the sample's `observedAt`).
    pub observed_ms: i64,
    pub sample: MonitoringSample,
}

/// What to read: one organization namespace, optional filters, a window, the latest `limit`.
#[derive(Debug, Clone, Default)]
pub struct SampleQuery {
    pub namespace: String,
    /// Some(Server): host samples only; Some(any other kind): container samples only; None: both.
    pub kind: Option<ScopeKind>,
    pub server: Option<String>,
    pub project: Option<String>,
    pub environment: Option<String>,
    pub resource: Option<String>,
    pub deployment: Option<String>,
    pub from_ms: i64,
    pub to_ms: i64,
    pub limit: usize,
}

/// Where samples live: every [`ObservationStore`](crate::ObservationStore) keeps them too. Calls
/// block, as every store call.
pub trait MonitoringStore: Send + Sync {
    /// Stores `samples` all or none; a sample whose `sample_id` is stored already is skipped.
    fn record_samples(&self, samples: &[SampleRecord]) -> Result<(), StoreError>;
    /// The latest `limit` samples observed in [from_ms, to_ms] matching the filters, oldest first.
    fn samples(&self, query: &SampleQuery) -> Result<Vec<MonitoringSample>, StoreError>;
    /// Deletes samples observed before `before_ms`, and rollup buckets starting before it;
    /// returns how many samples.
    fn prune_samples(&self, before_ms: i64) -> Result<usize, StoreError>;
    /// The rollup rows of `query.tier` whose buckets start in the window, matching the
    /// filters, oldest bucket first: every series', or with [`Detail::Totals`] the scope's
    /// totals where the store keeps them.
    fn rollup(&self, query: &RollupQuery) -> Result<Vec<RollupRow>, StoreError>;
    /// Per resource of the scope, its [`CONTRIBUTOR_METRICS`] summed over the window: one row
    /// per resource and metric (`series` the resource, `bucket_ms` its first bucket).
    fn resource_usage(&self, query: &RollupQuery) -> Result<Vec<RollupRow>, StoreError>;
}

/// What ranks resources in `topContributors`: their containers' CPU share, then memory bytes.
pub const CONTRIBUTOR_METRICS: [&str; 2] = ["containerCpuPercent", "memoryUsedBytes"];

/// A sample's contribution to each tier's bucket of each metric it holds: to its own series,
/// and to the totals of every grouping it belongs to.
pub(crate) fn contributions(record: &SampleRecord) -> Vec<(Tier, RollupRow)> {
    let sample = &record.sample;
    let metrics: Vec<(&str, f64)> = STORED_METRICS
        .iter()
        .filter_map(|m| Some((m.name, (m.read)(&sample.totals)?)))
        .collect();
    let series = std::iter::once(own_series(sample)).chain(totals_series(sample));
    let mut rows = Vec::new();
    for key in series {
        for tier in Tier::ALL {
            for (metric, value) in &metrics {
                let row = RollupRow {
                    bucket_ms: tier.bucket(record.observed_ms),
                    metric: metric.to_string(),
                    count: 1,
                    total: *value,
                    min: *value,
                    max: *value,
                    ..key.clone()
                };
                rows.push((tier, row));
            }
        }
    }
    rows
}

/// The row key of a sample's own series: its container, or its host.
fn own_series(sample: &MonitoringSample) -> RollupRow {
    let evidence = &sample.scope_evidence;
    RollupRow {
        series: match &sample.labels.runtime_id {
            Some(id) => id.clone(),
            None => format!("host:{}", evidence.server_id),
        },
        server: evidence.server_id.clone(),
        scope: scope_of(sample).to_string(),
        project: evidence.project_id.clone(),
        environment: evidence.environment_id.clone(),
        resource: evidence.resource_id.clone(),
        deployment: evidence.deployment_id.clone(),
        ..RollupRow::empty()
    }
}

/// `scope` column of the totals rows of each grouping.
pub(crate) const TOTAL_HOSTS: &str = "total-hosts";
pub(crate) const TOTAL_NAMESPACE: &str = "total-namespace";
pub(crate) const TOTAL_PROJECT: &str = "total-project";
pub(crate) const TOTAL_ENVIRONMENT: &str = "total-environment";
pub(crate) const TOTAL_SERVER: &str = "total-server";

/// The totals a sample adds to: every host's; or, for a container, the namespace's, its
/// server's, its project's and its environment's. Their rows carry only the columns of the
/// grouping, so the filters of a query apply to them as to any row.
fn totals_series(sample: &MonitoringSample) -> Vec<RollupRow> {
    let evidence = &sample.scope_evidence;
    let total = |scope: &str, series: String| RollupRow {
        series,
        scope: scope.to_string(),
        ..RollupRow::empty()
    };
    if scope_of(sample) == SERVER_SCOPE {
        return vec![total(TOTAL_HOSTS, "hosts".into())];
    }
    let server = &evidence.server_id;
    let mut totals = vec![
        total(TOTAL_NAMESPACE, "containers".into()),
        RollupRow {
            server: server.clone(),
            ..total(TOTAL_SERVER, format!("containers:server:{server}"))
        },
    ];
    if let Some(project) = &evidence.project_id {
        totals.push(RollupRow {
            project: Some(project.clone()),
            ..total(TOTAL_PROJECT, format!("containers:project:{project}"))
        });
        if let Some(environment) = &evidence.environment_id {
            totals.push(RollupRow {
                project: Some(project.clone()),
                environment: Some(environment.clone()),
                ..total(
                    TOTAL_ENVIRONMENT,
                    format!("containers:environment:{project}/{environment}"),
                )
            });
        }
    }
    totals
}

/// How a rollup read selects its rows: the index it goes through, the two `scope` values it
/// takes (the same twice for one), and the filters that remain.
pub(crate) struct RollupRead {
    pub access: Access,
    pub scopes: [&'static str; 2],
    pub filters: SampleQuery,
}

impl RollupRead {
    pub(crate) fn of(query: &RollupQuery) -> Self {
        let filters = &query.filters;
        let per_series = || {
            let scopes = match scope_filter(filters.kind) {
                Some(scope) => [scope, scope],
                None => [SERVER_SCOPE, CONTAINER_SCOPE],
            };
            Self {
                access: Access::of(filters),
                scopes,
                filters: filters.clone(),
            }
        };
        if query.detail == Detail::Series
            || filters.resource.is_some()
            || filters.deployment.is_some()
        {
            return per_series();
        }
        let hosts_only = filters.kind == Some(ScopeKind::Server);
        let with_hosts = filters.kind.is_none();
        let grouped = filters.project.is_some() || filters.environment.is_some();
        let (access, scopes) = match (&filters.server, grouped) {
            (Some(_), true) => return per_series(),
            (Some(_), false) if hosts_only => return per_series(),
            (Some(_), false) if with_hosts => (Access::Server, [TOTAL_SERVER, SERVER_SCOPE]),
            (Some(_), false) => (Access::Server, [TOTAL_SERVER, TOTAL_SERVER]),
            (None, _) if hosts_only => (Access::Namespace, [TOTAL_HOSTS, TOTAL_HOSTS]),
            (None, true) if filters.environment.is_some() => {
                (Access::Namespace, [TOTAL_ENVIRONMENT, TOTAL_ENVIRONMENT])
            }
            (None, true) => (Access::Namespace, [TOTAL_PROJECT, TOTAL_PROJECT]),
            (None, false) if with_hosts => (Access::Namespace, [TOTAL_NAMESPACE, TOTAL_HOSTS]),
            (None, false) => (Access::Namespace, [TOTAL_NAMESPACE, TOTAL_NAMESPACE]),
        };
        Self {
            access,
            scopes,
            filters: filters.clone(),
        }
    }
}

impl RollupRead {
    /// The read of [`MonitoringStore::resource_usage`]: every container series in scope.
    pub(crate) fn of_usage(query: &RollupQuery) -> Self {
        Self {
            scopes: [CONTAINER_SCOPE, CONTAINER_SCOPE],
            ..Self::of(&RollupQuery {
                detail: Detail::Series,
                ..query.clone()
            })
        }
    }

    /// The backend's statement for this read's access, of its three (by resource, by
    /// server, by namespace).
    pub(crate) fn statement(
        &self,
        [resource, server, namespace]: [&'static str; 3],
    ) -> &'static str {
        match self.access {
            Access::Resource => resource,
            Access::Server => server,
            Access::Namespace => namespace,
        }
    }
}

/// A [`RollupRow`] from the columns every rollup read selects, in their order; `?` after the
/// row when reading a column can fail (SQLite's `get`), nothing when it panics instead.
macro_rules! rollup_row {
    ($row:ident $($try:tt)?) => {
        RollupRow {
            series: $row.get(0)$($try)?,
            server: $row.get(1)$($try)?,
            scope: $row.get(2)$($try)?,
            project: $row.get(3)$($try)?,
            environment: $row.get(4)$($try)?,
            resource: $row.get(5)$($try)?,
            deployment: $row.get(6)$($try)?,
            bucket_ms: $row.get(7)$($try)?,
            metric: $row.get(8)$($try)?,
            count: $row.get(9)$($try)?,
            total: $row.get(10)$($try)?,
            min: $row.get(11)$($try)?,
            max: $row.get(12)$($try)?,
        }
    };
}
pub(crate) use rollup_row;

/// Sums the contributions of one batch (each with its namespace) that land in the same row,
/// so each row is written once per batch.
pub(crate) fn merged(
    contributions: impl IntoIterator<Item = (String, Tier, RollupRow)>,
) -> Vec<(String, Tier, RollupRow)> {
    type Key = (String, String, Tier, i64, String);
    let mut rows: std::collections::HashMap<Key, RollupRow> = std::collections::HashMap::new();
    for (namespace, tier, row) in contributions {
        let key = (
            namespace,
            row.series.clone(),
            tier,
            row.bucket_ms,
            row.metric.clone(),
        );
        rows.entry(key)
            .and_modify(|sum| {
                sum.count += row.count;
                sum.total += row.total;
                sum.min = sum.min.min(row.min);
                sum.max = sum.max.max(row.max);
            })
            .or_insert(row);
    }
    rows.into_iter()
        .map(|((namespace, _, tier, _, _), row)| (namespace, tier, row))
        .collect()
}

/// `scope` column of host samples.
pub(crate) const SERVER_SCOPE: &str = "server";
/// `scope` column of container samples, whatever scope their evidence names.
pub(crate) const CONTAINER_SCOPE: &str = "resource";

/// The `scope` column of a sample: a host's, or a container's.
pub(crate) fn scope_of(sample: &MonitoringSample) -> &'static str {
    let host = match sample.scope_evidence.scope {
        Some(kind) => kind == ScopeKind::Server,
        None => sample.labels.artifact_kind == "host",
    };
    if host { SERVER_SCOPE } else { CONTAINER_SCOPE }
}

/// The `scope` column a query's kind selects; `None`: either.
pub(crate) fn scope_filter(kind: Option<ScopeKind>) -> Option<&'static str> {
    kind.map(|kind| {
        if kind == ScopeKind::Server {
            SERVER_SCOPE
        } else {
            CONTAINER_SCOPE
        }
    })
}

/// Which index a query goes through: a resource's, a server's, or the namespace's. The other
/// filters apply as `(param IS NULL OR column = param)`, so each plan stays one fixed statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Resource,
    Server,
    Namespace,
}

impl Access {
    pub(crate) fn of(query: &SampleQuery) -> Self {
        if query.resource.is_some() {
            Self::Resource
        } else if query.server.is_some() {
            Self::Server
        } else {
            Self::Namespace
        }
    }
}

/// The columns of one stored sample, as both backends bind them.
pub(crate) struct Row<'a> {
    pub sample_id: &'a str,
    pub namespace: &'a str,
    pub server: &'a str,
    pub scope: &'static str,
    pub project: Option<&'a str>,
    pub environment: Option<&'a str>,
    pub resource: Option<&'a str>,
    pub deployment: Option<&'a str>,
    pub observed_ms: i64,
    pub sample: String,
}

impl<'a> Row<'a> {
    pub(crate) fn of(record: &'a SampleRecord) -> Result<Self, StoreError> {
        let evidence = &record.sample.scope_evidence;
        Ok(Self {
            sample_id: &record.sample.sample_id,
            namespace: &record.namespace,
            server: &evidence.server_id,
            scope: scope_of(&record.sample),
            project: evidence.project_id.as_deref(),
            environment: evidence.environment_id.as_deref(),
            resource: evidence.resource_id.as_deref(),
            deployment: evidence.deployment_id.as_deref(),
            observed_ms: record.observed_ms,
            sample: serde_json::to_string(&record.sample)?,
        })
    }
}

/// Samples read newest first (the latest `limit`), decoded, in the answer's order: oldest first.
pub(crate) fn oldest_first(
    newest_first: impl IntoIterator<Item = String>,
) -> Result<Vec<MonitoringSample>, StoreError> {
    let mut samples = newest_first
        .into_iter()
        .map(|json| serde_json::from_str(&json))
        .collect::<Result<Vec<MonitoringSample>, _>>()?;
    samples.reverse();
    Ok(samples)
}

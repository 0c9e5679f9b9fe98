//! The connections of one store: up to [`MAX_CONNECTIONS`], opened on demand, each with the
//! statements prepared on it, and what tells a failure that lost its connection (and may be
//! run again) from one that may have committed.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_postgres::error::Severity;
use tokio_postgres::{Client, Config, Statement};

use super::tls::MakeRustls;

use crate::StoreError;

/// Connections one process keeps at most: one writer, the pruner, and the shim's readers.
const MAX_CONNECTIONS: usize = 8;
/// How long a call waits for a free connection before it fails.
const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(30);

/// A failed operation, and whether running it again is safe should its connection be closed.
pub(super) struct Failed {
    pub(super) error: tokio_postgres::Error,
    pub(super) retry: bool,
}

impl Failed {
    /// A COMMIT that failed may have committed all the same: never repeat it.
    pub(super) fn maybe_committed(error: tokio_postgres::Error) -> Self {
        Self {
            error,
            retry: false,
        }
    }
}

impl From<tokio_postgres::Error> for Failed {
    fn from(error: tokio_postgres::Error) -> Self {
        Self { error, retry: true }
    }
}

/// One connection and the statements prepared on it.
pub(super) struct Connection {
    pub(super) client: Client,
    statements: HashMap<&'static str, Statement>,
}

impl Connection {
    pub(super) async fn prepare(
        &mut self,
        sql: &'static str,
    ) -> Result<Statement, tokio_postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).await?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }
}

/// Up to [`MAX_CONNECTIONS`] connections, opened on demand and kept while they stay open.
pub(super) struct Pool {
    config: Config,
    tls: MakeRustls,
    idle: Mutex<Vec<Connection>>,
    permits: Semaphore,
}

impl Pool {
    pub(super) fn new(config: Config, tls: MakeRustls) -> Self {
        Self {
            config,
            tls,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(MAX_CONNECTIONS),
        }
    }

    pub(super) async fn get(&self) -> Result<Lease<'_>, StoreError> {
        let permit = tokio::time::timeout(CHECKOUT_TIMEOUT, self.permits.acquire())
            .await
            .map_err(|_| StoreError::Exhausted(CHECKOUT_TIMEOUT))?
            .expect("the pool's semaphore is never closed");
        let connection = loop {
            let idle = self.idle_connections().pop();
            match idle {
                Some(connection) if connection.client.is_closed() => continue,
                Some(connection) => break connection,
                None => break self.connect().await?,
            }
        };
        Ok(Lease {
            pool: self,
            connection: Some(connection),
            _permit: permit,
        })
    }

    async fn connect(&self) -> Result<Connection, tokio_postgres::Error> {
        let (client, connection) = self.config.connect(self.tls.clone()).await?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "observation store connection closed");
            }
        });
        // The durability SQLite's WAL with `synchronous = NORMAL` gives: a crash of the server
        // may lose the last moments of observations, never consistency; a commit does not
        // wait for its own flush, which keeps single-entry appends from costing an fsync each.
        client.batch_execute("SET synchronous_commit = off").await?;
        Ok(Connection {
            client,
            statements: HashMap::new(),
        })
    }

    pub(super) fn clear_idle(&self) {
        self.idle_connections().clear();
    }

    fn idle_connections(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        // The list stays consistent whatever panicked while holding it.
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A connection taken from the pool; it goes back when dropped, unless it closed.
pub(super) struct Lease<'a> {
    pool: &'a Pool,
    connection: Option<Connection>,
    _permit: SemaphorePermit<'a>,
}

impl Lease<'_> {
    pub(super) fn connection(&mut self) -> &mut Connection {
        self.connection
            .as_mut()
            .expect("a lease holds its connection until dropped")
    }

    /// Whether `error` ended the session: the client noticed, or the server said so (a FATAL
    /// error such as `57P01` on a restart or termination), or the socket failed. The client
    /// may learn of it only later, so the error itself is read too.
    pub(super) fn connection_lost(&mut self, error: &tokio_postgres::Error) -> bool {
        let fatal = error.as_db_error().is_some_and(|db| {
            matches!(
                db.parsed_severity(),
                Some(Severity::Fatal | Severity::Panic)
            )
        });
        let connection_class = error
            .code()
            .is_some_and(|code| code.code().starts_with("08"));
        let io = std::error::Error::source(error).is_some_and(|s| s.is::<std::io::Error>());
        self.connection().client.is_closed() || error.is_closed() || fatal || connection_class || io
    }

    /// Keeps the connection out of the pool.
    pub(super) fn discard(&mut self) {
        self.connection = None;
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take()
            && !connection.client.is_closed()
        {
            self.pool.idle_connections().push(connection);
        }
    }
}

//! Opening the database: the one place that knows how the SQLite file is configured.
//!
//! Every connection gets the same pragmas (WAL, `synchronous=NORMAL`, `foreign_keys=ON`, a busy timeout), and
//! start-up runs on a single probe connection before the pool exists, so that a locked, foreign, damaged or
//! too-new file is reported as one clear [`Error`] instead of surfacing later as a failed query (or a panic).

use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::migrate::{MigrateError, Migrator};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use sqlx::{ConnectOptions, Connection};

use crate::error::{Error, Fault, classify, sqlite_message};

/// Default database file, relative to the working directory.
pub const DEFAULT_PATH: &str = "switchboard.db";
/// Default time a statement waits for another connection's lock before failing.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Default size of the connection pool.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 8;

/// The schema, embedded at compile time (see `build.rs`).
static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// Where and how to open the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreConfig {
    /// The SQLite file. It and its parent directory are created when missing.
    pub path: PathBuf,
    /// How long a statement waits for a lock held by another connection or process before it fails.
    /// It also bounds how long [`Store::open`] waits before reporting [`Error::Locked`].
    pub busy_timeout: Duration,
    /// Upper bound on pooled connections; `0` is treated as `1`.
    pub max_connections: u32,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            path: PathBuf::from(DEFAULT_PATH),
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// A cloneable handle on the database; clones share one connection pool.
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) pool: SqlitePool,
}

impl Store {
    /// Opens (creating if missing) the database file at `config.path`, checks it and brings its schema up to
    /// date.
    ///
    /// # Errors
    /// [`Error::Locked`] when another process holds the file past the busy timeout, [`Error::Corrupt`] when it is
    /// not a usable SQLite database, [`Error::SchemaTooNew`] when a newer switchboard migrated it, and
    /// [`Error::CreateDir`], [`Error::Open`] or [`Error::Migrate`] otherwise.
    pub async fn open(config: &StoreConfig) -> Result<Store, Error> {
        let path = config.path.as_path();
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|source| Error::CreateDir { path: dir.to_path_buf(), source })?;
        }

        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(config.busy_timeout);

        // Probe on one connection: the pragmas above run on connect, so a foreign or locked file fails here.
        let mut probe = connect_patiently(path, &options, config.busy_timeout).await?;
        let prepared = prepare(path, &mut probe).await;
        if let Err(error) = probe.close().await {
            tracing::warn!(path = %path.display(), %error, "closing the start-up connection failed");
        }
        prepared?;

        let pool = SqlitePoolOptions::new()
            .max_connections(config.max_connections.max(1))
            .connect_with(options)
            .await
            .map_err(|e| startup_error(path, e))?;
        tracing::info!(path = %path.display(), "store opened");
        Ok(Store { pool })
    }

    /// Opens a fresh, private in-memory database with the current schema, for tests.
    ///
    /// The pool holds exactly one connection that is never recycled, because an in-memory database lives only
    /// as long as its connection.
    ///
    /// # Errors
    /// [`Error::Open`] or [`Error::Migrate`]; neither is expected in practice.
    pub async fn open_in_memory() -> Result<Store, Error> {
        let path = Path::new(":memory:");
        let options = SqliteConnectOptions::new().in_memory(true).foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(|e| startup_error(path, e))?;
        let mut conn = pool.acquire().await.map_err(|e| startup_error(path, e))?;
        prepare(path, &mut conn).await?;
        drop(conn);
        Ok(Store { pool })
    }

    /// Closes every connection, waiting for checked-out ones to come back. Later calls fail with a
    /// [`Error::Query`] whose source is [`sqlx::Error::PoolClosed`].
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// First pause between connection attempts on a locked file; it doubles up to [`MAX_LOCKED_PAUSE`].
const FIRST_LOCKED_PAUSE: Duration = Duration::from_millis(5);
/// Longest pause between connection attempts on a locked file.
const MAX_LOCKED_PAUSE: Duration = Duration::from_millis(100);

/// Connects, trying again while the file is locked, for up to `patience` (the busy timeout).
///
/// Switching a fresh file to WAL needs an exclusive lock that SQLite's busy timeout does not wait for
/// (sqlx notes the same), so several processes opening a fresh file together would otherwise see all but
/// one fail at once. A file that stays locked is still [`Error::Locked`], after the same wait as any other
/// lock.
async fn connect_patiently(
    path: &Path,
    options: &SqliteConnectOptions,
    patience: Duration,
) -> Result<SqliteConnection, Error> {
    let deadline = tokio::time::Instant::now() + patience;
    let mut pause = FIRST_LOCKED_PAUSE;
    loop {
        match options.connect().await.map_err(|e| startup_error(path, e)) {
            Err(Error::Locked { .. }) if tokio::time::Instant::now() + pause < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_LOCKED_PAUSE);
            }
            other => return other,
        }
    }
}

/// Start-up checks and migrations, on one connection.
///
/// Several processes may open a fresh file at the same moment. sqlx's migrator does not lock SQLite, so each
/// would read "nothing applied" and the second to run the first migration would fail ("table servers already
/// exists"). The version check and the migrations therefore run in one write transaction begun with
/// `BEGIN IMMEDIATE`, which waits (up to the busy timeout) for another migrator to commit: whoever comes second
/// finds every migration applied and does nothing. Each migration runs in a savepoint inside it, so a failing
/// one still leaves the file as it was.
async fn prepare(path: &Path, conn: &mut SqliteConnection) -> Result<(), Error> {
    quick_check(path, conn).await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(|e| startup_error(path, e))?;
    refuse_newer_schema(path, &mut tx).await?;
    MIGRATOR.run(&mut *tx).await.map_err(|e| migrate_error(path, e))?;
    tx.commit().await.map_err(|e| startup_error(path, e))
}

/// `PRAGMA quick_check`: a cheap (no index cross-checks) scan that catches damaged pages at start-up rather
/// than in the middle of a later write.
async fn quick_check(path: &Path, conn: &mut SqliteConnection) -> Result<(), Error> {
    // At most five findings: enough for the error message, and the check stops early on a wrecked file.
    let findings: Vec<String> = sqlx::query_scalar("PRAGMA quick_check(5)")
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| startup_error(path, e))?;
    match findings.as_slice() {
        [ok] if ok == "ok" => Ok(()),
        _ => Err(Error::Corrupt {
            path: path.to_path_buf(),
            // Findings are multi-line ("*** in database main ***\nTree 4 page 116: ..."); keep the message
            // on one line.
            detail: format!(
                "integrity check failed: {}",
                findings.iter().flat_map(|f| f.lines()).map(str::trim).collect::<Vec<_>>().join("; ")
            ),
        }),
    }
}

/// Refuses a file whose newest applied migration is newer than any this binary embeds: running against a
/// schema we do not know could corrupt data that a newer switchboard relies on.
async fn refuse_newer_schema(path: &Path, conn: &mut SqliteConnection) -> Result<(), Error> {
    let has_history: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations')",
    )
    .fetch_one(&mut *conn)
    .await
    .map_err(|e| startup_error(path, e))?;
    if !has_history {
        return Ok(());
    }
    let found: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| startup_error(path, e))?;
    let supported = supported_version();
    match found {
        Some(found) if found > supported => {
            Err(Error::SchemaTooNew { path: path.to_path_buf(), found, supported })
        }
        _ => Ok(()),
    }
}

/// The newest migration embedded in this binary.
fn supported_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// Maps an error met while opening: lock and corruption codes become their own variants.
fn startup_error(path: &Path, source: sqlx::Error) -> Error {
    match classify(&source) {
        Fault::Locked => Error::Locked { path: path.to_path_buf() },
        Fault::Corrupt => Error::Corrupt { path: path.to_path_buf(), detail: sqlite_message(&source) },
        Fault::Other => Error::Open { path: path.to_path_buf(), source },
    }
}

/// Maps a migration error, keeping lock/corruption/too-new distinct from genuine migration failures.
fn migrate_error(path: &Path, source: MigrateError) -> Error {
    match source {
        MigrateError::Execute(e) | MigrateError::ExecuteMigration(e, _) if classify(&e) != Fault::Other => {
            startup_error(path, e)
        }
        MigrateError::VersionMissing(found) if found > supported_version() => {
            Error::SchemaTooNew { path: path.to_path_buf(), found, supported: supported_version() }
        }
        source => Error::Migrate { path: path.to_path_buf(), source },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_documented_values() {
        let config = StoreConfig::default();
        assert_eq!(config.path, PathBuf::from("switchboard.db"));
        assert_eq!(config.busy_timeout, Duration::from_secs(5));
        assert_eq!(config.max_connections, 8);
    }

    #[test]
    fn the_embedded_schema_has_a_version() {
        assert!(supported_version() > 0);
    }
}

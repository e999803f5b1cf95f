//! The store's error type.
//!
//! Start-up failures that an operator can fix (file locked by another process, file not a database, schema
//! written by a newer switchboard) get their own variants with messages that say what to do; everything
//! else carries the table, the operation and the server id it concerned, with the sqlx error as its source.

use std::path::PathBuf;

/// SQLite primary result codes this crate reacts to (`https://sqlite.org/rescode.html`).
/// Extended codes carry the primary code in their low byte.
const SQLITE_BUSY: i32 = 5;
const SQLITE_LOCKED: i32 = 6;
const SQLITE_CORRUPT: i32 = 11;
const SQLITE_NOTADB: i32 = 26;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Another process holds a lock on the database file that outlasted the busy timeout.
    #[error(
        "database file {} is in use by another process (it holds a lock on it); stop the other switchboard \
         (or whatever has the file open) or pass another --db path",
        path.display()
    )]
    Locked {
        /// The database file.
        path: PathBuf,
    },

    /// The file exists but is not a usable SQLite database (not SQLite at all, or damaged).
    #[error(
        "database file {} is not a usable sqlite database ({detail}); move it aside to start with an empty \
         store, or pass another --db path",
        path.display()
    )]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What SQLite reported (error message or the first `PRAGMA quick_check` findings).
        detail: String,
    },

    /// The database was migrated by a newer switchboard: this binary does not know its schema.
    #[error(
        "database file {} has schema version {found}, newer than version {supported} that this switchboard \
         knows; upgrade switchboard or pass another --db path",
        path.display()
    )]
    SchemaTooNew {
        /// The database file.
        path: PathBuf,
        /// The newest migration recorded in the file.
        found: i64,
        /// The newest migration embedded in this binary.
        supported: i64,
    },

    /// The directory that should hold the database file could not be created.
    #[error("cannot create directory {} for the database file", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },

    /// The database could not be opened for a reason other than locking or corruption.
    #[error("cannot open database file {}", path.display())]
    Open {
        /// The database file.
        path: PathBuf,
        /// The underlying sqlx error.
        #[source]
        source: sqlx::Error,
    },

    /// Applying the embedded migrations failed.
    #[error("cannot migrate database file {} to the current schema", path.display())]
    Migrate {
        /// The database file.
        path: PathBuf,
        /// The underlying migration error.
        #[source]
        source: sqlx::migrate::MigrateError,
    },

    /// A statement failed at run time.
    #[error("{action} in table {table} failed")]
    Query {
        /// The table the statement was about.
        table: &'static str,
        /// What the store was doing, naming the server where there is one.
        action: String,
        /// The underlying sqlx error.
        #[source]
        source: sqlx::Error,
    },

    /// The operation names a server that is not in the `servers` table.
    #[error("server {server_id} is not in the store (table {table}); upsert it first")]
    UnknownServer {
        /// The table the operation was about.
        table: &'static str,
        /// The server id that was not found.
        server_id: String,
    },

    /// The operation names a flow run that is not in the `runs` table.
    #[error("run {run_id} is not in the store (table {table}); insert the run first")]
    UnknownRun {
        /// The table the operation was about.
        table: &'static str,
        /// The run id that was not found.
        run_id: String,
    },

    /// A JSON column holds text that does not decode into the record's type.
    #[error("column {table}.{column} of row {row} does not hold the expected json")]
    Json {
        /// The table.
        table: &'static str,
        /// The column.
        column: &'static str,
        /// The row's key (server id or row id).
        row: String,
        /// The underlying decode error.
        #[source]
        source: serde_json::Error,
    },
}

impl Error {
    /// Builds a [`Error::Query`]; used by every table module.
    pub(crate) fn query(table: &'static str, action: impl Into<String>, source: sqlx::Error) -> Self {
        Self::Query { table, action: action.into(), source }
    }

    /// Builds an [`Error::Json`] for a column that failed to decode.
    pub(crate) fn json(
        table: &'static str,
        column: &'static str,
        row: impl ToString,
        source: serde_json::Error,
    ) -> Self {
        Self::Json { table, column, row: row.to_string(), source }
    }
}

/// How a start-up error from SQLite should be reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Another connection holds a conflicting lock.
    Locked,
    /// The file is not a database, or is damaged.
    Corrupt,
    /// Anything else.
    Other,
}

/// Classifies a sqlx error by its SQLite result code.
pub(crate) fn classify(err: &sqlx::Error) -> Fault {
    let Some(code) = sqlite_code(err) else {
        return Fault::Other;
    };
    match code & 0xff {
        SQLITE_BUSY | SQLITE_LOCKED => Fault::Locked,
        SQLITE_CORRUPT | SQLITE_NOTADB => Fault::Corrupt,
        _ => Fault::Other,
    }
}

/// The (extended) SQLite result code of a database error, if it is one.
fn sqlite_code(err: &sqlx::Error) -> Option<i32> {
    match err {
        sqlx::Error::Database(db) => db.code().and_then(|code| code.parse().ok()),
        _ => None,
    }
}

/// Whether the error is a foreign-key violation (the referenced server does not exist).
pub(crate) fn is_foreign_key_violation(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.is_foreign_key_violation())
}

/// The message SQLite gave, for [`Error::Corrupt::detail`].
pub(crate) fn sqlite_message(err: &sqlx::Error) -> String {
    match err {
        sqlx::Error::Database(db) => db.message().to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locked_message_names_the_file_and_the_fix() {
        let err = Error::Locked { path: PathBuf::from("/tmp/x/switchboard.db") };
        let msg = err.to_string();
        assert!(msg.contains("/tmp/x/switchboard.db"), "{msg}");
        assert!(msg.contains("in use by another process"), "{msg}");
        assert!(msg.contains("--db"), "{msg}");
    }

    #[test]
    fn messages_start_lowercase() {
        let errors = [
            Error::Locked { path: PathBuf::from("a.db") },
            Error::Corrupt { path: PathBuf::from("a.db"), detail: "file is not a database".into() },
            Error::SchemaTooNew { path: PathBuf::from("a.db"), found: 3, supported: 1 },
            Error::UnknownServer { table: "servers", server_id: "s1".into() },
            Error::UnknownRun { table: "run_nodes", run_id: "r1".into() },
        ];
        for err in errors {
            let msg = err.to_string();
            assert!(msg.starts_with(|c: char| c.is_lowercase()), "{msg}");
        }
    }

    #[test]
    fn non_database_errors_are_not_classified() {
        assert_eq!(classify(&sqlx::Error::PoolClosed), Fault::Other);
    }
}

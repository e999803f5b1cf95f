//! Start-up failures an operator can meet: the file locked by another process, a file that is not (or no
//! longer) a SQLite database, and a schema written by a newer switchboard. Each must be a clear error.

use std::io::{Seek, SeekFrom, Write};

use sqlx::sqlite::{SqliteConnectOptions, SqliteLockingMode};
use sqlx::{ConnectOptions, Connection};
use switchboard_store::{Error, Store};

use crate::common::{config, raw, server, sibling};

/// Deterministic noise (xorshift64), so a failure reproduces.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed.to_le_bytes()[3]
        })
        .collect()
}

fn assert_locked(err: &Error, path: &std::path::Path) {
    assert!(matches!(err, Error::Locked { .. }), "expected Error::Locked, got {err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "message names the file: {msg}");
    assert!(msg.contains("in use by another process"), "message says why: {msg}");
    assert!(
        msg.contains("stop the other switchboard") && msg.contains("--db"),
        "message says the fix: {msg}"
    );
}

fn assert_corrupt(err: &Error, path: &std::path::Path) {
    assert!(matches!(err, Error::Corrupt { .. }), "expected Error::Corrupt, got {err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "message names the file: {msg}");
    assert!(msg.contains("not a usable sqlite database"), "message says why: {msg}");
}

#[tokio::test]
async fn a_file_held_exclusively_by_another_connection_is_reported_as_locked() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "sb.db");
    // An existing switchboard database (WAL mode)...
    let store = Store::open(&config).await.unwrap();
    store.upsert_server(&server("sid-1", "everything")).await.unwrap();
    store.close().await;

    // ...that another process has opened in exclusive locking mode and written to: it keeps the lock.
    let mut holder = SqliteConnectOptions::new()
        .filename(&config.path)
        .locking_mode(SqliteLockingMode::Exclusive)
        .connect()
        .await
        .unwrap();
    sqlx::query("UPDATE servers SET state = 'ready'").execute(&mut holder).await.unwrap();

    let err = Store::open(&config).await.expect_err("a locked file must not open");
    assert_locked(&err, &config.path);

    // Once the other process lets go, the same call succeeds and sees its write.
    holder.close().await.unwrap();
    let store = Store::open(&config).await.unwrap();
    assert_eq!(store.server("sid-1").await.unwrap().unwrap().state, "ready");
    store.close().await;
}

#[tokio::test]
async fn a_foreign_database_locked_in_rollback_mode_is_reported_as_locked() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "other.db");
    let mut holder = SqliteConnectOptions::new()
        .filename(&config.path)
        .create_if_missing(true)
        .locking_mode(SqliteLockingMode::Exclusive)
        .connect()
        .await
        .unwrap();
    sqlx::query("CREATE TABLE notes (body TEXT)").execute(&mut holder).await.unwrap();
    sqlx::query("INSERT INTO notes VALUES ('hello')").execute(&mut holder).await.unwrap();

    let err = Store::open(&config).await.expect_err("a locked file must not open");
    assert_locked(&err, &config.path);
    holder.close().await.unwrap();
}

#[tokio::test]
async fn two_stores_on_one_file_are_not_a_lock_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "sb.db");
    let a = Store::open(&config).await.unwrap();
    let b = Store::open(&config).await.expect("WAL lets a second reader/writer in");
    a.upsert_server(&server("sid-1", "everything")).await.unwrap();
    assert!(b.server("sid-1").await.unwrap().is_some());
    a.close().await;
    b.close().await;
}

#[tokio::test]
async fn random_bytes_are_reported_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "noise.db");
    std::fs::write(&config.path, noise(4096, 0x5eed)).unwrap();

    let err = Store::open(&config).await.expect_err("noise is not a database");
    assert_corrupt(&err, &config.path);
    // The file is left as it was for the operator to inspect.
    assert_eq!(std::fs::read(&config.path).unwrap(), noise(4096, 0x5eed));
}

#[tokio::test]
async fn a_database_damaged_in_the_middle_is_reported_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "sb.db");
    let store = Store::open(&config).await.unwrap();
    // Enough rows to spread the servers table over many pages.
    for i in 0..400 {
        let mut s = server(&format!("sid-{i:04}"), &format!("server {i}"));
        s.config = serde_json::json!({"command": "x".repeat(1500), "i": i});
        store.upsert_server(&s).await.unwrap();
    }
    store.close().await;
    // Fold the WAL into the main file so the damage below hits live pages.
    let mut conn = raw(&config.path).await;
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
    assert_eq!(std::fs::metadata(sibling(&config.path, "-wal")).map(|m| m.len()).unwrap_or(0), 0);

    let len = std::fs::metadata(&config.path).unwrap().len();
    assert!(len > 200 * 1024, "the table spans many pages ({len} bytes)");
    let mut file = std::fs::OpenOptions::new().write(true).open(&config.path).unwrap();
    let page = 4096;
    file.seek(SeekFrom::Start((len / 2) / page * page)).unwrap();
    file.write_all(&noise(8 * 4096, 42)).unwrap();
    file.sync_all().unwrap();
    drop(file);

    let err = Store::open(&config).await.expect_err("a damaged file must not open");
    assert_corrupt(&err, &config.path);
    let msg = err.to_string();
    assert!(
        msg.contains("integrity check failed") && !msg.contains('\n'),
        "one line with the finding: {msg}"
    );
}

#[tokio::test]
async fn a_schema_from_a_newer_switchboard_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "sb.db");
    Store::open(&config).await.unwrap().close().await;

    let future = 29_991_231_000_000_i64;
    let mut conn = raw(&config.path).await;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (?, 'added by a newer switchboard', TRUE, x'00', 0)",
    )
    .bind(future)
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();

    let err = Store::open(&config).await.expect_err("an unknown schema must not open");
    assert!(matches!(err, Error::SchemaTooNew { found, .. } if found == future), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&future.to_string()) && msg.contains("newer"), "{msg}");
    assert!(msg.contains("upgrade switchboard"), "{msg}");
}

#[tokio::test]
async fn an_uncreatable_directory_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, b"a file where a directory should be").unwrap();
    let config = config(&blocker, "sb.db");
    let err = Store::open(&config).await.expect_err("cannot create a directory under a file");
    assert!(matches!(err, Error::CreateDir { .. }), "{err:?}");
    assert!(err.to_string().contains("not-a-dir"), "{err}");
}

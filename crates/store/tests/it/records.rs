//! Round trips of each record, state changes, cascades, and persistence across a restart.

use serde_json::json;
use switchboard_store::{HandshakeRecord, Store, StoreConfig, ToolSnapshot};

use crate::common::{config, handshake, raw, server, snapshot};

#[tokio::test]
async fn server_round_trip_and_state_changes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&config(dir.path(), "sb.db")).await.unwrap();
    let mut s1 = server("sid-1", "everything");
    s1.state_reason = Some("awaiting handshake".into());
    store.upsert_server(&s1).await.unwrap();
    assert_eq!(store.server("sid-1").await.unwrap(), Some(s1.clone()));
    assert_eq!(store.server("missing").await.unwrap(), None);

    store.set_server_state("sid-1", "degraded", Some("3 timeouts in 60 s"), 1_700_000_005_000).await.unwrap();
    store.set_server_era("sid-1", "2026-07-28").await.unwrap();
    let got = store.server("sid-1").await.unwrap().unwrap();
    assert_eq!(got.state, "degraded");
    assert_eq!(got.state_reason.as_deref(), Some("3 timeouts in 60 s"));
    assert_eq!(got.era.as_deref(), Some("2026-07-28"));
    assert_eq!(got.updated_at_ms, 1_700_000_005_000);
    assert_eq!(got.created_at_ms, s1.created_at_ms);

    // A `None` reason clears the old one.
    store.set_server_state("sid-1", "ready", None, 1_700_000_006_000).await.unwrap();
    let got = store.server("sid-1").await.unwrap().unwrap();
    assert_eq!((got.state.as_str(), got.state_reason), ("ready", None));
    store.close().await;
}

#[tokio::test]
async fn snapshot_round_trip_keeps_raw_json_and_returns_the_latest() {
    let store = Store::open_in_memory().await.unwrap();
    store.upsert_server(&server("sid-1", "everything")).await.unwrap();
    assert_eq!(store.latest_tool_snapshot("sid-1").await.unwrap(), None);

    let older = snapshot("sid-1", 100);
    let mut newer = snapshot("sid-1", 200);
    newer.tools = json!([{"name": "add", "inputSchema": {"type": "object"}, "_meta": {"vendor": {"k": 1}}}]);
    let newer_id = store.save_tool_snapshot(&newer).await.unwrap();
    // Saved later but taken earlier: must not become "latest".
    let older_id = store.save_tool_snapshot(&older).await.unwrap();
    assert_ne!(newer_id, older_id);

    let latest = store.latest_tool_snapshot("sid-1").await.unwrap().unwrap();
    assert_eq!(latest, ToolSnapshot { id: Some(newer_id), ..newer });
}

#[tokio::test]
async fn handshake_round_trip_for_each_leg() {
    let store = Store::open_in_memory().await.unwrap();
    store.upsert_server(&server("sid-1", "everything")).await.unwrap();

    let up = handshake(Some("sid-1"), 10);
    let mut down = handshake(None, 20);
    down.error = Some("unsupported protocol version 2024-01-01".into());
    down.chosen_version = None;
    down.offered_versions = vec!["2024-01-01".into()];
    down.tool_count = None;
    let up_id = store.insert_handshake(&up).await.unwrap();
    let down_id = store.insert_handshake(&down).await.unwrap();

    let all = store.handshakes(None, 100).await.unwrap();
    assert_eq!(
        all,
        vec![
            HandshakeRecord { id: Some(down_id), ..down },
            HandshakeRecord { id: Some(up_id), ..up.clone() },
        ]
    );
    let mine = store.handshakes(Some("sid-1"), 100).await.unwrap();
    assert_eq!(mine, vec![HandshakeRecord { id: Some(up_id), ..up }]);
    assert!(store.handshakes(Some("other"), 100).await.unwrap().is_empty());
}

#[tokio::test]
async fn removing_a_server_cascades_to_snapshots_and_detaches_handshakes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&config(dir.path(), "sb.db")).await.unwrap();
    store.upsert_server(&server("sid-1", "everything")).await.unwrap();
    store.upsert_server(&server("sid-2", "filesystem")).await.unwrap();
    for at in 0..3 {
        store.save_tool_snapshot(&snapshot("sid-1", at)).await.unwrap();
        store.save_tool_snapshot(&snapshot("sid-2", at)).await.unwrap();
    }
    store.insert_handshake(&handshake(Some("sid-1"), 1)).await.unwrap();

    // Re-registering (an upsert) must not be a delete + insert that would cascade.
    store.upsert_server(&server("sid-1", "everything-renamed")).await.unwrap();
    assert!(store.latest_tool_snapshot("sid-1").await.unwrap().is_some());
    assert_eq!(store.handshakes(Some("sid-1"), 10).await.unwrap().len(), 1);

    assert!(store.remove_server("sid-1").await.unwrap());
    assert!(!store.remove_server("sid-1").await.unwrap(), "a second removal finds nothing");
    assert_eq!(store.server("sid-1").await.unwrap(), None);
    assert_eq!(store.latest_tool_snapshot("sid-1").await.unwrap(), None);
    let mut conn = raw(&dir.path().join("sb.db")).await;
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tool_snapshots WHERE server_id = 'sid-1'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(left, 0);

    // The handshake history stays, no longer attributed to the removed server.
    let log = store.handshakes(None, 10).await.unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].server_id, None);
    assert!(store.handshakes(Some("sid-1"), 10).await.unwrap().is_empty());

    // The other server is untouched.
    assert_eq!(store.servers().await.unwrap().len(), 1);
    assert_eq!(store.latest_tool_snapshot("sid-2").await.unwrap().unwrap().taken_at_ms, 2);
    store.close().await;
}

#[tokio::test]
async fn everything_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    // A nested path that does not exist yet: open creates the directories.
    let config =
        StoreConfig { path: dir.path().join("state").join("db").join("sb.db"), ..StoreConfig::default() };
    let s1 = server("9f2c4e1a", "everything");
    {
        let store = Store::open(&config).await.unwrap();
        store.upsert_server(&s1).await.unwrap();
        store.set_server_state("9f2c4e1a", "ready", None, 1_700_000_001_000).await.unwrap();
        store.save_tool_snapshot(&snapshot("9f2c4e1a", 5)).await.unwrap();
        store.insert_handshake(&handshake(Some("9f2c4e1a"), 6)).await.unwrap();
        store.close().await;
    }

    let store = Store::open(&config).await.unwrap();
    let got = store.server("9f2c4e1a").await.unwrap().expect("server_id survives the restart");
    assert_eq!(got.state, "ready");
    assert_eq!(got.config, s1.config);
    assert_eq!(store.latest_tool_snapshot("9f2c4e1a").await.unwrap().unwrap().taken_at_ms, 5);
    assert_eq!(store.handshakes(Some("9f2c4e1a"), 10).await.unwrap().len(), 1);

    // The file really is in WAL mode (the setting persists in the file).
    let mut conn = raw(&config.path).await;
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&mut conn).await.unwrap();
    assert_eq!(mode, "wal");
    store.close().await;
}

#[tokio::test]
async fn a_closed_store_reports_errors_instead_of_hanging() {
    let store = Store::open_in_memory().await.unwrap();
    store.close().await;
    let err = store.servers().await.unwrap_err();
    assert!(err.to_string().contains("servers"), "{err}");
}

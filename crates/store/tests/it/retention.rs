//! Bounded growth: snapshots per server and the handshake log.

use switchboard_store::{HANDSHAKES_KEPT, Store, TOOL_SNAPSHOTS_KEPT};

use crate::common::{config, handshake, raw, server, snapshot};

#[tokio::test]
async fn only_the_newest_snapshots_per_server_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "sb.db");
    let store = Store::open(&config).await.unwrap();
    store.upsert_server(&server("busy", "busy")).await.unwrap();
    store.upsert_server(&server("quiet", "quiet")).await.unwrap();
    store.save_tool_snapshot(&snapshot("quiet", 1)).await.unwrap();
    let kept = i64::from(TOOL_SNAPSHOTS_KEPT);
    for at in 1..=kept + 5 {
        store.save_tool_snapshot(&snapshot("busy", at)).await.unwrap();
    }

    let mut conn = raw(&config.path).await;
    let rows: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT server_id, COUNT(*), MIN(taken_at_ms) FROM tool_snapshots GROUP BY server_id ORDER BY server_id",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(rows, [("busy".to_owned(), kept, 6), ("quiet".to_owned(), 1, 1)]);
    assert_eq!(store.latest_tool_snapshot("busy").await.unwrap().unwrap().taken_at_ms, kept + 5);
    store.close().await;
}

#[tokio::test]
async fn the_handshake_log_keeps_the_newest_rows() {
    let store = Store::open_in_memory().await.unwrap();
    let extra = 7;
    for at in 0..HANDSHAKES_KEPT + extra {
        store.insert_handshake(&handshake(None, at)).await.unwrap();
    }
    let all = store.handshakes(None, u32::MAX).await.unwrap();
    assert_eq!(i64::try_from(all.len()).unwrap(), HANDSHAKES_KEPT);
    assert_eq!(all.first().unwrap().at_ms, HANDSHAKES_KEPT + extra - 1, "newest first");
    assert_eq!(all.last().unwrap().at_ms, extra, "the oldest {extra} were dropped");
}

//! Flow runs: a run's life cycle (insert → nodes → finish → read back), listing, crash recovery and the
//! bounded history.

use serde_json::json;
use switchboard_store::{RUNS_KEPT, Store, StoredRun, StoredRunNode};

use crate::common::{config, raw};

fn run(run_id: &str, started_at_ms: i64) -> StoredRun {
    StoredRun {
        run_id: run_id.into(),
        flow: "thermal-diagnosis".into(),
        input: json!({"image": "panel.jpg", "emissivity": 0.95}),
        started_at_ms,
        finished_at_ms: None,
        outcome: "running".into(),
        error: None,
    }
}

fn node(run_id: &str, node_id: &str, position: i64, outcome: &str) -> StoredRunNode {
    StoredRunNode {
        run_id: run_id.into(),
        node_id: node_id.into(),
        position,
        tool: Some(format!("{node_id}__tool")),
        input: Some(json!({"query": "hot lug", "top_k": 3})),
        output: (outcome == "ok").then(|| json!({"results": [{"id": "breakers-1", "score": 0.5}]})),
        latency_ms: 12,
        attempts: 1,
        outcome: outcome.into(),
        error: (outcome != "ok").then(|| format!("{outcome} for a reason")),
    }
}

#[tokio::test]
async fn a_run_survives_reopening_with_its_nodes_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "sb.db");
    let store = Store::open(&config).await.unwrap();
    store.insert_run(&run("r1", 100)).await.unwrap();
    // Written out of order: listing follows `position`, not insertion.
    store.insert_run_node(&node("r1", "reasoning", 2, "skipped")).await.unwrap();
    store.insert_run_node(&node("r1", "vision", 0, "ok")).await.unwrap();
    store.insert_run_node(&node("r1", "knowledge", 1, "failed")).await.unwrap();
    // A node written twice keeps only the latest record.
    store.insert_run_node(&node("r1", "knowledge", 1, "failed")).await.unwrap();
    store.finish_run("r1", 250, "failed", Some("node knowledge failed")).await.unwrap();
    store.close().await;

    let store = Store::open(&config).await.unwrap();
    let (stored, nodes) = store.run("r1").await.unwrap().expect("run r1 is stored");
    assert_eq!(stored.finished_at_ms, Some(250));
    assert_eq!(stored.outcome, "failed");
    assert_eq!(stored.error.as_deref(), Some("node knowledge failed"));
    assert_eq!(stored.input, json!({"image": "panel.jpg", "emissivity": 0.95}));
    let ids: Vec<&str> = nodes.iter().map(|n| n.node_id.as_str()).collect();
    assert_eq!(ids, ["vision", "knowledge", "reasoning"]);
    assert_eq!(nodes[0], node("r1", "vision", 0, "ok"));
    assert_eq!(nodes[1].error.as_deref(), Some("failed for a reason"));
    assert!(store.run("r2").await.unwrap().is_none());
    store.close().await;
}

#[tokio::test]
async fn runs_are_listed_newest_first_without_duplicates() {
    let store = Store::open_in_memory().await.unwrap();
    for (id, at) in [("a", 20), ("b", 10), ("c", 30)] {
        store.insert_run(&run(id, at)).await.unwrap();
    }
    let ids: Vec<String> = store.runs(10).await.unwrap().into_iter().map(|r| r.run_id).collect();
    assert_eq!(ids, ["c", "a", "b"]);
    assert_eq!(store.runs(1).await.unwrap().len(), 1);
    let err = store.insert_run(&run("a", 40)).await.unwrap_err();
    assert!(err.to_string().contains("run a"), "{err}");
}

#[tokio::test]
async fn runs_left_running_by_a_crash_are_marked_interrupted() {
    let store = Store::open_in_memory().await.unwrap();
    store.insert_run(&run("done", 1)).await.unwrap();
    store.finish_run("done", 2, "ok", None).await.unwrap();
    store.insert_run(&run("orphan", 3)).await.unwrap();
    assert_eq!(store.interrupt_running_runs(9).await.unwrap(), 1);
    let (orphan, _) = store.run("orphan").await.unwrap().unwrap();
    assert_eq!((orphan.outcome.as_str(), orphan.finished_at_ms), ("failed", Some(9)));
    assert!(orphan.error.unwrap().contains("interrupted"));
    assert_eq!(store.run("done").await.unwrap().unwrap().0.outcome, "ok");
}

#[tokio::test]
async fn only_the_newest_runs_are_kept_and_their_nodes_go_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "sb.db");
    let store = Store::open(&config).await.unwrap();
    let extra = 3;
    for i in 0..RUNS_KEPT + extra {
        let id = format!("r{i}");
        store.insert_run(&run(&id, i)).await.unwrap();
        if i < extra + 1 {
            store.insert_run_node(&node(&id, "vision", 0, "ok")).await.unwrap();
        }
    }
    let all = store.runs(u32::MAX).await.unwrap();
    assert_eq!(i64::try_from(all.len()).unwrap(), RUNS_KEPT);
    assert_eq!(all.last().unwrap().run_id, format!("r{extra}"), "the oldest {extra} were dropped");
    assert!(store.run("r0").await.unwrap().is_none());

    let mut conn = raw(&config.path).await;
    let orphans: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM run_nodes WHERE run_id NOT IN (SELECT run_id FROM runs)")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(orphans, 0, "node rows are deleted with their run");
    let kept: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM run_nodes").fetch_one(&mut conn).await.unwrap();
    assert_eq!(kept, 1, "only r{extra}'s node remains");
    store.close().await;
}

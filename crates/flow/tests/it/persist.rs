//! Runs recorded in a SQLite store in a temp dir and read back.

use std::sync::Arc;

use serde_json::json;
use switchboard_flow::{Engine, NodeOutcome, RunOptions, RunOutcome, StoreSink};
use switchboard_store::{Store, StoreConfig};

use crate::common::{Fake, Step, VISION, default_flow};

async fn store(dir: &std::path::Path) -> Store {
    Store::open(&StoreConfig { path: dir.join("sb.db"), ..StoreConfig::default() }).await.unwrap()
}

#[tokio::test]
async fn a_successful_run_is_stored_completely_and_reads_back_equal() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path()).await;
    let sink = Arc::new(StoreSink::new(store.clone()));
    let fake = Fake::new();
    let flow = default_flow(&fake);
    let engine = Engine::new(fake.clone()).with_sink(sink.clone());
    let record = engine.run(&flow, json!({"image": "x", "ambient_c": 24.5}), RunOptions::default()).await;
    assert_eq!(record.outcome, RunOutcome::Ok);

    let back = sink.load(&record.run_id).await.unwrap().expect("the run is stored");
    assert_eq!(back, record);
    assert_eq!(back.nodes.len(), 3);
    assert!(
        back.nodes.iter().all(|n| n.outcome == NodeOutcome::Ok && n.input.is_some() && n.output.is_some())
    );
    let listed = store.runs(10).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].flow.as_str(), listed[0].outcome.as_str()), ("thermal-diagnosis", "ok"));
    store.close().await;
}

#[tokio::test]
async fn a_failed_run_is_stored_with_its_reason_and_skipped_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path()).await;
    let sink = Arc::new(StoreSink::new(store.clone()));
    let fake = Fake::new();
    fake.script(VISION, [Step::ToolError("unsupported image format")]);
    let flow = default_flow(&fake);
    let record = Engine::new(fake.clone())
        .with_sink(sink.clone())
        .run(&flow, json!({"image": "x"}), RunOptions::default())
        .await;
    store.close().await;

    // Reopened: the record is on disk, not only in the pool.
    let store =
        Store::open(&StoreConfig { path: dir.path().join("sb.db"), ..StoreConfig::default() }).await.unwrap();
    let back = StoreSink::new(store.clone()).load(&record.run_id).await.unwrap().unwrap();
    assert_eq!(back.outcome, RunOutcome::Failed);
    assert!(back.error.as_deref().unwrap().contains("unsupported image format"), "{:?}", back.error);
    let nodes: Vec<NodeOutcome> = back.nodes.iter().map(|n| n.outcome).collect();
    assert_eq!(nodes, [NodeOutcome::Failed, NodeOutcome::Skipped, NodeOutcome::Skipped]);
    assert_eq!(back, record);
    store.close().await;
}

#[tokio::test]
async fn large_strings_are_elided_in_the_store_but_not_in_the_record() {
    let store = Store::open_in_memory().await.unwrap();
    let mut sink = StoreSink::new(store.clone());
    sink.max_inline_bytes = 16;
    let sink = Arc::new(sink);
    let fake = Fake::new();
    let flow = default_flow(&fake);
    let image = "iVBORw0KGgo".repeat(10);
    let record = Engine::new(fake.clone())
        .with_sink(sink.clone())
        .run(&flow, json!({"image": image}), RunOptions::default())
        .await;
    assert_eq!(record.input["image"], image);
    let back = sink.load(&record.run_id).await.unwrap().unwrap();
    assert_eq!(back.input["image"], "<elided: 110 bytes>");
    assert_eq!(back.nodes[0].input.as_ref().unwrap()["image"], "<elided: 110 bytes>");
}

//! Running flows: the happy path with progress, failures and skipping, retries and timeouts (on paused
//! time), cancellation, refused input, conditional and error edges.

use std::sync::Arc;

use serde_json::json;
use switchboard_flow::{
    CancellationToken, Engine, Flow, NodeOutcome, RunEvent, RunObserver, RunOptions, RunOutcome,
};
use tokio::sync::mpsc;

use crate::common::{
    Fake, KNOWLEDGE, REASONING, Step, VISION, default_flow, drain, knowledge_output, label, vision_output,
};

fn outcomes(record: &switchboard_flow::RunRecord) -> Vec<(&str, NodeOutcome)> {
    record.nodes.iter().map(|n| (n.id.as_str(), n.outcome)).collect()
}

#[tokio::test]
async fn three_nodes_run_in_order_with_progress_and_rendered_arguments() {
    let fake = Fake::new();
    fake.script(VISION, [Step::ProgressThenReply(vision_output())]);
    let flow = default_flow(&fake);
    let (tx, mut rx) = mpsc::channel(64);
    let engine = Engine::new(fake.clone());
    let input = json!({"image": "http://127.0.0.1:9/blobs/abc", "emissivity": 0.95, "context": "full load"});
    let record =
        engine.run(&flow, input.clone(), RunOptions { events: Some(tx), ..RunOptions::default() }).await;

    assert_eq!(record.outcome, RunOutcome::Ok, "{record:#?}");
    assert_eq!(record.error, None);
    assert_eq!(record.input, input);
    assert!(record.finished_at_ms.unwrap() >= record.started_at_ms);
    let labels: Vec<String> = drain(&mut rx).iter().map(label).collect();
    assert_eq!(
        labels,
        [
            "run_started",
            "started vision",
            "progress vision 1",
            "progress vision 2",
            "finished vision ok",
            "started knowledge",
            "finished knowledge ok",
            "started reasoning",
            "finished reasoning ok",
            "run_finished ok",
        ]
    );

    // Absent optional inputs are left out, not sent as null.
    assert_eq!(
        fake.calls_of(VISION),
        [json!({"image": "http://127.0.0.1:9/blobs/abc", "emissivity": 0.95, "context": "full load"})]
    );
    // The knowledge query is built from structure: component and failure mode as fields, equipment as filter.
    assert_eq!(
        fake.calls_of(KNOWLEDGE),
        [json!({
            "query": "termination loose-connection",
            "component_kind": "termination",
            "component_group": "termination",
            "failure_mode": "loose-connection",
            "equipment": "panel",
            "top_k": 3
        })]
    );
    assert_eq!(
        fake.calls_of(REASONING),
        [json!({"vision": vision_output(), "knowledge": knowledge_output(), "context": "full load"})]
    );
    let knowledge = &record.nodes[1];
    assert_eq!((knowledge.tool.as_str(), knowledge.attempts), (KNOWLEDGE, 1));
    assert_eq!(knowledge.input.as_ref(), fake.calls_of(KNOWLEDGE).first());
    assert_eq!(knowledge.output, Some(knowledge_output()));
}

/// Records what an engine-wide observer is told.
#[derive(Default)]
struct Watcher {
    seen: std::sync::Mutex<Vec<RunEvent>>,
    listening: std::sync::atomic::AtomicBool,
}

impl RunObserver for Watcher {
    fn active(&self) -> bool {
        self.listening.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn observe(&self, event: &RunEvent) {
        self.seen.lock().unwrap().push(event.clone());
    }
}

#[tokio::test]
async fn an_engine_wide_observer_sees_every_event_in_order_and_nothing_while_inactive() {
    let fake = Fake::new();
    fake.script(VISION, [Step::ProgressThenReply(vision_output()), Step::ProgressThenReply(vision_output())]);
    let flow = default_flow(&fake);
    let watcher = Arc::new(Watcher::default());
    let engine = Engine::new(fake.clone()).with_observer(watcher.clone());
    let input = json!({"image": "http://127.0.0.1:9/blobs/abc"});
    // Nobody listening: the observer is told nothing (and no run needs a channel for that).
    let record = engine.run(&flow, input.clone(), RunOptions::default()).await;
    assert_eq!(record.outcome, RunOutcome::Ok, "{record:#?}");
    assert!(watcher.seen.lock().unwrap().is_empty());

    watcher.listening.store(true, std::sync::atomic::Ordering::Relaxed);
    let (tx, mut rx) = mpsc::channel(64);
    let record = engine.run(&flow, input, RunOptions { events: Some(tx), ..RunOptions::default() }).await;
    assert_eq!(record.outcome, RunOutcome::Ok, "{record:#?}");
    let observed: Vec<String> = watcher.seen.lock().unwrap().iter().map(label).collect();
    let channel: Vec<String> = drain(&mut rx).iter().map(label).collect();
    assert_eq!(observed, channel, "the observer and the run's channel see the same events in the same order");
    assert_eq!(observed.first().map(String::as_str), Some("run_started"));
    assert!(observed.contains(&"progress vision 1".to_owned()), "{observed:?}");
}

#[tokio::test]
async fn a_failing_first_node_skips_the_rest_and_fails_the_run() {
    let fake = Fake::new();
    fake.script(VISION, [Step::ToolError("image is not a thermal image")]);
    let flow = default_flow(&fake);
    let (tx, mut rx) = mpsc::channel(64);
    let record = Engine::new(fake.clone())
        .run(&flow, json!({"image": "x"}), RunOptions { events: Some(tx), ..RunOptions::default() })
        .await;

    assert_eq!(record.outcome, RunOutcome::Failed);
    let error = record.error.as_deref().unwrap();
    assert!(error.starts_with("node `vision` failed: tool `vision__analyze_thermal_image` reported an error: image is not a thermal image"), "{error}");
    assert_eq!(
        outcomes(&record),
        [
            ("vision", NodeOutcome::Failed),
            ("knowledge", NodeOutcome::Skipped),
            ("reasoning", NodeOutcome::Skipped)
        ]
    );
    // Tool errors are not retried although the node retries transport failures.
    assert_eq!(record.nodes[0].attempts, 1);
    assert!(
        record.nodes[1].error.as_deref().unwrap().contains("`vision` failed"),
        "{:?}",
        record.nodes[1].error
    );
    assert!(fake.calls_of(KNOWLEDGE).is_empty() && fake.calls_of(REASONING).is_empty());
    let labels: Vec<String> = drain(&mut rx).iter().map(label).collect();
    assert_eq!(
        labels,
        [
            "run_started",
            "started vision",
            "finished vision failed",
            "finished knowledge skipped",
            "finished reasoning skipped",
            "run_finished failed"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_call_is_cancelled_and_retried() {
    let fake = Fake::new();
    fake.script(KNOWLEDGE, [Step::Hang]);
    let flow = default_flow(&fake);
    let (tx, mut rx) = mpsc::channel(64);
    let record = Engine::new(fake.clone())
        .run(&flow, json!({"image": "x"}), RunOptions { events: Some(tx), ..RunOptions::default() })
        .await;

    assert_eq!(record.outcome, RunOutcome::Ok, "{record:#?}");
    let knowledge = &record.nodes[1];
    assert_eq!((knowledge.outcome, knowledge.attempts), (NodeOutcome::Ok, 2));
    // 30 s timeout, then 500 ms backoff; on paused time these are exact.
    assert_eq!(knowledge.latency_ms, 30_500);
    assert_eq!(*fake.cancelled.lock().unwrap(), [KNOWLEDGE], "the timed-out call saw its token fire");
    let retry = drain(&mut rx)
        .into_iter()
        .find_map(|e| match e {
            RunEvent::NodeRetrying { node, attempt, error, delay_ms, .. } => {
                Some((node, attempt, error, delay_ms))
            }
            _ => None,
        })
        .expect("a retry event");
    assert_eq!(retry, ("knowledge".into(), 1, "timed out after 30000 ms".into(), 500));
}

#[tokio::test(start_paused = true)]
async fn retries_give_up_after_max_attempts_with_backoff_doubling() {
    let fake = Fake::new();
    fake.script(
        KNOWLEDGE,
        [Step::Transport("connection reset"), Step::Hang, Step::Transport("connection refused")],
    );
    let flow = default_flow(&fake);
    let record = Engine::new(fake.clone()).run(&flow, json!({"image": "x"}), RunOptions::default()).await;

    assert_eq!(record.outcome, RunOutcome::Failed);
    let knowledge = &record.nodes[1];
    assert_eq!((knowledge.outcome, knowledge.attempts), (NodeOutcome::Failed, 3));
    assert_eq!(knowledge.latency_ms, 500 + 30_000 + 1_000);
    assert_eq!(
        knowledge.error.as_deref(),
        Some(
            "calling tool `knowledge__search_manual`: transport failure: connection refused (after 3 attempts)"
        )
    );
    assert_eq!(record.nodes[2].outcome, NodeOutcome::Skipped);
}

#[tokio::test]
async fn tool_errors_are_retried_only_when_the_node_says_so() {
    let fake = Fake::new();
    let text = std::fs::read_to_string(crate::common::default_flow_path())
        .unwrap()
        .replace("tool = \"search_manual\"", "tool = \"search_manual\"\nretry_tool_errors = true");
    let flow = Flow::from_toml("retry.toml", &text, fake.as_ref()).unwrap();
    fake.script(KNOWLEDGE, [Step::ToolError("index is warming up")]);
    let record = Engine::new(fake.clone()).run(&flow, json!({"image": "x"}), RunOptions::default()).await;
    assert_eq!(record.outcome, RunOutcome::Ok);
    assert_eq!(record.nodes[1].attempts, 2);
}

#[tokio::test]
async fn cancelling_mid_run_cancels_the_running_call_and_skips_the_rest() {
    let fake = Fake::new();
    fake.script(KNOWLEDGE, [Step::Hang]);
    let flow = Arc::new(default_flow(&fake));
    let (tx, mut rx) = mpsc::channel(64);
    let cancel = CancellationToken::new();
    let engine = Engine::new(fake.clone());
    let options = RunOptions { cancel: cancel.clone(), events: Some(tx), ..RunOptions::default() };
    let run = {
        let flow = flow.clone();
        tokio::spawn(async move { engine.run(&flow, json!({"image": "x"}), options).await })
    };
    while let Some(event) = rx.recv().await {
        if label(&event) == "started knowledge" {
            break;
        }
    }
    cancel.cancel();
    let record = run.await.unwrap();

    assert_eq!(record.outcome, RunOutcome::Cancelled);
    assert_eq!(record.error.as_deref(), Some("the run was cancelled while node `knowledge` was running"));
    assert_eq!(
        outcomes(&record),
        [
            ("vision", NodeOutcome::Ok),
            ("knowledge", NodeOutcome::Cancelled),
            ("reasoning", NodeOutcome::Skipped)
        ]
    );
    assert_eq!(*fake.cancelled.lock().unwrap(), [KNOWLEDGE]);
    assert!(fake.calls_of(REASONING).is_empty());
    let last = drain(&mut rx).last().map(label);
    assert_eq!(last.as_deref(), Some("run_finished cancelled"));
}

#[tokio::test]
async fn an_input_that_violates_the_schema_is_refused_before_any_call() {
    let fake = Fake::new();
    let flow = default_flow(&fake);
    let record = Engine::new(fake.clone())
        .run(&flow, json!({"emissivity": 2, "colour": "red"}), RunOptions::default())
        .await;

    assert_eq!(record.outcome, RunOutcome::Failed);
    let error = record.error.unwrap();
    assert!(
        error.starts_with("run input does not match the input schema of flow `thermal-diagnosis`"),
        "{error}"
    );
    assert!(error.contains("\"image\" is a required property"), "{error}");
    assert!(error.contains("/emissivity: 2 is greater than the maximum of 1"), "{error}");
    assert!(error.contains("colour"), "{error}");
    assert!(record.nodes.iter().all(|n| n.outcome == NodeOutcome::Skipped));
    assert!(fake.calls.lock().unwrap().is_empty());
    assert!(flow.check_input(&json!({"image": ""})).unwrap_err().to_string().contains("/image"));
}

#[tokio::test]
async fn a_false_condition_skips_without_failing_and_error_edges_reach_handlers() {
    let fake = Fake::new();
    let text = r#"
name = "branching"
[input]
type = "object"
properties = { image = { type = "string" } }

[[nodes]]
id = "vision"
capability = "vision"
arguments = { image = "$input.image" }

[[nodes]]
id = "knowledge"
capability = "rag"
tool = "search_manual"
arguments = { query = "{nodes.vision.output.failure_mode.kind}" }

[[nodes]]
id = "explain"
capability = "rag"
tool = "search_manual"
arguments = { query = "why did it fail: {nodes.vision.error}" }

[[edges]]
from = "vision"
to = "knowledge"
when = '$nodes.vision.output.severity.band != "none"'

[[edges]]
from = "vision"
to = "explain"
when = "error"
"#;
    let flow = Flow::from_toml("branching.toml", text, fake.as_ref()).unwrap();
    let engine = Engine::new(fake.clone());

    let mut calm = vision_output();
    calm["severity"]["band"] = json!("none");
    fake.script(VISION, [Step::Reply(calm), Step::Transport("camera server gone")]);
    let record = engine.run(&flow, json!({"image": "x"}), RunOptions::default()).await;
    assert_eq!(record.outcome, RunOutcome::Ok, "{record:#?}");
    assert_eq!(
        outcomes(&record),
        [("vision", NodeOutcome::Ok), ("knowledge", NodeOutcome::Skipped), ("explain", NodeOutcome::Skipped)]
    );

    let record = engine.run(&flow, json!({"image": "x"}), RunOptions::default()).await;
    assert_eq!(record.outcome, RunOutcome::Failed, "a handled failure still fails the run");
    assert_eq!(
        outcomes(&record),
        [("vision", NodeOutcome::Failed), ("knowledge", NodeOutcome::Skipped), ("explain", NodeOutcome::Ok)]
    );
    assert_eq!(
        record.nodes[2].input,
        Some(
            json!({"query": "why did it fail: calling tool `vision__analyze_thermal_image`: transport failure: camera server gone"})
        )
    );
}

//! The registry's event publishers: negotiation steps, catalog diffs, process statistics, flow
//! progress.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchboard_fixtures::config::{Era as FxEra, Profile, TransportKind};
use switchboard_flow::{
    CancellationToken, Engine, Flow, InvokeError, ProgressSink, RunOptions, ToolBinding, ToolInfo,
    ToolInvoker, ToolOutput,
};
use switchboard_router::{
    CatalogDiff, Event, EventBus, EventKind, Filter, Registry, RegistryConfig, ServerState,
};

use crate::common::*;

/// Every `CatalogChanged` queued now.
fn queued_changes(h: &mut Harness) -> Vec<CatalogDiff> {
    let mut out = Vec::new();
    while let Ok(e) = h.events.try_recv() {
        if let Event::CatalogChanged { diff, .. } = e.as_ref() {
            out.push(diff.clone());
        }
    }
    out
}

/// A stdio fixture speaking 2025-11-25.
pub fn stdio_fixture(name: &str) -> switchboard_router::ServerSpec {
    cmd_spec(name, &fixture_bin(), &["--transport", "stdio", "--era", "legacy"])
}

/// (step, offered, chosen) of one negotiation event.
type Step = (String, Vec<String>, Option<String>);

/// The negotiation events of `server`'s first handshake, up to its `Handshake` event, and the
/// chosen version of the record.
async fn negotiation_of(h: &mut Harness, server: &str) -> (Vec<Step>, Option<String>) {
    tokio::time::timeout(Duration::from_secs(30), async {
        let mut steps = Vec::new();
        loop {
            let e = h.events.recv().await.expect("event bus open and keeping up");
            match e.as_ref() {
                Event::Negotiation { server: s, leg, step, offered, chosen, .. } if s == server => {
                    assert_eq!(leg, "upstream");
                    steps.push((step.clone(), offered.clone(), chosen.clone()));
                }
                Event::Handshake { server: s, record } if s == server => {
                    return (steps, record.chosen_version.clone());
                }
                _ => {}
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no handshake of {server} within 30 s"))
}

#[tokio::test]
async fn a_legacy_only_server_s_handshake_is_published_step_by_step() {
    let fx = fixture(TransportKind::Http, FxEra::Legacy, Profile::Basic, 0).await;
    let mut h = harness(fast()).await;
    h.registry.add(url_spec("legacy", &fx.url)).await.unwrap();
    let (steps, chosen) = negotiation_of(&mut h, "legacy").await;
    let names: Vec<&str> = steps.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(names, ["discover", "fallback", "initialize"], "{steps:?}");
    assert_eq!(steps[0].1, switchboard_wire::MODERN_VERSIONS, "discover offers the 2026 versions");
    assert_eq!(steps[0].2, None, "discover chose nothing");
    assert_eq!(steps[2].1, ["2025-11-25"], "initialize offers 2025-11-25");
    assert_eq!(steps[2].2.as_deref(), Some("2025-11-25"), "initialize chose 2025-11-25");
    assert_eq!(chosen.as_deref(), Some("2025-11-25"), "the record agrees");
    h.registry.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_modern_server_s_handshake_is_one_discover_that_chooses() {
    let fx = fixture(TransportKind::Http, FxEra::Modern, Profile::Basic, 0).await;
    let mut h = harness(fast()).await;
    h.registry.add(url_spec("modern", &fx.url)).await.unwrap();
    let (steps, chosen) = negotiation_of(&mut h, "modern").await;
    assert_eq!(
        steps,
        [("discover".to_owned(), vec!["2026-07-28".to_owned()], Some("2026-07-28".to_owned()))]
    );
    assert_eq!(chosen.as_deref(), Some("2026-07-28"));
    h.registry.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_catalog_change_is_one_catalog_changed_with_its_diff_and_an_unchanged_refresh_is_none() {
    let mut h = harness(fast()).await;
    h.registry.add(stdio_fixture("cat")).await.unwrap();
    let v = h.registry.wait_for("cat", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
    // The first listing adds everything the server offers.
    let first = expect_event(
        &mut h.events,
        "the first listing's diff",
        |e| matches!(e, Event::CatalogChanged { server, .. } if server == "cat"),
    )
    .await;
    let Event::CatalogChanged { diff, .. } = first.as_ref() else { unreachable!() };
    assert!(diff.tools_added.contains(&"echo".to_owned()) && diff.tools_removed.is_empty(), "{diff:?}");

    // A refresh that finds the same catalog says nothing.
    h.registry.refresh_if_stale("cat", Duration::ZERO).await.unwrap();
    assert_eq!(queued_changes(&mut h), Vec::<CatalogDiff>::new(), "an unchanged refresh published a change");

    // The server adds a tool and says so: exactly one change, naming that tool alone.
    let client = h.registry.entry("cat").unwrap().client().unwrap();
    client
        .request("tools/call", json!({"name": "add_tool", "arguments": {"name": "late_tool"}}))
        .await
        .unwrap();
    expect_event(&mut h.events, "the list_changed listing", |e| {
        matches!(e, Event::Catalog { server, trigger, .. } if server == "cat" && trigger == "list_changed")
    })
    .await;
    h.registry.refresh_if_stale("cat", Duration::ZERO).await.unwrap();
    let expected = CatalogDiff { tools_added: vec!["late_tool".into()], ..CatalogDiff::default() };
    assert_eq!(queued_changes(&mut h), vec![expected]);
    h.registry.shutdown(Duration::from_secs(5)).await;
}

/// Tools for a flow: `measure` answers, `judge` reports a tool error.
struct Tools;

#[async_trait::async_trait]
impl ToolInvoker for Tools {
    fn resolve(&self, binding: &ToolBinding) -> Result<ToolInfo, InvokeError> {
        let name = binding.tool.clone().unwrap_or_default();
        Ok(ToolInfo { name, input_schema: json!({"type": "object"}), output_schema: None })
    }

    async fn call(
        &self,
        tool: &str,
        _arguments: serde_json::Value,
        progress: ProgressSink,
        _cancel: CancellationToken,
    ) -> Result<ToolOutput, InvokeError> {
        progress.report(1.0, Some(2.0), Some("half way".into()));
        let is_error = tool == "judge";
        Ok(ToolOutput { structured: Some(json!({"t": 21})), content: json!([]), is_error })
    }
}

const FLOW: &str = r#"
name = "three-steps"
[[nodes]]
id = "measure"
tool = "measure"
arguments = {}
[[nodes]]
id = "judge"
tool = "judge"
arguments = {}
[[nodes]]
id = "report"
tool = "measure"
arguments = {}
[[edges]]
from = "measure"
to = "judge"
[[edges]]
from = "judge"
to = "report"
"#;

#[tokio::test]
async fn a_flow_run_reports_each_node_on_the_bus_in_order() {
    let bus = EventBus::new(1000);
    let mut sub =
        bus.subscribe_filtered(Filter { kinds: [EventKind::FlowProgress].into(), ..Filter::default() });
    let flow = Flow::from_toml("three.toml", FLOW, &Tools).unwrap();
    let engine = Engine::new(Arc::new(Tools)).with_observer(Arc::new(bus.clone()));
    let record = engine.run(&flow, json!({}), RunOptions::default()).await;
    let mut seen = Vec::new();
    while let Ok(e) = sub.try_recv() {
        let Event::FlowProgress { run_id, node, status, progress, elapsed_ms, message, .. } = e.as_ref()
        else {
            panic!("filtered to flow progress: {e:?}")
        };
        assert_eq!(run_id, &record.run_id);
        if status == "progress" {
            assert_eq!((*progress, message.as_deref()), (Some(0.5), Some("half way")));
        }
        if matches!(status.as_str(), "succeeded" | "failed" | "skipped") {
            assert!(elapsed_ms.is_some(), "{e:?}");
        }
        if status == "failed" {
            assert!(message.as_deref().is_some_and(|m| m.contains("judge")), "{message:?}");
        }
        seen.push(format!("{node} {status}"));
    }
    assert_eq!(
        seen,
        [
            "measure running",
            "measure progress",
            "measure succeeded",
            "judge running",
            "judge progress",
            "judge failed",
            "report skipped"
        ]
    );
}

#[tokio::test]
async fn process_stats_come_for_stdio_children_only_while_somebody_listens() {
    let config = RegistryConfig { stats_interval: Duration::from_millis(20), ..fast() };
    let registry = Registry::new(config, None, EventBus::new(1000), CancellationToken::new());
    registry.add(stdio_fixture("px")).await.unwrap();
    let v = registry.wait_for("px", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
    let child = v.status.pid.expect("a running child");

    // Nobody subscribes: the sampler wakes, and reads nothing.
    tokio::time::timeout(Duration::from_secs(30), async {
        while registry.sampler_counters().ticks < 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the sampler runs");
    assert_eq!(registry.sampler_counters().proc_reads, 0, "the sampler read /proc with nobody listening");

    let mut sub = registry
        .events()
        .subscribe_filtered(Filter { kinds: [EventKind::ProcessStats].into(), ..Filter::default() });
    let (mut child_seen, mut router_seen) = (false, false);
    tokio::time::timeout(Duration::from_secs(30), async {
        while !(child_seen && router_seen) {
            let e = sub.recv().await.unwrap();
            let Event::ProcessStats { server, pid, rss_bytes, cpu_percent, events_lost, .. } = e.as_ref()
            else {
                panic!("filtered to process stats: {e:?}")
            };
            assert!(*rss_bytes > 0 && *cpu_percent >= 0.0, "{e:?}");
            match server.as_deref() {
                Some("px") => {
                    assert_eq!(*pid, child);
                    assert!(events_lost.is_none());
                    child_seen = true;
                }
                None => {
                    assert_eq!(*pid, std::process::id());
                    router_seen = true;
                }
                Some(other) => panic!("a process of an unknown server {other}"),
            }
        }
    })
    .await
    .expect("process stats for the child and the router");
    assert!(registry.sampler_counters().proc_reads > 0);
    registry.shutdown(Duration::from_secs(5)).await;
}

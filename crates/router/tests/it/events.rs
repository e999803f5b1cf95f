//! The registry's event publishers: catalog diffs, process statistics, flow progress.

use std::time::Duration;

use serde_json::json;
use switchboard_router::{CatalogDiff, Event, ServerState};

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

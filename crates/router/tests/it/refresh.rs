//! `ttlMs` is how long a list may be cached, not a polling period: an idle registry re-lists a server that
//! answers `ttlMs: 0` only at the configured period, and on-demand re-lists coalesce.
//!
//! The server is a small in-process one on a pipe (reached the way built-in servers are), so it can count
//! the list calls it receives; time is paused, so the periods pass without waiting.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use switchboard_router::config::{ServerToml, spec_from_toml};
use switchboard_router::registry::BuiltinConnector;
use switchboard_router::{EventBus, Registry, RegistryConfig, ServerState};
use switchboard_transport::pipe::PipeUpstream;
use switchboard_transport::{Tap, Upstream};
use switchboard_wire::Message;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

/// A 2025-11-25 server whose lists say `ttlMs: 0`, counting `tools/list` calls.
struct CountingServer {
    lists: Arc<AtomicUsize>,
}

async fn serve(input: tokio::io::DuplexStream, mut output: tokio::io::DuplexStream, lists: Arc<AtomicUsize>) {
    let mut lines = BufReader::new(input).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(msg) = Message::parse(line.as_bytes()) else { continue };
        let Some(id) = msg.id() else { continue };
        let reply = match msg.method().unwrap_or_default() {
            "initialize" => Message::response(
                id,
                json!({"protocolVersion": msg.params().and_then(|p| p.get("protocolVersion")).cloned(),
                       "capabilities": {"tools": {"listChanged": true}},
                       "serverInfo": {"name": "ttl-zero", "version": "1.0.0"}}),
            ),
            "tools/list" => {
                lists.fetch_add(1, Ordering::SeqCst);
                Message::response(
                    id,
                    json!({"tools": [{"name": "noop", "inputSchema": {"type": "object"}}], "ttlMs": 0}),
                )
            }
            other => Message::error_response(
                Some(id),
                switchboard_wire::ErrorObject::new(-32601, format!("method {other} not found")),
            ),
        };
        let mut bytes = reply.to_bytes();
        bytes.push(b'\n');
        if output.write_all(&bytes).await.is_err() {
            return;
        }
    }
}

impl BuiltinConnector for CountingServer {
    fn connect(
        &self,
        _server: &str,
        tap: Tap,
        cancel: CancellationToken,
    ) -> Result<Arc<dyn Upstream>, String> {
        let (ours, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, theirs) = tokio::io::duplex(64 * 1024);
        tokio::spawn(serve(server_in, server_out, self.lists.clone()));
        Ok(PipeUpstream::new(theirs, ours, tap, cancel))
    }
}

#[tokio::test(start_paused = true)]
async fn ttl_zero_is_not_a_polling_period_and_on_demand_refreshes_coalesce() {
    let period = Duration::from_secs(60);
    // Health probes are out of this count (a probe failure would re-list on recovery).
    let config = RegistryConfig {
        refresh_interval: period,
        probe_interval: Duration::from_secs(3600),
        ..RegistryConfig::default()
    };
    let registry = Registry::new(config, None, EventBus::new(1000), CancellationToken::new());
    let lists = Arc::new(AtomicUsize::new(0));
    registry.set_builtins(Arc::new(CountingServer { lists: lists.clone() }));
    let spec =
        spec_from_toml("zero", ServerToml { builtin: Some("zero".into()), ..Default::default() }, "test")
            .unwrap();
    registry.add(spec).await.unwrap();
    let v = registry.wait_for("zero", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
    let catalog = registry.entry("zero").unwrap().catalog();
    assert_eq!(catalog.ttl, Some(Duration::ZERO), "the server does answer ttlMs 0");
    assert_eq!(lists.load(Ordering::SeqCst), 1, "listed once on connect");

    // Idle until just before the period: no list calls at all.
    tokio::time::sleep(period - Duration::from_secs(1)).await;
    assert_eq!(lists.load(Ordering::SeqCst), 1, "an idle registry polled a ttlMs-0 server between periods");
    // The period passes: one re-list.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(lists.load(Ordering::SeqCst), 2, "one re-list per period");

    // A catalog younger than the caller's limit is served as is.
    registry.refresh_if_stale("zero", Duration::from_secs(3600)).await.unwrap();
    assert_eq!(lists.load(Ordering::SeqCst), 2);
    // Five callers that all need a fresh list at once share one listing.
    let (a, b, c, d, e) = tokio::join!(
        registry.refresh_if_stale("zero", Duration::ZERO),
        registry.refresh_if_stale("zero", Duration::ZERO),
        registry.refresh_if_stale("zero", Duration::ZERO),
        registry.refresh_if_stale("zero", Duration::ZERO),
        registry.refresh_if_stale("zero", Duration::ZERO),
    );
    for catalog in [a, b, c, d, e] {
        assert!(catalog.unwrap().tool("noop").is_some());
    }
    assert_eq!(lists.load(Ordering::SeqCst), 3, "concurrent on-demand refreshes coalesce into one listing");

    let unknown = registry.refresh_if_stale("nope", Duration::ZERO).await.unwrap_err();
    assert!(unknown.to_string().contains("no server named \"nope\""), "{unknown}");
    registry.shutdown(Duration::from_secs(5)).await;
}

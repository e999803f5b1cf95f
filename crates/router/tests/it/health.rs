//! Health: active probes and the circuit breaker against a real HTTP fixture that is stopped
//! and started again on the same port, and passive detection by a failed call.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;
use switchboard_fixtures::config::{FixtureConfig, TransportKind};
use switchboard_router::{Error, RegistryConfig, ServerState};
use tokio_util::sync::CancellationToken;

use crate::common::{fast, harness, url_spec};

/// Serves the fixture on `addr` until the token is cancelled.
async fn serve_on(addr: SocketAddr) -> CancellationToken {
    let mut cfg = FixtureConfig::new(TransportKind::Http);
    cfg.listen = addr;
    let f = switchboard_fixtures::Fixture::bind(cfg).await.unwrap();
    let stop = CancellationToken::new();
    let s = stop.clone();
    tokio::spawn(async move { f.serve(s).await });
    stop
}

fn free_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

fn probing(interval: Duration) -> RegistryConfig {
    RegistryConfig { probe_interval: interval, probe_timeout: Duration::from_millis(500), ..fast() }
}

/// Stopped → `unavailable` with its reason within a probe interval; a call is refused with
/// that reason; started again on the same port → `ready`.
#[tokio::test]
async fn a_stopped_http_upstream_is_unavailable_then_ready_again() {
    let addr = free_addr();
    let stop = serve_on(addr).await;
    let h = harness(probing(Duration::from_millis(200))).await;
    h.registry.add(url_spec("hp", &format!("http://{addr}/mcp"))).await.unwrap();
    let v = h.registry.wait_for("hp", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
    stop.cancel();
    let v = h.registry.wait_for("hp", ServerState::Unavailable, Duration::from_secs(10)).await.unwrap();
    assert_eq!(v.state, ServerState::Unavailable, "{}", v.reason);
    assert!(v.reason.starts_with("server hp is unavailable: "), "{}", v.reason);
    match h.registry.client_for_call("hp", &json!({})).await {
        Err(Error::NotConnected { reason, .. }) => assert_eq!(reason, v.reason),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a call was routed to an unavailable server"),
    }
    let stop = serve_on(addr).await;
    let v = h.registry.wait_for("hp", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
    stop.cancel();
    h.registry.shutdown(Duration::from_secs(5)).await;
}

/// With a probe interval of a minute, a failed call makes the router probe at once.
#[tokio::test]
async fn a_failed_call_triggers_a_probe_without_waiting() {
    let addr = free_addr();
    let stop = serve_on(addr).await;
    let h = harness(probing(Duration::from_secs(60))).await;
    h.registry.add(url_spec("pp", &format!("http://{addr}/mcp"))).await.unwrap();
    let v = h.registry.wait_for("pp", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
    stop.cancel();
    assert!(h.registry.call_failed("pp"));
    let v = h.registry.wait_for("pp", ServerState::Unavailable, Duration::from_secs(10)).await.unwrap();
    assert_eq!(v.state, ServerState::Unavailable, "{}", v.reason);
    h.registry.shutdown(Duration::from_secs(5)).await;
}

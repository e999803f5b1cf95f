//! `[servers.X] health_path`: an HTTP server probed on its own health endpoint instead of an
//! MCP `ping` (here: another Switchboard, whose `/healthz` is public).

use std::time::Duration;

use switchboard_router::ServerState;

use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_is_probed_on_its_health_path() {
    let inner = Harness::alpha_beta().start().await;
    let url = format!("{}/mcp", inner.base);
    let env = Harness::new()
        .url_upstream("healthy", &url)
        .url_upstream("wrong-path", &url)
        .config(|c| {
            c.registry.probe_interval = Duration::from_millis(200);
            c.registry.failure_threshold = 1;
            for s in &mut c.servers {
                s.health_path =
                    Some(if s.name == "healthy" { "/healthz".into() } else { "/api/no-such-health".into() });
            }
        })
        .start()
        .await;
    let down = env
        .registry()
        .wait_for("wrong-path", ServerState::Unavailable, PATIENCE)
        .await
        .expect("its health path fails");
    assert!(down.reason.contains("health path /api/no-such-health answered HTTP 401"), "{}", down.reason);
    // Several probe periods later the one with a working health path is still ready.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(env.registry().entry("healthy").unwrap().state().0, ServerState::Ready);
}

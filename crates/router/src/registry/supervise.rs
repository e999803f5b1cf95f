//! Supervision: one task per enabled server connects it (era negotiation, handshake, first
//! listing), then watches the connection (refresh period, `list_changed`, process restarts,
//! failures) and reconnects with backoff, setting the state and its reason at every step.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_transport::client::ClientError;
use switchboard_transport::http::{HttpConfig, HttpUpstream};
use switchboard_transport::stdio::{StdioConfig, StdioUpstream};
use switchboard_transport::ws::{WsConfig, WsUpstream};
use switchboard_transport::{Exchange, HandshakeFailure, McpClient, Tap, Upstream, UpstreamEvent};
use switchboard_wire::{Era, Message, method};
use tokio::sync::broadcast;

use super::Inner;
use super::entry::{ServerEntry, ServerState, read, write};
use super::handshake::{failure_record, open_logging, success_record};
use super::health::{Breaker, Verdict, probe, unavailable_reason};
use super::listing::{ready_reason, refresh};
use crate::config::{MIN_REFRESH, TransportSpec};
use crate::events::{Event, now_ms};
use crate::unsolicited;

/// Lines of a stderr tail kept in an operator detail.
const DETAIL_STDERR_LINES: usize = 5;

/// `reason` with the last lines of `stderr` appended, for the operator; `None` when the
/// process said nothing.
fn with_stderr(reason: &str, stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let last = &lines[lines.len().saturating_sub(DETAIL_STDERR_LINES)..];
    (!last.is_empty()).then(|| format!("{reason}; stderr: {}", last.join(" | ")))
}

/// Opens a `subscriptions/listen` stream on a modern server that announces list changes.
async fn open_listen(client: &McpClient) -> Option<Exchange> {
    let hs = client.handshake();
    if hs.era != Era::Modern {
        return None;
    }
    let caps = &hs.server_capabilities;
    let flag =
        |k: &str| caps.get(k).and_then(|c| c.get("listChanged")).and_then(Value::as_bool).unwrap_or(false);
    let (t, r, p) = (flag("tools"), flag("resources"), flag("prompts"));
    if !(t || r || p) {
        return None;
    }
    let params =
        json!({"notifications": {"toolsListChanged": t, "resourcesListChanged": r, "promptsListChanged": p}});
    client.start(method::SUBSCRIPTIONS_LISTEN, params).await.ok()
}

/// What a watched connection asks the supervisor to do next.
enum Next {
    Reconnect(String),
    Stop,
}

pub(super) async fn supervise(inner: Arc<Inner>, entry: Arc<ServerEntry>) {
    let kind = entry.spec.transport.kind();
    let tap = Tap::new(inner.events.frame_sink(), "upstream", &entry.spec.name, kind.as_str());
    let stdio = match &entry.spec.transport {
        TransportSpec::Stdio { command, args, env, cwd } => {
            let mut cfg = StdioConfig::new(command.clone(), args.clone());
            cfg.env = env.clone();
            cfg.cwd = cwd.clone();
            cfg.restart = entry.spec.restart.clone();
            cfg.name = entry.spec.name.clone();
            let up = StdioUpstream::spawn(cfg, tap.clone(), entry.cancel.child_token());
            // Process lifecycle events go to the bus as they happen.
            let mut ev = up.events();
            let (bus, id, name, cancel) =
                (inner.events.clone(), entry.id.clone(), entry.spec.name.clone(), entry.cancel.clone());
            inner.tracker.spawn(async move {
                loop {
                    tokio::select! {
                        e = ev.recv() => match e {
                            Ok(event) => bus.publish(Event::Upstream { server_id: id.clone(), server: name.clone(), event, at_ms: now_ms() }),
                            Err(broadcast::error::RecvError::Lagged(_)) => {}
                            Err(broadcast::error::RecvError::Closed) => return,
                        },
                        _ = cancel.cancelled() => return,
                    }
                }
            });
            write(&entry.upstream, Some(up.clone() as Arc<dyn Upstream>));
            Some(up)
        }
        _ => None,
    };
    let mut failures = 0u32;
    let mut ever_ready = false;
    loop {
        if entry.cancel.is_cancelled() {
            break;
        }
        let upstream: Result<Arc<dyn Upstream>, String> = match (&entry.spec.transport, &stdio) {
            (TransportSpec::Stdio { .. }, Some(s)) => {
                match s.wait_started(inner.config.handshake_timeout).await {
                    Ok(()) => Ok(s.clone() as Arc<dyn Upstream>),
                    Err(switchboard_transport::Error::NotRunning { detail })
                        if s.status().last_error.as_deref() == Some(detail.as_str())
                            && !s.status().connected =>
                    {
                        // The supervisor gave up (crash loop): nothing to retry until removed.
                        let operator = with_stderr(&detail, &s.status().stderr_tail.join("\n"));
                        inner.set_state_detailed(&entry, ServerState::Unavailable, detail, operator).await;
                        entry.cancel.cancelled().await;
                        break;
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
            (TransportSpec::Http { url, headers }, _) => {
                let mut cfg = HttpConfig::new(url.clone());
                cfg.headers = headers.clone();
                entry.spec.limits.apply_http(&mut cfg);
                HttpUpstream::new(cfg, tap.clone(), entry.cancel.child_token())
                    .map(|u| u as Arc<dyn Upstream>)
                    .map_err(|e| e.to_string())
            }
            (TransportSpec::Ws { url }, _) => {
                let mut cfg = WsConfig::new(url.clone());
                entry.spec.limits.apply_ws(&mut cfg);
                WsUpstream::connect(cfg, tap.clone(), entry.cancel.child_token())
                    .await
                    .map(|u| u as Arc<dyn Upstream>)
                    .map_err(|e| e.to_string())
            }
            (TransportSpec::Builtin { server }, _) => match read(&inner.builtins) {
                Some(c) => c.connect(server, tap.clone(), entry.cancel.child_token()),
                None => Err(format!("no built-in server named {server:?} is available in this process")),
            },
            (TransportSpec::Stdio { .. }, None) => Err("internal: stdio upstream missing".into()),
        };
        let outcome = match upstream {
            Err(reason) => {
                let options = inner.connect_options(&entry);
                let f = HandshakeFailure {
                    reason: reason.clone(),
                    era: None,
                    offered_versions: Vec::new(),
                    duration: Duration::ZERO,
                    steps: vec![reason.clone()],
                };
                inner
                    .record_handshake(
                        &entry,
                        failure_record(Some(entry.id.clone()), kind.as_str(), &f, &options),
                        &f.steps,
                    )
                    .await;
                Next::Reconnect(reason)
            }
            Ok(up) => {
                write(&entry.upstream, Some(up.clone()));
                connect_and_watch(&inner, &entry, up, &mut ever_ready, &mut failures).await
            }
        };
        match outcome {
            Next::Stop => break,
            // Stopping (shutdown or removal) closes the connection under a running refresh or
            // watch: that is not the server failing, so nothing is recorded.
            Next::Reconnect(_) if entry.cancel.is_cancelled() => break,
            Next::Reconnect(reason) => {
                write(&entry.client, None);
                failures += 1;
                let state = if failures >= inner.config.unavailable_after {
                    ServerState::Unavailable
                } else if ever_ready {
                    ServerState::Degraded
                } else {
                    ServerState::Pending
                };
                let delay = inner
                    .config
                    .reconnect_backoff
                    .saturating_mul(2u32.saturating_pow(failures.saturating_sub(1).min(16)))
                    .min(Duration::from_secs(30));
                inner
                    .set_state(
                        &entry,
                        state,
                        format!("{reason} (attempt {failures}; retrying in {} ms)", delay.as_millis()),
                    )
                    .await;
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = entry.cancel.cancelled() => break,
                }
            }
        }
    }
    if let Some(u) = read(&entry.upstream) {
        u.close().await;
    }
}

async fn connect_and_watch(
    inner: &Arc<Inner>,
    entry: &Arc<ServerEntry>,
    up: Arc<dyn Upstream>,
    ever_ready: &mut bool,
    failures: &mut u32,
) -> Next {
    let kind = up.kind().as_str();
    let mut events = up.events();
    let mut incoming = up.incoming();
    let options = inner.connect_options(entry);
    let client = match McpClient::connect(up.clone(), options.clone()).await {
        Ok(c) => Arc::new(c),
        Err(f) => {
            inner
                .record_handshake(entry, failure_record(Some(entry.id.clone()), kind, &f, &options), &f.steps)
                .await;
            if up.kind() != switchboard_transport::TransportKind::Stdio {
                up.close().await;
            }
            return Next::Reconnect(format!("handshake failed: {}", f.reason));
        }
    };
    let hs = client.handshake();
    write(&entry.era, Some(hs.era));
    open_logging(&client).await;
    if let Some(store) = &inner.store
        && let Err(e) = store.set_server_era(&entry.id, hs.era.as_str()).await
    {
        tracing::warn!(error = %e, "could not persist era");
    }
    write(&entry.client, Some(client.clone()));
    let listed = refresh(inner, entry, &client, "connect").await;
    inner
        .record_handshake(
            entry,
            success_record(Some(entry.id.clone()), kind, &hs, listed.as_ref().ok().map(|n| *n as i64)),
            &hs.steps,
        )
        .await;
    match &listed {
        Ok(n) => {
            *failures = 0;
            *ever_ready = true;
            let q = entry.catalog().quarantined.len();
            inner.set_state(entry, ServerState::Ready, ready_reason(&client, *n, q)).await;
        }
        Err(e) => {
            inner
                .set_state(entry, ServerState::Degraded, format!("handshake ok but listing failed: {e}"))
                .await;
        }
    }
    let mut listen = open_listen(&client).await;
    let mut breaker = Breaker::new(inner.config.failure_threshold, inner.config.probe_interval);
    let mut next_probe = tokio::time::Instant::now() + inner.config.probe_interval;
    loop {
        // `ttlMs` is how long a list may be cached, not a polling period (see the module docs).
        let period = entry.spec.refresh_interval.unwrap_or(inner.config.refresh_interval).max(MIN_REFRESH);
        let mut trigger: Option<&str> = None;
        tokio::select! {
            _ = entry.cancel.cancelled() => return Next::Stop,
            _ = tokio::time::sleep(period) => trigger = Some("timer"),
            _ = entry.refresh_now.notified() => trigger = Some("manual"),
            _ = async { tokio::select! { _ = tokio::time::sleep_until(next_probe) => {}, _ = entry.probe_now.notified() => {} } } => {
                let timeout = inner.config.probe_timeout;
                let outcome = match (&entry.spec.health_path, &entry.spec.transport) {
                    (Some(path), crate::config::TransportSpec::Http { url, .. }) => {
                        super::health::http_probe(url, path, timeout).await
                    }
                    _ => probe(&client, timeout).await,
                };
                let now = tokio::time::Instant::now();
                match outcome {
                    Ok(took) => {
                        next_probe = now + inner.config.probe_interval;
                        if let Verdict::Healthy { recovered: true } = breaker.success() {
                            trigger = Some("recovered");
                        } else if took > timeout / 2 {
                            inner.set_state(entry, ServerState::Degraded, format!("server {} is slow: a probe took {} ms", entry.spec.name, took.as_millis())).await;
                        } else if entry.state().0 == ServerState::Degraded {
                            trigger = Some("recovered");
                        }
                    }
                    Err(f) => match breaker.failure(now, now_ms(), f.decisive) {
                        Verdict::Opened => {
                            next_probe = now + breaker.backoff();
                            let reason = unavailable_reason(&entry.spec.name, &f.reason, &breaker);
                            inner.set_state(entry, ServerState::Unavailable, reason).await;
                        }
                        _ => {
                            next_probe = now + inner.config.probe_interval;
                            let reason = format!("server {} is failing: {} ({} probes failed)", entry.spec.name, f.reason, breaker.failures());
                            inner.set_state(entry, ServerState::Degraded, reason).await;
                        }
                    },
                }
            }
            m = incoming.recv() => match m {
                Ok(msg) => {
                    if unsolicited::answer(&up, &msg).await {
                        trigger = Some("list_changed");
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => trigger = Some("list_changed"),
                Err(broadcast::error::RecvError::Closed) => return Next::Reconnect("connection closed".into()),
            },
            m = next_listen(&mut listen) => match m {
                Some(msg) if msg.method().is_some_and(method::is_list_changed) => trigger = Some("list_changed"),
                Some(_) => {}
                None => listen = None,
            },
            e = events.recv() => match e {
                Ok(UpstreamEvent::Exited { status, stderr_tail, .. }) => {
                    // Callers see the exit status; the operator also sees what the process said.
                    let why = format!("process exited ({status}); restarting");
                    let operator = with_stderr(&why, &stderr_tail);
                    write(&entry.client, None);
                    inner.set_state_detailed(entry, ServerState::Degraded, why.clone(), operator).await;
                    if up.kind() != switchboard_transport::TransportKind::Stdio {
                        return Next::Reconnect(why);
                    }
                }
                Ok(UpstreamEvent::Started { .. }) => {
                    // A restarted process needs a new handshake.
                    return Next::Reconnect("process restarted".into());
                }
                Ok(UpstreamEvent::GaveUp { reason, stderr_tail }) => {
                    write(&entry.client, None);
                    let operator = with_stderr(&reason, &stderr_tail);
                    inner.set_state_detailed(entry, ServerState::Unavailable, reason, operator).await;
                    entry.cancel.cancelled().await;
                    return Next::Stop;
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return Next::Reconnect("connection closed".into()),
            },
        }
        if let Some(trigger) = trigger {
            match refresh(inner, entry, &client, trigger).await {
                Ok(n) => {
                    let (state, _) = entry.state();
                    if state != ServerState::Ready || trigger != "timer" {
                        let q = entry.catalog().quarantined.len();
                        inner.set_state(entry, ServerState::Ready, ready_reason(&client, n, q)).await;
                    }
                    if trigger == "list_changed" && listen.is_none() {
                        listen = open_listen(&client).await;
                    }
                }
                Err(ClientError::Transport(e)) if e.is_fatal() => {
                    return Next::Reconnect(format!("refresh failed: {e}"));
                }
                Err(ClientError::Handshake(f)) => {
                    return Next::Reconnect(format!("session lost and re-initialize failed: {}", f.reason));
                }
                Err(e) => {
                    inner
                        .set_state(entry, ServerState::Degraded, format!("refresh ({trigger}) failed: {e}"))
                        .await
                }
            }
        }
    }
}

async fn next_listen(listen: &mut Option<Exchange>) -> Option<Message> {
    match listen {
        Some(ex) => match ex.next().await {
            Some(Ok(m)) if !m.is_response() => Some(m),
            _ => None,
        },
        None => std::future::pending().await,
    }
}

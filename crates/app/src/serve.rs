//! `switchboard serve`: run the router until interrupted, serving downstream MCP clients over
//! HTTP and WebSocket (`--listen`) and/or stdio (`--stdio`), with request traces stored.

use std::time::Duration;

use anyhow::Context as _;

use switchboard_router::{Event, EventBus, Registry};
use switchboard_store::{Store, StoreConfig};
use tokio_util::sync::CancellationToken;

use crate::config::AppConfig;

/// Opens the store (a locked or corrupt file is a clear error) and starts the registry.
pub async fn start(config: &AppConfig, cancel: CancellationToken) -> anyhow::Result<(Registry, Store)> {
    let store = Store::open(&StoreConfig { path: config.db_path.clone(), ..StoreConfig::default() }).await?;
    let registry = Registry::new(config.registry.clone(), Some(store.clone()), EventBus::default(), cancel);
    let builtins = crate::builtins::Builtins::new(&crate::builtins::BuiltinsConfig {
        knowledge_db: Some(crate::builtins::knowledge_db_beside(&config.db_path)),
        blob_dir: Some(crate::builtins::blob_dir_beside(&config.db_path)),
        image_allow: config.image_allow.clone(),
        ..Default::default()
    })
    .await?;
    registry.set_builtins(std::sync::Arc::new(builtins));
    store.interrupt_running_runs(crate::now_ms()).await?;
    registry.add_all(config.servers.clone()).await?;
    Ok((registry, store))
}

/// Logs registry events until cancelled.
pub async fn log_events(registry: Registry, cancel: CancellationToken) {
    let mut rx = registry.events().subscribe();
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            e = rx.recv() => match e {
                Ok(ev) => match ev.as_ref() {
                    Event::Handshake { server, record } => match &record.error {
                        None => tracing::info!(%server, era = ?record.era, version = ?record.chosen_version, tools = ?record.tool_count, ms = format!("{:.1}", record.duration_ms), "handshake"),
                        Some(err) => tracing::warn!(%server, error = %err, "handshake failed"),
                    },
                    Event::Catalog { server, tools, quarantined, trigger, .. } => {
                        tracing::info!(%server, tools, quarantined = quarantined.len(), %trigger, "catalog");
                    }
                    Event::Upstream { server, event, .. } => tracing::info!(%server, ?event, "upstream"),
                    _ => {}
                },
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => tracing::warn!(missed = n, "event log fell behind"),
                Err(_) => return,
            }
        }
    }
}

/// What `switchboard serve` offers downstream clients besides running the registry.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Serve the HTTP listener (`/mcp` for HTTP and WebSocket clients, blobs, health) here.
    pub listen: Option<std::net::SocketAddr>,
    /// Serve one MCP client on stdin/stdout; the process ends when stdin closes.
    pub stdio: bool,
    /// The bearer token every route but `/healthz` requires (HTTP and WebSocket; stdio is the
    /// process owner's).
    pub token: Option<crate::auth::BearerToken>,
}

/// Builds the listener's app and the in-process adapter for stdio clients.
fn build(
    config: &AppConfig,
    registry: &Registry,
    token: Option<crate::auth::BearerToken>,
    traces: crate::traces::TraceSink,
    cancel: CancellationToken,
) -> anyhow::Result<(axum::Router, crate::downstream::Adapter)> {
    let blob_dir = config.db_path.parent().unwrap_or(std::path::Path::new(".")).join("blobs");
    let blobs = crate::blobs::BlobStore::open(blob_dir, crate::blobs::DEFAULT_MAX_BLOB)?;
    let state = crate::http::HttpState {
        blobs,
        registry: Some(registry.clone()),
        endpoint: std::sync::Arc::new(crate::endpoint::EndpointConfig {
            session_key: crate::session::SessionKey::configured_or_random(
                config.endpoint.session_key_file.as_deref(),
            )?,
            federation: config.endpoint.federation.clone(),
            allowed_origins: config.endpoint.allowed_origins.clone(),
            body_limit: config.endpoint.body_limit,
            answer_timeout: config.endpoint.answer_timeout,
            pending_wait: config.registry.handshake_timeout,
            ..Default::default()
        }),
    };
    let edge = crate::edge::EdgeConfig {
        call_timeout: config.call_timeout,
        traces: Some(traces),
        ..Default::default()
    };
    Ok(crate::http::app(state, edge, token, cancel))
}

/// The warning for a listener reachable from other machines without a token, if `addr` is one.
pub fn exposure_warning(addr: std::net::SocketAddr, has_token: bool) -> Option<String> {
    (!has_token && !addr.ip().is_loopback()).then(|| {
        format!(
            "warning: listening on {addr}, which other machines can reach, without a bearer token: anyone \
             who can connect may call every tool of every configured server through /mcp, upload and read \
             blobs and list the servers. Set a token (--token-env VAR, [endpoint].token_env or \
             SWITCHBOARD_TOKEN) or listen on 127.0.0.1."
        )
    })
}

/// Binds `addr` and serves `app` until `cancel` fires; announces `listening on http://ADDR/mcp`
/// once bound (on stdout, or on stderr when stdout carries the stdio protocol). Returns the
/// listener's task, which ends once it has drained the requests in flight.
async fn listen(
    app: axum::Router,
    addr: std::net::SocketAddr,
    limits: crate::http::ListenerConfig,
    announce_on_stderr: bool,
    has_token: bool,
    cancel: CancellationToken,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the listener on {addr}"))?;
    let bound = listener.local_addr()?;
    if let Some(w) = exposure_warning(bound, has_token) {
        eprintln!("{w}");
        tracing::warn!(%bound, "listening on a non-loopback address without a bearer token");
    }
    let line = format!("listening on http://{bound}/mcp");
    if announce_on_stderr {
        eprintln!("{line}");
    } else {
        // Nobody reading stdout is no reason to stop serving.
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    }
    tracing::info!(%bound, "MCP endpoint listening");
    Ok(tokio::spawn(async move {
        if let Err(e) = crate::http::serve_with(listener, app, limits, cancel).await {
            tracing::error!(error = %e, "HTTP listener failed");
        }
    }))
}

/// Runs until `cancel` fires (or, with `--stdio`, until stdin closes), then shuts down within a
/// deadline.
pub async fn run(config: AppConfig, options: ServeOptions, cancel: CancellationToken) -> anyhow::Result<()> {
    for w in &config.warnings {
        tracing::warn!("{w}");
    }
    tracing::info!(config = %config.source, db = %config.db_path.display(), servers = config.servers.len(), prefix = ?config.endpoint.federation.mode, "starting switchboard");
    let (registry, store) = start(&config, cancel.child_token()).await?;
    let logger = tokio::spawn(log_events(registry.clone(), cancel.clone()));
    let traces_stop = CancellationToken::new();
    let (traces, writer) = crate::traces::TraceSink::spawn(
        Some(store.clone()),
        Some(registry.events().clone()),
        &crate::traces::TracesConfig { keep: config.traces_kept, ..Default::default() },
        traces_stop.clone(),
    );
    let mut stdio = None;
    let mut http = None;
    if options.listen.is_some() || options.stdio {
        let has_token = options.token.is_some();
        let (app, adapter) = build(&config, &registry, options.token.clone(), traces, cancel.child_token())?;
        if let Some(addr) = options.listen {
            let limits = config.endpoint.listener;
            http = Some(listen(app, addr, limits, options.stdio, has_token, cancel.child_token()).await?);
        }
        if options.stdio {
            tracing::info!("serving an MCP client on stdin/stdout");
            let stop = cancel.clone();
            stdio = Some(tokio::spawn(async move {
                let io_cancel = stop.child_token();
                crate::downstream::stdio::serve(adapter, tokio::io::stdin(), tokio::io::stdout(), io_cancel)
                    .await;
                if !stop.is_cancelled() {
                    tracing::info!("stdin closed; shutting down");
                    stop.cancel();
                }
            }));
        }
    } else {
        drop(traces);
    }
    cancel.cancelled().await;
    tracing::info!("shutting down");
    if let Some(task) = stdio {
        // Lets the stdio connection end its session before the registry goes.
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    }
    if let Some(task) = http {
        // Requests in flight finish (or reach their deadline) before the registry goes.
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    }
    registry.shutdown(Duration::from_secs(5)).await;
    let _ = logger.await;
    traces_stop.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    store.close().await;
    Ok(())
}

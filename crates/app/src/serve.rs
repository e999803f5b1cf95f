//! `switchboard serve`: run the router until interrupted.

use std::time::Duration;

use anyhow::Context as _;

use switchboard_router::{Event, EventBus, Registry};
use switchboard_store::{Store, StoreConfig};
use switchboard_transport::FrameBus;
use tokio_util::sync::CancellationToken;

use crate::config::AppConfig;

/// Opens the store (a locked or corrupt file is a clear error) and starts the registry.
pub async fn start(config: &AppConfig, cancel: CancellationToken) -> anyhow::Result<(Registry, Store)> {
    let store = Store::open(&StoreConfig { path: config.db_path.clone(), ..StoreConfig::default() }).await?;
    let registry = Registry::new(
        config.registry.clone(),
        Some(store.clone()),
        EventBus::default(),
        FrameBus::default(),
        cancel,
    );
    let builtins = crate::builtins::Builtins::new(&crate::builtins::BuiltinsConfig {
        knowledge_db: Some(crate::builtins::knowledge_db_beside(&config.db_path)),
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

/// Binds `addr` and serves the HTTP listener (the MCP endpoint at `/mcp`, blobs, health)
/// until `cancel` fires; prints `listening on http://ADDR/mcp` once bound.
async fn listen(
    config: &AppConfig,
    registry: &Registry,
    addr: std::net::SocketAddr,
    cancel: CancellationToken,
) -> anyhow::Result<()> {
    let blob_dir = config.db_path.parent().unwrap_or(std::path::Path::new(".")).join("blobs");
    let blobs = crate::blobs::BlobStore::open(blob_dir, crate::blobs::DEFAULT_MAX_BLOB)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the listener on {addr}"))?;
    let bound = listener.local_addr()?;
    let app = crate::http::router(crate::http::HttpState {
        blobs,
        registry: Some(registry.clone()),
        endpoint: std::sync::Arc::new(crate::endpoint::EndpointConfig {
            session_key: crate::session::SessionKey::from_env_or_random(),
            federation: config.endpoint.federation.clone(),
            allowed_origins: config.endpoint.allowed_origins.clone(),
            body_limit: config.endpoint.body_limit,
            ..Default::default()
        }),
    });
    println!("listening on http://{bound}/mcp");
    tracing::info!(%bound, "MCP endpoint listening");
    tokio::spawn(async move {
        if let Err(e) = crate::http::serve(listener, app, cancel).await {
            tracing::error!(error = %e, "HTTP listener failed");
        }
    });
    Ok(())
}

/// Runs until `cancel` fires, then shuts down within a deadline. With an endpoint address
/// (`--listen` or `[endpoint].listen`), also serves the HTTP listener there.
pub async fn run(config: AppConfig, cancel: CancellationToken) -> anyhow::Result<()> {
    for w in &config.warnings {
        tracing::warn!("{w}");
    }
    tracing::info!(config = %config.source, db = %config.db_path.display(), servers = config.servers.len(), prefix = ?config.endpoint.federation.mode, "starting switchboard");
    let (registry, store) = start(&config, cancel.child_token()).await?;
    let logger = tokio::spawn(log_events(registry.clone(), cancel.clone()));
    if let Some(addr) = config.endpoint.listen {
        listen(&config, &registry, addr, cancel.child_token()).await?;
    }
    cancel.cancelled().await;
    tracing::info!("shutting down");
    registry.shutdown(Duration::from_secs(5)).await;
    let _ = logger.await;
    store.close().await;
    Ok(())
}

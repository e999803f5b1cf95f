//! `switchboard serve`: run the router until interrupted, serving downstream MCP clients over
//! HTTP and WebSocket (`--listen`) and/or stdio (`--stdio`), with request traces stored.
//!
//! The router is [`App`]; this module adds what only the command does: the merge of flags and
//! file, the token from the environment, the `listening on` line, the exposure warning, the
//! event log on stderr and the signal handling.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use switchboard_app::auth::BearerToken;
use switchboard_app::config::{AppConfig, ServeFlags};
use switchboard_app::{App, AppOptions};
use switchboard_router::{Event, Registry};
use tokio_util::sync::CancellationToken;

use super::Sources;

/// How long shutdown lets the requests in flight finish.
const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(5);

/// Runs `switchboard serve` (see the command's help).
pub(crate) async fn command(
    sources: Sources<'_>,
    mcp_json: &[PathBuf],
    flags: ServeFlags,
    stdio: bool,
    token_env: Option<&str>,
) -> ExitCode {
    super::init_tracing();
    let cfg = switchboard_app::config::load(sources.config, mcp_json, sources.db).and_then(|mut c| {
        c.apply_serve_flags(flags)?;
        Ok(c)
    });
    let cfg = match cfg {
        Ok(c) => c,
        Err(e) => {
            eprintln!("switchboard: {e:#}");
            return ExitCode::from(2);
        }
    };
    let token = match BearerToken::from_env(token_env.or(cfg.token_env.as_deref())) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("switchboard: {e}");
            return ExitCode::from(2);
        }
    };
    let cancel = CancellationToken::new();
    tokio::spawn(super::shutdown_signal(cancel.clone()));
    let options = ServeOptions { listen: cfg.endpoint.listen, stdio, token };
    let ok = match run(cfg, options, cancel).await {
        Ok(()) => true,
        Err(e) => {
            eprintln!("switchboard: {e:#}");
            false
        }
    };
    if stdio {
        // A blocking read of stdin cannot be cancelled; do not wait for it at runtime shutdown.
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        std::process::exit(if ok { 0 } else { 1 });
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// Logs registry events until cancelled.
async fn log_events(registry: Registry, cancel: CancellationToken) {
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
struct ServeOptions {
    /// Serve the HTTP listener (`/mcp` for HTTP and WebSocket clients, blobs, health) here.
    listen: Option<std::net::SocketAddr>,
    /// Serve one MCP client on stdin/stdout; the process ends when stdin closes.
    stdio: bool,
    /// The bearer token every route but `/healthz` requires (HTTP and WebSocket; stdio is the
    /// process owner's).
    token: Option<BearerToken>,
}

/// The warning for a listener reachable from other machines without a token, if `addr` is one.
fn exposure_warning(addr: std::net::SocketAddr, has_token: bool) -> Option<String> {
    (!has_token && !addr.ip().is_loopback()).then(|| {
        format!(
            "warning: listening on {addr}, which other machines can reach, without a bearer token: anyone \
             who can connect may call every tool of every configured server through /mcp, upload and read \
             blobs and list the servers. Set a token (--token-env VAR, [endpoint].token_env or \
             SWITCHBOARD_TOKEN) or listen on 127.0.0.1."
        )
    })
}

/// Announces the bound listener: `listening on http://ADDR/mcp` on stdout, or on stderr when
/// stdout carries the stdio protocol; the exposure warning first when there is one.
fn announce(bound: std::net::SocketAddr, on_stderr: bool, has_token: bool) {
    if let Some(w) = exposure_warning(bound, has_token) {
        eprintln!("{w}");
        tracing::warn!(%bound, "listening on a non-loopback address without a bearer token");
    }
    let line = format!("listening on http://{bound}/mcp");
    if on_stderr {
        eprintln!("{line}");
    } else {
        // Nobody reading stdout is no reason to stop serving.
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    }
}

/// Runs until `cancel` fires (or, with `--stdio`, until stdin closes), then shuts down in order
/// ([`App::shutdown`]).
async fn run(config: AppConfig, options: ServeOptions, cancel: CancellationToken) -> anyhow::Result<()> {
    for w in &config.warnings {
        tracing::warn!("{w}");
    }
    tracing::info!(config = %config.source, db = %config.db_path.display(), servers = config.servers.len(), prefix = ?config.endpoint.federation.mode, "starting switchboard");
    let has_token = options.token.is_some();
    let app = App::build(&config, AppOptions { token: options.token, ..AppOptions::default() }).await?;
    // The signal handler and the end of stdin ask the app to stop through `cancel`.
    let stop = app.cancel_token();
    tokio::spawn({
        let (cancel, stop) = (cancel.clone(), stop.clone());
        async move {
            tokio::select! {
                () = cancel.cancelled() => stop.cancel(),
                () = stop.cancelled() => {}
            }
        }
    });
    let logger = tokio::spawn(log_events(app.registry().clone(), stop.clone()));
    if let Some(addr) = options.listen {
        match app.listen(addr).await {
            Ok(bound) => announce(bound, options.stdio, has_token),
            Err(e) => {
                app.shutdown(SHUTDOWN_DEADLINE).await;
                return Err(e.into());
            }
        }
    }
    if options.stdio {
        tracing::info!("serving an MCP client on stdin/stdout");
        let ended = app.serve_stdio(tokio::io::stdin(), tokio::io::stdout());
        let stop = stop.clone();
        tokio::spawn(async move {
            ended.await;
            if !stop.is_cancelled() {
                tracing::info!("stdin closed; shutting down");
                stop.cancel();
            }
        });
    }
    app.cancelled().await;
    tracing::info!("shutting down");
    app.shutdown(SHUTDOWN_DEADLINE).await;
    let _ = logger.await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_reachable_listener_without_a_token_is_warned_about() {
        let public: std::net::SocketAddr = "0.0.0.0:7010".parse().expect("addr");
        let local: std::net::SocketAddr = "127.0.0.1:7010".parse().expect("addr");
        assert!(exposure_warning(public, false).is_some_and(|w| w.contains("0.0.0.0:7010")));
        assert!(exposure_warning(public, true).is_none());
        assert!(exposure_warning(local, false).is_none());
    }
}

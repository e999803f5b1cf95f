//! `switchboard serve`: run the router until interrupted, serving downstream MCP clients over
//! HTTP and WebSocket (`--listen`) and/or stdio (`--stdio`), with request traces stored.
//!
//! The router is [`App`]; this module adds what only the command does: the merge of flags and
//! file, the token from the environment, the default listener (127.0.0.1:7010, or a free
//! loopback port when it is taken), the `listening on` and `panel:` lines, `--open`, the
//! exposure warning, the event log on stderr and the signal handling.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use switchboard_admin::AdminToken;
use switchboard_app::auth::{BearerToken, TOKEN_ENV};
use switchboard_app::config::{AppConfig, ServeFlags};
use switchboard_app::reload::ReloadConfig;
use switchboard_app::{App, AppOptions};
use switchboard_router::{Event, Registry};
use tokio_util::sync::CancellationToken;

use super::Sources;

/// How long shutdown lets the requests in flight finish.
const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(5);

/// Where `serve` listens when nothing says where (and it does not serve stdio only).
pub(crate) const DEFAULT_LISTEN: std::net::SocketAddr =
    std::net::SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 7010);

/// How `serve` runs besides its configuration.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Modes {
    /// Serve one MCP client on stdin/stdout.
    pub(crate) stdio: bool,
    /// Open the panel in a browser once listening.
    pub(crate) open: bool,
}

/// The configured token's text, for the admin API (which needs the secret itself to print the
/// panel's URL), read from the same variable [`BearerToken::from_env`] reads.
fn configured_secret(var: Option<&str>) -> Option<String> {
    std::env::var(var.unwrap_or(TOKEN_ENV)).ok().filter(|v| !v.trim().is_empty())
}

/// Runs `switchboard serve` (see the command's help).
pub(crate) async fn command(
    sources: Sources<'_>,
    mcp_json: &[PathBuf],
    flags: ServeFlags,
    modes: Modes,
    token_env: Option<&str>,
) -> ExitCode {
    let Modes { stdio, open } = modes;
    super::init_tracing();
    let reload_flags = flags.clone();
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
    let var = token_env.or(cfg.token_env.as_deref());
    let token = match BearerToken::from_env(var) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("switchboard: {e}");
            return ExitCode::from(2);
        }
    };
    // One token for both when one is configured; otherwise the app makes a per-launch one.
    let admin_token = match token.as_ref().and_then(|_| configured_secret(var)).map(|s| AdminToken::new(&s)) {
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => {
            eprintln!("switchboard: {e}");
            return ExitCode::from(2);
        }
        None => None,
    };
    let cancel = CancellationToken::new();
    tokio::spawn(super::shutdown_signal(cancel.clone()));
    // Nothing says where to listen and no stdio client: the workstation default.
    let (listen, default_listen) = match cfg.endpoint.listen {
        Some(a) => (Some(a), false),
        None if !stdio => (Some(DEFAULT_LISTEN), true),
        None => (None, false),
    };
    // A configuration read from a file follows the file (`switchboard_app::reload`).
    let reload = (!cfg.embedded_default).then(|| ReloadConfig {
        mcp_json: mcp_json.to_vec(),
        db: sources.db.map(std::path::Path::to_path_buf),
        flags: Some(reload_flags),
        ..ReloadConfig::new(
            sources.config.map_or_else(|| PathBuf::from("switchboard.toml"), |p| p.to_path_buf()),
        )
    });
    let options = ServeOptions { listen, default_listen, stdio, open, token, admin_token, reload };
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
    /// `listen` is [`DEFAULT_LISTEN`] because nothing named one: a taken port falls back to a
    /// free loopback port.
    default_listen: bool,
    /// Serve one MCP client on stdin/stdout; the process ends when stdin closes.
    stdio: bool,
    /// Open the panel with `xdg-open` once listening.
    open: bool,
    /// The bearer token every route but `/healthz` requires (HTTP and WebSocket; stdio is the
    /// process owner's).
    token: Option<BearerToken>,
    /// The admin API's token (the configured one; `None`: per-launch random).
    admin_token: Option<AdminToken>,
    /// The config file to follow, when the configuration came from one.
    reload: Option<ReloadConfig>,
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
    let app = App::build(
        &config,
        AppOptions { token: options.token, admin_token: options.admin_token, ..AppOptions::default() },
    )
    .await?;
    if let Some(reload) = options.reload {
        app.watch_config(reload, config.clone());
    }
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
        let mut bound = app.listen(addr).await;
        if options.default_listen && bound.is_err() {
            let free = std::net::SocketAddr::new(addr.ip(), 0);
            bound = app.listen(free).await;
            if let Ok(b) = &bound {
                eprintln!("switchboard: {addr} is taken; listening on {b} instead");
            }
        }
        match bound {
            Ok(bound) => {
                announce(bound, options.stdio, has_token);
                let url = app.panel_url(bound);
                eprintln!("panel: {url}");
                if options.open {
                    open_browser(&url);
                }
            }
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

/// Opens `url` with `xdg-open` when it is installed; says so when it is not.
fn open_browser(url: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("xdg-open").is_file()));
    if !found {
        eprintln!("switchboard: --open: xdg-open is not installed; open the panel's URL above yourself");
        return;
    }
    // The URL carries the token: it goes to the browser as an argument, never into a log.
    match std::process::Command::new("xdg-open")
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => eprintln!("switchboard: --open: xdg-open failed to start: {e}"),
    }
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

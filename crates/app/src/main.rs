//! The `switchboard` command.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use switchboard_app::{config, probe, serve, servers};
use tokio_util::sync::CancellationToken;

/// Switchboard: an MCP router that shows what it does.
#[derive(Debug, Parser)]
#[command(name = "switchboard", version, about)]
struct Cli {
    /// Config file (default: ./switchboard.toml if present, else the embedded default).
    #[arg(long, global = true, env = "SWITCHBOARD_CONFIG")]
    config: Option<PathBuf>,
    /// SQLite database file (default: [store].path, else ~/.local/share/switchboard/switchboard.db).
    #[arg(long, global = true, env = "SWITCHBOARD_DB")]
    db: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start the router from the config and run until interrupted.
    Serve {
        /// Extra mcp.json files (as desktop MCP clients write them) to import.
        #[arg(long = "mcp-json")]
        mcp_json: Vec<PathBuf>,
    },
    /// List registered servers and their state.
    Servers {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Connect to one MCP server as the router would; print the handshake and catalog.
    Probe {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Seconds allowed for each step.
        #[arg(long, default_value_t = 10)]
        timeout: u64,
        /// The server URL (http(s):// or ws(s)://); or use `-- COMMAND ARGS…`.
        url: Option<String>,
        /// A stdio server's command line, after `--`.
        #[arg(last = true)]
        command: Vec<String>,
    },
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,switchboard::upstream::stderr=off"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

async fn shutdown_signal(cancel: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                cancel.cancel();
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    cancel.cancel();
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve { mcp_json } => {
            init_tracing();
            let cfg = match config::load(cli.config.as_deref(), &mcp_json, cli.db.as_deref()) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("switchboard: {e:#}");
                    return ExitCode::from(2);
                }
            };
            let cancel = CancellationToken::new();
            tokio::spawn(shutdown_signal(cancel.clone()));
            match serve::run(cfg, cancel).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("switchboard: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Servers { json } => {
            let result = async {
                let cfg = config::load(cli.config.as_deref(), &[], cli.db.as_deref())?;
                let store = switchboard_store::Store::open(&switchboard_store::StoreConfig {
                    path: cfg.db_path.clone(),
                    ..Default::default()
                })
                .await?;
                let rows = servers::rows(&store).await?;
                store.close().await;
                anyhow::Ok(rows)
            }
            .await;
            match result {
                Ok(rows) if json => {
                    println!("{}", serde_json::to_string_pretty(&rows).unwrap_or_default());
                    ExitCode::SUCCESS
                }
                Ok(rows) => {
                    print!("{}", servers::render(&rows));
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("switchboard: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Probe { json, timeout, url, command } => {
            if std::env::var_os("RUST_LOG").is_some() {
                init_tracing();
            }
            let target = match (url, command.is_empty()) {
                (Some(u), true) => probe::Target::Url(u),
                (None, false) => probe::Target::Command(command),
                (Some(_), false) => {
                    eprintln!("probe failed: give either a URL or `-- COMMAND…`, not both");
                    return ExitCode::from(2);
                }
                (None, true) => {
                    eprintln!("probe failed: give a server URL or `-- COMMAND…`");
                    return ExitCode::from(2);
                }
            };
            match probe::probe(target, Duration::from_secs(timeout.max(1))).await {
                Ok(r) if json => {
                    println!("{}", serde_json::to_string_pretty(&probe::to_json(&r)).unwrap_or_default());
                    ExitCode::SUCCESS
                }
                Ok(r) => {
                    print!("{}", probe::render(&r));
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("probe failed: {}", e.replace('\n', " "));
                    ExitCode::FAILURE
                }
            }
        }
    }
}

//! `switchboard-chaos`: parses the command line, sets up logging (stderr; stdout carries the one
//! `listening http://…/mcp` line), starts a replica and waits for SIGINT/SIGTERM (graceful:
//! deregisters) or a `crash` fault (exits at once with a non-zero status).

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use switchboard_chaos::{CRASH_EXIT_CODE, Chaos, ChaosConfig, FaultPatch, RegistrationConfig, register};
use tracing_subscriber::EnvFilter;

/// A fault-injecting MCP server for routing tests.
#[derive(Debug, Parser)]
#[command(name = "switchboard-chaos", version)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Replica id shown in results and in the control API (default: random).
    #[arg(long)]
    replica_id: Option<String>,
    /// Bearer token the control API (`/chaos`) requires.
    #[arg(long, env = "CHAOS_CONTROL_TOKEN")]
    control_token: Option<String>,
    /// Register with the router at this base URL (`http://host:port`).
    #[arg(long)]
    register: Option<String>,
    /// The server_id to register as (default: the replica id).
    #[arg(long)]
    server_id: Option<String>,
    /// Capabilities to claim at registration, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "tools")]
    capabilities: Vec<String>,
    /// Name of the environment variable holding the router's token.
    #[arg(long)]
    token_env: Option<String>,
    /// MCP revision claimed at registration.
    #[arg(long, default_value = register::DEFAULT_MCP_VERSION)]
    mcp_version: String,
    /// Faults in force from the start, as the JSON body of `POST /chaos/faults`
    /// (e.g. `{"bad_encoding": true}`).
    #[arg(long, value_parser = parse_faults)]
    faults: Option<FaultPatch>,
    /// Seconds to wait for the router to come up.
    #[arg(long, default_value_t = 30)]
    wait_for_router_secs: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn")),
        )
        .init();

    let replica_id = args.replica_id.unwrap_or_else(switchboard_chaos::replica::random_id);
    let registration = match args.register {
        Some(router) => {
            let token = match &args.token_env {
                Some(name) => {
                    Some(std::env::var(name).with_context(|| format!("reading the token from ${name}"))?)
                }
                None => None,
            };
            let mut config =
                RegistrationConfig::new(router, args.server_id.unwrap_or_else(|| replica_id.clone()));
            config.capabilities = args.capabilities;
            config.token = token;
            config.mcp_version = args.mcp_version;
            config.wait_for_router = Duration::from_secs(args.wait_for_router_secs);
            Some(config)
        }
        None => None,
    };
    let config = ChaosConfig {
        listen: args.listen,
        replica_id: Some(replica_id),
        control_token: args.control_token,
        registration,
        faults: args.faults.unwrap_or_default(),
    };
    // Installed before the listening line, so a SIGTERM right after it is already graceful.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("listening for SIGTERM")?;
    let replica = Chaos::bind(config).await.context("starting switchboard-chaos")?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening {}", replica.url()).context("writing the listening line")?;
        stdout.flush().context("flushing stdout")?;
    }
    tracing::info!(replica = replica.replica_id(), url = replica.url(), "switchboard-chaos serving");

    tokio::select! {
        () = replica.crashed() => {
            tracing::warn!("crash fault: exiting at once");
            std::process::exit(CRASH_EXIT_CODE);
        }
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: shutting down"),
        _ = terminate.recv() => tracing::info!("SIGTERM: shutting down"),
    }
    replica.shutdown().await;
    Ok(())
}

fn parse_faults(text: &str) -> Result<FaultPatch, String> {
    serde_json::from_str(text).map_err(|error| format!("not fault settings: {error}"))
}

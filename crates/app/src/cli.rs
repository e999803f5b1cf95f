//! The `switchboard` command line: the clap definitions and the dispatch to one module per
//! command. Every command that runs the router builds it with [`switchboard_app::App`].

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use switchboard_app::upstreams;
use switchboard_router::federation::PrefixMode;
use tokio_util::sync::CancellationToken;

#[macro_use]
mod stdout;
mod diagnose;
mod knowledge;
mod probe;
mod register;
mod serve;
mod server;
mod servers;
mod traces;

const SERVE_AFTER_HELP: &str = "\
Servers come from the config file (--config, else ./switchboard.toml, else the embedded
default with the built-in vision, knowledge and reasoning servers) and --mcp-json files;
--upstream and --upstream-cmd add to them. With any --upstream or --upstream-cmd flag the
embedded default's built-in servers are left out (a config file keeps all of its servers).
Flags win over the file's [endpoint] table (listen, prefix, separator, allowed_origins,
body_limit).

Example:
  switchboard serve --listen 127.0.0.1:0 --prefix always \\
    --upstream-cmd 'everything=npx -y @modelcontextprotocol/server-everything stdio' \\
    --upstream docs=http://127.0.0.1:3001/mcp";

/// `--prefix`: the federation's prefix mode.
fn parse_prefix(s: &str) -> Result<PrefixMode, String> {
    match s {
        "always" => Ok(PrefixMode::Always),
        "on-collision" => Ok(PrefixMode::OnCollision),
        "never" => Ok(PrefixMode::Never),
        _ => Err("choose always, on-collision or never".to_owned()),
    }
}

/// Parses the command line; a bad value is one line on stderr and exit status 2 (help,
/// version and usage errors keep clap's own output).
fn parse_cli() -> Cli {
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::ValueValidation | clap::error::ErrorKind::InvalidValue
            ) =>
        {
            let text = e.to_string();
            let line = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
                .collect::<Vec<_>>()
                .join(" ");
            eprintln!("switchboard: {}", line.strip_prefix("error: ").unwrap_or(&line));
            std::process::exit(2);
        }
        Err(e) => e.exit(),
    }
}

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
pub(crate) enum KnowledgeAction {
    /// Import Markdown or JSON procedure files (or directories of them); an existing id is replaced.
    Import {
        /// Files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Search the knowledge base as `search_manual` does.
    Search {
        /// Free text.
        query: String,
        /// A part number (exact or fuzzy).
        #[arg(long)]
        part: Option<String>,
        /// A component kind (boosts sections of that kind).
        #[arg(long)]
        kind: Option<String>,
        /// Results to show.
        #[arg(long, default_value_t = 3)]
        top_k: usize,
    },
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start the router from the config and run until interrupted.
    #[command(after_help = SERVE_AFTER_HELP)]
    Serve {
        /// Extra mcp.json files (as desktop MCP clients write them) to import.
        #[arg(long = "mcp-json")]
        mcp_json: Vec<PathBuf>,
        /// Serve the federated MCP endpoint (`/mcp`, 2026-07-28 and 2025-11-25 sessions, HTTP and
        /// WebSocket), blobs and the control panel on ADDR (port 0 picks one and prints it).
        /// Without it (and without --stdio or [endpoint].listen): 127.0.0.1:7010, or a free
        /// loopback port when that one is taken.
        #[arg(long, value_name = "ADDR")]
        listen: Option<std::net::SocketAddr>,
        /// Serve one MCP client on stdin/stdout, alone or next to --listen (newline-delimited
        /// JSON-RPC; logs go to stderr); the process exits when stdin closes.
        #[arg(long)]
        stdio: bool,
        /// Open the control panel in a browser (`xdg-open`) once listening.
        #[arg(long)]
        open: bool,
        /// Require `Authorization: Bearer <token>` on /mcp, the token read from this environment
        /// variable (default: [endpoint].token_env, else SWITCHBOARD_TOKEN when set).
        #[arg(long, value_name = "VAR")]
        token_env: Option<String>,
        /// Add an upstream server over Streamable HTTP (http://, https://) or WebSocket (ws://, wss://).
        /// Named after the URL's host and port unless NAME= is given. Repeatable.
        #[arg(long, value_name = "[NAME=]URL", value_parser = upstreams::parse_url_flag)]
        upstream: Vec<upstreams::UpstreamFlag>,
        /// Add a stdio upstream server: one string, split like a shell does (quotes, backslashes).
        /// Named after the program (or the package/script an npx, uvx, node or python launcher
        /// runs) unless NAME= is given. Repeatable.
        #[arg(long = "upstream-cmd", value_name = "[NAME=]COMMAND ARGS…", value_parser = upstreams::parse_cmd_flag)]
        upstream_cmd: Vec<upstreams::UpstreamFlag>,
        /// When tool and prompt names get the `SERVER<separator>` prefix. Overrides `[endpoint].prefix`
        /// [default: on-collision].
        #[arg(long, value_name = "MODE", value_parser = parse_prefix)]
        prefix: Option<PrefixMode>,
        /// Separator between server and tool/prompt name. Overrides `[endpoint].separator` [default: __].
        #[arg(long, value_name = "S")]
        separator: Option<String>,
    },
    /// Show the stored traces of downstream requests to the endpoint, newest first.
    Traces {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// How many to show.
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// List registered servers and their state.
    Servers {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Diagnose a thermal image with the vision → knowledge → reasoning flow.
    ///
    /// With --eval, runs the labelled evaluation set instead (real images from the thermal sample directory plus
    /// written-out scenarios) through the same vision → knowledge → reasoning steps and prints, per case and
    /// overall: recall@3 and precision@3 of the manual sections found, plan precision (share of plan steps
    /// taken from sections of the right component group) and criteria accuracy.
    Diagnose {
        /// The image (FLIR radiometric JPEG, FFF/SEQ, DJI R-JPEG or a plain image).
        #[arg(required_unless_present = "eval")]
        image: Option<PathBuf>,
        /// What the image shows: panel, board, motor-bearing, pv-module, transformer, building-envelope or other.
        /// It decides the criteria (NETA band for electrical equipment, IEC TS 62446-3 class for PV modules,
        /// none otherwise); without it, and without a context naming it, the equipment is reported unknown.
        #[arg(long, value_name = "KIND")]
        equipment: Option<String>,
        /// Run the labelled evaluation set and print recall@3, precision@3 and plan precision.
        #[arg(long, conflicts_with_all = ["image", "flow"])]
        eval: bool,
        /// Thermal sample directory for --eval (default: $SWITCHBOARD_THERMAL_DATA, else the first
        /// shared/data/thermal above the current directory).
        #[arg(long, value_name = "DIR", requires = "eval")]
        data: Option<PathBuf>,
        /// A flow file instead of the default thermal diagnosis.
        #[arg(long)]
        flow: Option<PathBuf>,
        /// Print the run record as JSON.
        #[arg(long)]
        json: bool,
        /// Emissivity override.
        #[arg(long)]
        emissivity: Option<f64>,
        /// Ambient air temperature (°C): enables the ΔT-vs-ambient criterion.
        #[arg(long)]
        ambient_c: Option<f64>,
        /// Free-text context for the repair plan (load, equipment).
        #[arg(long)]
        context: Option<String>,
        /// Largest accepted image in bytes.
        #[arg(long, default_value_t = switchboard_app::blobs::DEFAULT_MAX_BLOB)]
        max_bytes: u64,
    },
    /// Benchmark the default diagnosis flow on one image (per-node and end-to-end latency).
    BenchDiagnose {
        /// The image (use a 640×480 radiometric one, e.g. a FLIR T640 file).
        image: PathBuf,
        /// Measured runs (after one warm-up).
        #[arg(long, default_value_t = 30)]
        runs: usize,
    },
    /// Manage the knowledge base behind `search_manual`.
    Knowledge {
        #[command(subcommand)]
        action: KnowledgeAction,
    },
    /// Run one built-in MCP server standalone (vision, knowledge or reasoning).
    Server {
        /// vision, knowledge or reasoning.
        name: String,
        /// Serve on stdin/stdout.
        #[arg(long, conflicts_with_all = ["http", "ws"])]
        stdio: bool,
        /// Serve Streamable HTTP on ADDR (e.g. 127.0.0.1:7020).
        #[arg(long, value_name = "ADDR", conflicts_with = "ws")]
        http: Option<std::net::SocketAddr>,
        /// Serve WebSocket (subprotocol `mcp`) on ADDR.
        #[arg(long, value_name = "ADDR")]
        ws: Option<std::net::SocketAddr>,
        /// OpenAI-compatible or Ollama chat endpoint for the reasoning server.
        #[arg(long, env = "SWITCHBOARD_LLM_URL")]
        llm_url: Option<String>,
        /// Model for --llm-url.
        #[arg(long, env = "SWITCHBOARD_LLM_MODEL")]
        llm_model: Option<String>,
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
    /// Register a running MCP server with a router (docs/registration.md): waits for the
    /// router, registers, confirms and prints the answers.
    Register {
        /// The router's base URL (http://HOST:PORT).
        #[arg(long, value_name = "URL")]
        router: String,
        /// The name to register under.
        #[arg(long, value_name = "ID")]
        server_id: String,
        /// The server's Streamable HTTP endpoint.
        #[arg(long, value_name = "URL")]
        url: String,
        /// Claimed MCP capabilities and domain labels, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        capabilities: Vec<String>,
        /// Encodings the server answers in, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "json,sse")]
        encodings: Vec<String>,
        /// Environment variable holding the router's token (default: SWITCHBOARD_TOKEN when set).
        #[arg(long, value_name = "VAR")]
        token_env: Option<String>,
        /// Seconds to wait for the router to answer.
        #[arg(long, value_name = "SECS", default_value_t = 30)]
        wait: u64,
        /// Stay: send status reports, deregister on SIGTERM/SIGINT.
        #[arg(long)]
        keep: bool,
    },
}

pub(crate) fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,switchboard::upstream::stderr=off"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

pub(crate) async fn shutdown_signal(cancel: CancellationToken) {
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

/// Where a command finds its configuration: the global `--config` and `--db`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sources<'a> {
    /// `--config`.
    pub config: Option<&'a std::path::Path>,
    /// `--db`.
    pub db: Option<&'a std::path::Path>,
}

impl Sources<'_> {
    /// Loads the configuration without extra `mcp.json` files.
    pub fn load(&self) -> anyhow::Result<switchboard_app::config::AppConfig> {
        switchboard_app::config::load(self.config, &[], self.db)
    }
}

/// Parses the command line and runs the command; its exit status.
pub(crate) async fn run() -> ExitCode {
    let cli = parse_cli();
    let sources = Sources { config: cli.config.as_deref(), db: cli.db.as_deref() };
    match cli.command {
        Command::Serve {
            mcp_json,
            listen,
            stdio,
            open,
            token_env,
            upstream,
            upstream_cmd,
            prefix,
            separator,
        } => {
            let flags = switchboard_app::config::ServeFlags {
                listen,
                prefix,
                separator,
                upstreams: upstream.into_iter().chain(upstream_cmd).collect(),
            };
            serve::command(sources, &mcp_json, flags, serve::Modes { stdio, open }, token_env.as_deref())
                .await
        }
        Command::Traces { json, limit } => traces::command(sources, json, limit).await,
        Command::Servers { json } => servers::command(sources, json).await,
        Command::Diagnose {
            image,
            flow,
            json,
            emissivity,
            ambient_c,
            context,
            max_bytes,
            equipment,
            eval,
            data,
        } => {
            let args = diagnose::Args {
                image,
                flow,
                json,
                emissivity,
                ambient_c,
                context,
                max_bytes,
                equipment,
                eval,
                data,
            };
            diagnose::command(sources, args).await
        }
        Command::BenchDiagnose { image, runs } => diagnose::bench_command(sources, &image, runs).await,
        Command::Knowledge { action } => knowledge::command(sources, action).await,
        Command::Server { name, stdio, http, ws, llm_url, llm_model } => {
            server::command(&name, stdio, http, ws, llm_url, llm_model).await
        }
        Command::Probe { json, timeout, url, command } => probe::command(json, timeout, url, command).await,
        Command::Register { router, server_id, url, capabilities, encodings, token_env, wait, keep } => {
            let args =
                register::Args { router, server_id, url, capabilities, encodings, token_env, wait, keep };
            register::command(args).await
        }
    }
}

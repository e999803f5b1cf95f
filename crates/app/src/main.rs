//! The `switchboard` command.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use switchboard_app::{builtins, config, out, outln, probe, serve, servers, upstreams};
use switchboard_router::federation::PrefixMode;
use tokio_util::sync::CancellationToken;

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
enum KnowledgeAction {
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
        /// WebSocket) and blobs on ADDR (e.g. 127.0.0.1:7010; port 0 picks one and prints it).
        #[arg(long, value_name = "ADDR")]
        listen: Option<std::net::SocketAddr>,
        /// Serve one MCP client on stdin/stdout, alone or next to --listen (newline-delimited
        /// JSON-RPC; logs go to stderr); the process exits when stdin closes.
        #[arg(long)]
        stdio: bool,
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

async fn run_server(
    name: &str,
    stdio: bool,
    http: Option<std::net::SocketAddr>,
    ws: Option<std::net::SocketAddr>,
    llm_url: Option<String>,
    llm_model: Option<String>,
    cancel: CancellationToken,
) -> anyhow::Result<()> {
    use switchboard_servers::serve;
    let b = builtins::Builtins::new(&builtins::BuiltinsConfig { llm_url, llm_model, ..Default::default() })
        .await?;
    macro_rules! run {
        ($h:expr) => {{
            if stdio {
                serve::serve_stdio($h, cancel).await?;
            } else {
                let serving = match (http, ws) {
                    (Some(a), _) => serve::serve_http($h, a, cancel).await?,
                    (None, Some(a)) => serve::serve_ws($h, a, cancel).await?,
                    (None, None) => unreachable!("checked by the caller"),
                };
                outln!("listening on {}", serving.url());
                serving.wait().await?;
            }
        }};
    }
    match name {
        "vision" => run!(b.vision()),
        "knowledge" => run!(b.knowledge()),
        "reasoning" => run!(b.reasoning()),
        other => anyhow::bail!("no built-in server named {other:?} (choose {})", builtins::NAMES.join(", ")),
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = parse_cli();
    match cli.command {
        Command::Serve { mcp_json, listen, stdio, token_env, upstream, upstream_cmd, prefix, separator } => {
            init_tracing();
            let flags = config::ServeFlags {
                listen,
                prefix,
                separator,
                upstreams: upstream.into_iter().chain(upstream_cmd).collect(),
            };
            let cfg = config::load(cli.config.as_deref(), &mcp_json, cli.db.as_deref()).and_then(|mut c| {
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
            let token = match switchboard_app::auth::BearerToken::from_env(
                token_env.as_deref().or(cfg.token_env.as_deref()),
            ) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("switchboard: {e}");
                    return ExitCode::from(2);
                }
            };
            let cancel = CancellationToken::new();
            tokio::spawn(shutdown_signal(cancel.clone()));
            let options = serve::ServeOptions { listen: cfg.endpoint.listen, stdio, token };
            let ok = match serve::run(cfg, options, cancel).await {
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
        Command::Traces { json, limit } => {
            let result = async {
                let cfg = config::load(cli.config.as_deref(), &[], cli.db.as_deref())?;
                let store = switchboard_store::Store::open(&switchboard_store::StoreConfig {
                    path: cfg.db_path.clone(),
                    ..Default::default()
                })
                .await?;
                let rows = store.traces(limit).await;
                store.close().await;
                anyhow::Ok(rows?)
            }
            .await;
            match result {
                Ok(rows) if json => {
                    outln!("{}", serde_json::to_string_pretty(&rows).unwrap_or_default());
                    ExitCode::SUCCESS
                }
                Ok(rows) => {
                    out!("{}", switchboard_app::traces::render(&rows));
                    ExitCode::SUCCESS
                }
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
                    outln!("{}", serde_json::to_string_pretty(&rows).unwrap_or_default());
                    ExitCode::SUCCESS
                }
                Ok(rows) => {
                    out!("{}", servers::render(&rows));
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("switchboard: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
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
            if std::env::var_os("RUST_LOG").is_some() {
                init_tracing();
            }
            if eval {
                return match switchboard_app::diagnose::eval(data.as_deref()).await {
                    Ok(report) => {
                        if json {
                            println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
                        } else {
                            print!("{}", report.render());
                        }
                        if report.failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
                    }
                    Err(e) => {
                        eprintln!("switchboard: {e:#}");
                        ExitCode::FAILURE
                    }
                };
            }
            let Some(image) = image else {
                eprintln!("switchboard: diagnose needs an IMAGE (or --eval)");
                return ExitCode::FAILURE;
            };
            let mut extra = serde_json::Map::new();
            if let Some(e) = equipment {
                extra.insert("equipment".into(), e.into());
            }
            if let Some(e) = emissivity {
                extra.insert("emissivity".into(), e.into());
            }
            if let Some(a) = ambient_c {
                extra.insert("ambient_c".into(), a.into());
            }
            if let Some(c) = context {
                extra.insert("context".into(), c.into());
            }
            let opts = switchboard_app::diagnose::DiagnoseOptions {
                image,
                flow,
                extra,
                max_bytes: Some(max_bytes),
                progress: !json,
            };
            let result = async {
                let cfg = config::load(cli.config.as_deref(), &[], cli.db.as_deref())?;
                let env = switchboard_app::diagnose::Env::start(&cfg, max_bytes).await?;
                let record = env.diagnose(&opts).await;
                env.shutdown().await;
                record
            }
            .await;
            match result {
                Ok(record) => {
                    if json {
                        outln!("{}", serde_json::to_string_pretty(&record).unwrap_or_default());
                    } else {
                        out!("{}", switchboard_app::diagnose::render(&record));
                    }
                    if record.outcome == switchboard_flow::RunOutcome::Ok {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::FAILURE
                    }
                }
                Err(e) => {
                    eprintln!("switchboard: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::BenchDiagnose { image, runs } => {
            let result = async {
                let cfg = config::load(cli.config.as_deref(), &[], cli.db.as_deref())?;
                let env =
                    switchboard_app::diagnose::Env::start(&cfg, switchboard_app::blobs::DEFAULT_MAX_BLOB)
                        .await?;
                let r = switchboard_app::diagnose::bench(&env, &image, runs.max(1)).await;
                env.shutdown().await;
                r
            }
            .await;
            match result {
                Ok(r) => {
                    outln!("runs            {}", r.runs);
                    for (node, p50, p95) in &r.nodes {
                        outln!("node {node:<10} p50 {p50:>7.1} ms   p95 {p95:>7.1} ms");
                    }
                    outln!("end to end      p50 {:>7.1} ms   p95 {:>7.1} ms", r.end_to_end.0, r.end_to_end.1);
                    outln!(
                        "baseline        p50 {:>7.1} ms   (thermal library alone, same image, same run)",
                        r.baseline_ms
                    );
                    outln!("ratio           {:.2}× baseline", r.ratio);
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("switchboard: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Knowledge { action } => {
            let result = async {
                let cfg = config::load(cli.config.as_deref(), &[], cli.db.as_deref())?;
                let kb = builtins::open_knowledge(&builtins::knowledge_db_beside(&cfg.db_path)).await?;
                match action {
                    KnowledgeAction::Import { paths } => {
                        let report = kb.import_paths(&paths).await;
                        outln!(
                            "added {}, replaced {}, {} sections in total",
                            report.added,
                            report.replaced,
                            kb.len().await?
                        );
                        for e in &report.errors {
                            eprintln!("error: {e}");
                        }
                        anyhow::ensure!(
                            report.errors.is_empty(),
                            "{} file(s) could not be imported",
                            report.errors.len()
                        );
                    }
                    KnowledgeAction::Search { query, part, kind, top_k } => {
                        let mut q =
                            switchboard_servers::knowledge::index::SearchQuery::new(query).top_k(top_k);
                        if let Some(p) = part {
                            q = q.part_number(p);
                        }
                        if let Some(k) = kind {
                            q = q.component_kind(k);
                        }
                        for hit in kb.search(&q).await? {
                            outln!("{:.3}  {}  {} ({})", hit.score, hit.id, hit.title, hit.kind);
                        }
                    }
                }
                anyhow::Ok(())
            }
            .await;
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("switchboard: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Server { name, stdio, http, ws, llm_url, llm_model } => {
            if !stdio && http.is_none() && ws.is_none() {
                eprintln!("switchboard: choose --stdio, --http ADDR or --ws ADDR");
                return ExitCode::from(2);
            }
            if std::env::var_os("RUST_LOG").is_some() || !stdio {
                init_tracing();
            }
            let cancel = CancellationToken::new();
            tokio::spawn(shutdown_signal(cancel.clone()));
            match run_server(&name, stdio, http, ws, llm_url, llm_model, cancel).await {
                Ok(()) => ExitCode::SUCCESS,
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
                    outln!("{}", serde_json::to_string_pretty(&probe::to_json(&r)).unwrap_or_default());
                    ExitCode::SUCCESS
                }
                Ok(r) => {
                    out!("{}", probe::render(&r));
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

//! `switchboard server NAME`: one built-in MCP server (vision, knowledge or reasoning)
//! standalone, on stdio, Streamable HTTP or WebSocket.

use std::process::ExitCode;

use switchboard_app::builtins;
use tokio_util::sync::CancellationToken;

/// Runs `switchboard server`.
pub(crate) async fn command(
    name: &str,
    stdio: bool,
    http: Option<std::net::SocketAddr>,
    ws: Option<std::net::SocketAddr>,
    llm_url: Option<String>,
    llm_model: Option<String>,
) -> ExitCode {
    if !stdio && http.is_none() && ws.is_none() {
        eprintln!("switchboard: choose --stdio, --http ADDR or --ws ADDR");
        return ExitCode::from(2);
    }
    if std::env::var_os("RUST_LOG").is_some() || !stdio {
        super::init_tracing();
    }
    let cancel = CancellationToken::new();
    tokio::spawn(super::shutdown_signal(cancel.clone()));
    match run_server(name, stdio, http, ws, llm_url, llm_model, cancel).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchboard: {e:#}");
            ExitCode::FAILURE
        }
    }
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

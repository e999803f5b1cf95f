//! `switchboard probe`: connect to one MCP server as the router would and print the
//! handshake and catalog ([`switchboard_app::probe`] does the connecting).

use std::process::ExitCode;
use std::time::Duration;

use switchboard_app::probe;

/// Runs `switchboard probe`.
pub(crate) async fn command(json: bool, timeout: u64, url: Option<String>, command: Vec<String>) -> ExitCode {
    if std::env::var_os("RUST_LOG").is_some() {
        super::init_tracing();
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

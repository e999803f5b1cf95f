//! `switchboard-desktop`: Switchboard as a desktop app — the embedded router and its control
//! panel in a native window, a tray icon with the router's status, one instance per user.
//!
//! The shell is thin on purpose (`docs/decisions.md`, "The desktop shell"): everything the
//! panel shows comes from the router's own HTTP API, exactly as in a browser tab, so this
//! crate only starts and stops the router ([`embedded`]), opens and remembers the window
//! ([`window`]), keeps the tray current ([`tray`]) and offers the native file dialog
//! ([`picker`]). It is a workspace member outside `default-members`: the everyday build never
//! compiles WebKitGTK bindings.
//!
//! Usage: `switchboard-desktop [--config FILE] [--db FILE]` (env `SWITCHBOARD_CONFIG`,
//! `SWITCHBOARD_DB`), the same configuration `switchboard serve` reads.

mod embedded;
mod locale;
mod picker;
mod shell;
mod tray;
mod window;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

/// What the command line and the environment choose.
#[derive(Debug, Default, Clone)]
pub struct Args {
    /// The configuration file (`--config`, `SWITCHBOARD_CONFIG`); `None`: the embedded default.
    pub config: Option<PathBuf>,
    /// The router's database (`--db`, `SWITCHBOARD_DB`); `None`: the configured one.
    pub db: Option<PathBuf>,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        config: std::env::var_os("SWITCHBOARD_CONFIG").filter(|v| !v.is_empty()).map(PathBuf::from),
        db: std::env::var_os("SWITCHBOARD_DB").filter(|v| !v.is_empty()).map(PathBuf::from),
    };
    let mut it = std::env::args_os().skip(1);
    while let Some(arg) = it.next() {
        match arg.to_str() {
            Some("--config") => args.config = Some(it.next().context("--config needs a file")?.into()),
            Some("--db") => args.db = Some(it.next().context("--db needs a file")?.into()),
            Some("-h" | "--help") => {
                println!("usage: switchboard-desktop [--config FILE] [--db FILE]");
                std::process::exit(0);
            }
            // Launchers add their own (a desktop entry's field codes, a WebDriver's flags).
            _ => eprintln!(
                "switchboard-desktop: ignoring the argument {arg:?} (usage: switchboard-desktop [--config FILE] [--db FILE])"
            ),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    locale::ensure_nameable();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = parse_args().and_then(shell::run);
    match result {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("switchboard-desktop: {e:#}");
            ExitCode::FAILURE
        }
    }
}

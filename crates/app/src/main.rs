//! The `switchboard` command: parses the command line and runs one command ([`cli`]).
//!
//! The command code is private to the binary so the library stays composition: the desktop
//! shell links `switchboard_app` without clap, terminal output or `process::exit`.

mod cli;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    cli::run().await
}

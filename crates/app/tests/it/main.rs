//! End-to-end tests of the app: the router started through [`switchboard_app::App`] by the
//! one [`harness`] in front of real upstreams, and the `switchboard` command (`probe`,
//! `serve`, `diagnose`, the conformance suite's client scenarios) as a spawned binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod admin;
mod app;
mod bridging;
mod cli;
mod conformance;
mod diagnose;
mod diagnosis_api;
mod downstream;
mod edge;
mod endpoint;
mod harness;
mod limits;
mod notifications;
mod registration;
mod reload;
mod routing;
mod scripted;
mod security;
mod serve_flags;
mod sessions;

pub use switchboard_fixtures::peers::{everything_js, node, node_dir, repo_root};

/// The binary under test.
pub fn switchboard() -> &'static str {
    env!("CARGO_BIN_EXE_switchboard")
}

/// Reads `out` (a child's stdout or stderr) up to its `listening on URL` line and returns the
/// URL; the rest keeps being read in the background so the child never blocks on a full pipe.
pub async fn listening_url<R>(out: R) -> String
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(out).lines();
    let url = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(u) = line.strip_prefix("listening on ") {
                return u.trim().to_owned();
            }
        }
        panic!("exited before printing its address");
    })
    .await
    .expect("listening in time");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    url
}

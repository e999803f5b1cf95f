//! `switchboard traces`: the stored traces of downstream requests, newest first.
//!
//! Reads the store only; the router need not run.

use std::process::ExitCode;

use super::Sources;

/// Runs `switchboard traces`.
pub(crate) async fn command(sources: Sources<'_>, json: bool, limit: u32) -> ExitCode {
    let result = async {
        let cfg = sources.load()?;
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

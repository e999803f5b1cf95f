//! `switchboard servers`: the registered servers and their state, as the store knows them.

use std::process::ExitCode;

use serde_json::{Value, json};
use switchboard_store::Store;

use super::Sources;

/// Runs `switchboard servers`.
pub(crate) async fn command(sources: Sources<'_>, json: bool) -> ExitCode {
    let result = async {
        let cfg = sources.load()?;
        let store = switchboard_store::Store::open(&switchboard_store::StoreConfig {
            path: cfg.db_path.clone(),
            ..Default::default()
        })
        .await?;
        let rows = rows(&store).await?;
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
            out!("{}", render(&rows));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("switchboard: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// One row of the listing.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Row {
    /// Server id.
    pub server_id: String,
    /// Name.
    pub name: String,
    /// Transport.
    pub transport: String,
    /// State.
    pub state: String,
    /// Why.
    pub reason: Option<String>,
    /// Era.
    pub era: Option<String>,
    /// Tools in the last snapshot.
    pub tools: Option<usize>,
    /// Quarantined tools in the last snapshot.
    pub quarantined: Option<usize>,
    /// Last handshake: when, and the error if it failed.
    pub last_handshake: Option<Value>,
}

/// Reads the rows from the store.
async fn rows(store: &Store) -> anyhow::Result<Vec<Row>> {
    let mut out = Vec::new();
    for s in store.servers().await? {
        let snap = store.latest_tool_snapshot(&s.server_id).await?;
        let hs = store.handshakes(Some(&s.server_id), 1).await?.into_iter().next();
        out.push(Row {
            tools: snap.as_ref().and_then(|x| x.tools.as_array().map(Vec::len)),
            quarantined: snap.as_ref().and_then(|x| x.quarantined.as_array().map(Vec::len)),
            last_handshake: hs.map(
                |h| json!({"at_ms": h.at_ms, "era": h.era, "version": h.chosen_version, "error": h.error}),
            ),
            server_id: s.server_id,
            name: s.name,
            transport: s.transport,
            state: s.state,
            reason: s.state_reason,
            era: s.era,
        });
    }
    Ok(out)
}

/// Renders rows as a table.
fn render(rows: &[Row]) -> String {
    if rows.is_empty() {
        return "no servers registered (add [servers.NAME] tables to the config and run `switchboard serve`)\n".into();
    }
    let mut out = format!(
        "{:<20} {:<16} {:<10} {:<12} {:<7} {:>5}  {}\n",
        "NAME", "ID", "VIA", "STATE", "ERA", "TOOLS", "REASON"
    );
    for r in rows {
        let tools = match (r.tools, r.quarantined) {
            (Some(t), Some(q)) if q > 0 => format!("{t}+{q}q"),
            (Some(t), _) => t.to_string(),
            _ => "-".into(),
        };
        out += &format!(
            "{:<20} {:<16} {:<10} {:<12} {:<7} {:>5}  {}\n",
            r.name,
            r.server_id,
            r.transport,
            r.state,
            r.era.as_deref().unwrap_or("-"),
            tools,
            r.reason.as_deref().unwrap_or("")
        );
    }
    out
}

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
    /// Its replica group (declared, or detected from its last successful handshake and tool
    /// snapshot), when it shares one with other servers or declared it.
    pub group: Option<String>,
}

/// Reads the rows from the store, with the replica groups the router would form from what
/// it stored (see `switchboard_router::schedule::groups`).
async fn rows(store: &Store) -> anyhow::Result<Vec<Row>> {
    use switchboard_router::schedule::groups::{self, Member, Seen};
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for s in store.servers().await? {
        let snap = store.latest_tool_snapshot(&s.server_id).await?;
        let recent = store.handshakes(Some(&s.server_id), 20).await?;
        let hs = recent.first().cloned();
        let ok = recent.iter().find(|h| h.error.is_none());
        let raw: Vec<Value> = snap.as_ref().and_then(|x| x.tools.as_array().cloned()).unwrap_or_default();
        let (tools, quarantined) = switchboard_router::schema::compile_tools(&raw);
        let catalog = switchboard_router::catalog::Catalog { tools, quarantined, ..Default::default() };
        let signature =
            ok.and_then(|h| groups::signature(&h.server_info, h.chosen_version.as_deref(), &catalog));
        seen.push(Seen {
            member: Member {
                server: s.name.clone(),
                state: switchboard_router::ServerState::Ready,
                reason: String::new(),
                labels: Vec::new(),
                catalog: std::sync::Arc::new(catalog),
                load: std::sync::Arc::default(),
            },
            declared: s.config.get("group").and_then(Value::as_str).map(str::to_owned),
            signature,
        });
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
            group: None,
        });
    }
    for g in groups::form(seen, true) {
        if g.formed == groups::Formed::Single {
            continue;
        }
        for m in &g.members {
            if let Some(r) = out.iter_mut().find(|r| r.name == m.server) {
                r.group = Some(g.name.clone());
            }
        }
    }
    Ok(out)
}

/// Renders rows as a table.
fn render(rows: &[Row]) -> String {
    if rows.is_empty() {
        return "no servers registered (add [servers.NAME] tables to the config and run `switchboard serve`)\n".into();
    }
    let mut out = format!(
        "{:<20} {:<16} {:<12} {:<10} {:<12} {:<7} {:>5}  {}\n",
        "NAME", "ID", "GROUP", "VIA", "STATE", "ERA", "TOOLS", "REASON"
    );
    for r in rows {
        let tools = match (r.tools, r.quarantined) {
            (Some(t), Some(q)) if q > 0 => format!("{t}+{q}q"),
            (Some(t), _) => t.to_string(),
            _ => "-".into(),
        };
        out += &format!(
            "{:<20} {:<16} {:<12} {:<10} {:<12} {:<7} {:>5}  {}\n",
            r.name,
            r.server_id,
            r.group.as_deref().unwrap_or("-"),
            r.transport,
            r.state,
            r.era.as_deref().unwrap_or("-"),
            tools,
            r.reason.as_deref().unwrap_or("")
        );
    }
    out
}

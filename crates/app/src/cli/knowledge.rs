//! `switchboard knowledge import|search`: the knowledge base behind `search_manual`, in the
//! file beside the router's database.

use std::process::ExitCode;

use switchboard_app::builtins;

use super::{KnowledgeAction, Sources};

/// Runs `switchboard knowledge ACTION`.
pub(crate) async fn command(sources: Sources<'_>, action: KnowledgeAction) -> ExitCode {
    let result = async {
        let cfg = sources.load()?;
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
                let mut q = switchboard_servers::knowledge::index::SearchQuery::new(query).top_k(top_k);
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

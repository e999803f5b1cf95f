//! The built-in servers (vision, knowledge, reasoning), run in-process by default.
//!
//! Each connection gets its own in-memory pipe to a fresh session of the server's
//! handler, so the registry treats them exactly like external servers: handshake,
//! catalog, schema checks, events.

use std::path::PathBuf;
use std::sync::Arc;

use switchboard_router::registry::BuiltinConnector;
use switchboard_servers::knowledge::{KnowledgeBase, server::KnowledgeServer};
use switchboard_servers::reasoning::{LlmConfig, ReasoningConfig, ReasoningServer};
use switchboard_servers::serve::builtin_in_memory;
use switchboard_servers::vision::{VisionConfig, VisionServer};
use switchboard_transport::pipe::PipeUpstream;
use switchboard_transport::{Tap, Upstream};
use tokio_util::sync::CancellationToken;

/// The names `builtin = "…"` accepts.
pub const NAMES: &[&str] = &["vision", "knowledge", "reasoning"];

/// Options of the built-in servers.
#[derive(Debug, Clone, Default)]
pub struct BuiltinsConfig {
    /// Extra knowledge files or directories (Markdown or JSON) imported at start.
    pub knowledge_import: Vec<PathBuf>,
    /// Optional LLM endpoint for the reasoning server (OpenAI-compatible or Ollama).
    pub llm_url: Option<String>,
    /// Model name for the LLM endpoint.
    pub llm_model: Option<String>,
}

/// The three handlers, ready to be connected.
#[derive(Clone)]
pub struct Builtins {
    vision: VisionServer,
    knowledge: KnowledgeServer,
    reasoning: ReasoningServer,
}

impl Builtins {
    /// Builds the handlers (loads the embedded knowledge corpus plus any imports).
    pub async fn new(config: &BuiltinsConfig) -> anyhow::Result<Self> {
        let kb = KnowledgeBase::embedded().await?;
        if !config.knowledge_import.is_empty() {
            let report = kb.import_paths(&config.knowledge_import).await;
            for e in &report.errors {
                tracing::warn!("knowledge import: {e}");
            }
        }
        let llm = config.llm_url.as_ref().map(|url| {
            LlmConfig::new(url.clone(), config.llm_model.clone().unwrap_or_else(|| "llama3.1".into()))
        });
        Ok(Builtins {
            vision: VisionServer::new(VisionConfig::default()),
            knowledge: KnowledgeServer::new(kb),
            reasoning: ReasoningServer::new(ReasoningConfig { llm }),
        })
    }

    /// The vision handler.
    pub fn vision(&self) -> VisionServer {
        self.vision.clone()
    }

    /// The knowledge handler.
    pub fn knowledge(&self) -> KnowledgeServer {
        self.knowledge.clone()
    }

    /// The reasoning handler.
    pub fn reasoning(&self) -> ReasoningServer {
        self.reasoning.clone()
    }
}

fn pipe(stream: tokio::io::DuplexStream, tap: Tap, cancel: CancellationToken) -> Arc<dyn Upstream> {
    let (r, w) = tokio::io::split(stream);
    PipeUpstream::new(r, w, tap, cancel)
}

impl BuiltinConnector for Builtins {
    fn connect(
        &self,
        server: &str,
        tap: Tap,
        cancel: CancellationToken,
    ) -> Result<Arc<dyn Upstream>, String> {
        let stream = match server {
            "vision" => builtin_in_memory(self.vision.clone(), cancel.clone()).0,
            "knowledge" => builtin_in_memory(self.knowledge.clone(), cancel.clone()).0,
            "reasoning" => builtin_in_memory(self.reasoning.clone(), cancel.clone()).0,
            other => {
                return Err(format!(
                    "no built-in server named {other:?} (built-in servers: {})",
                    NAMES.join(", ")
                ));
            }
        };
        Ok(pipe(stream, tap, cancel))
    }
}

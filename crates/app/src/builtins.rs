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
use switchboard_servers::vision::{ImageSourceConfig, VisionConfig, VisionServer};
use switchboard_transport::pipe::PipeUpstream;
use switchboard_transport::{Tap, Upstream};
use tokio_util::sync::CancellationToken;

/// The names `builtin = "…"` accepts.
pub const NAMES: &[&str] = &["vision", "knowledge", "reasoning"];

/// Options of the built-in servers.
#[derive(Debug, Clone, Default)]
pub struct BuiltinsConfig {
    /// The knowledge base file (`None`: in memory, the embedded corpus only).
    pub knowledge_db: Option<PathBuf>,
    /// Extra knowledge files or directories (Markdown or JSON) imported at start.
    pub knowledge_import: Vec<PathBuf>,
    /// Optional LLM endpoint for the reasoning server (OpenAI-compatible or Ollama).
    pub llm_url: Option<String>,
    /// Model name for the LLM endpoint.
    pub llm_model: Option<String>,
    /// The blob store directory the vision server reads blob references from, without HTTP. `None`: the
    /// `blobs` directory beside `knowledge_db` when that is set (where `serve` and `diagnose` keep it), else
    /// no blob store (a standalone server takes images inline).
    pub blob_dir: Option<PathBuf>,
    /// Hosts, addresses and CIDR blocks the vision server may fetch other http(s) images from (empty: none).
    pub image_allow: Vec<String>,
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
        let kb = match &config.knowledge_db {
            Some(path) => open_knowledge(path).await?,
            None => KnowledgeBase::embedded().await?,
        };
        if !config.knowledge_import.is_empty() {
            let report = kb.import_paths(&config.knowledge_import).await;
            for e in &report.errors {
                tracing::warn!("knowledge import: {e}");
            }
        }
        let llm = config.llm_url.as_ref().map(|url| {
            LlmConfig::new(url.clone(), config.llm_model.clone().unwrap_or_else(|| "llama3.1".into()))
        });
        let blob_dir = config.blob_dir.clone().or_else(|| {
            config
                .knowledge_db
                .as_deref()
                .map(|k| k.parent().unwrap_or(std::path::Path::new(".")).join("blobs"))
        });
        let http_allow = switchboard_servers::vision::source::allow::parse_rules(&config.image_allow)
            .map_err(|e| anyhow::anyhow!("vision image allowlist: {e}"))?;
        let image_source = ImageSourceConfig { blob_dir, http_allow, ..ImageSourceConfig::default() };
        Ok(Builtins {
            vision: VisionServer::new(VisionConfig { image_source }),
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

/// Opens the knowledge base file, seeding it with the embedded corpus when it is new.
/// Sections imported later (`switchboard knowledge import`) persist in it.
pub async fn open_knowledge(path: &std::path::Path) -> anyhow::Result<KnowledgeBase> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let kb = KnowledgeBase::open_path(path).await?;
    if kb.is_empty().await? {
        let sections = switchboard_servers::knowledge::embedded::sections()?;
        kb.import_sections(std::path::Path::new("embedded"), &sections).await?;
    }
    Ok(kb)
}

/// The blob store directory beside the router's database (the one `serve` and `diagnose` open).
pub fn blob_dir_beside(db: &std::path::Path) -> PathBuf {
    db.parent().unwrap_or(std::path::Path::new(".")).join("blobs")
}

/// The knowledge base file beside the router's database.
pub fn knowledge_db_beside(db: &std::path::Path) -> PathBuf {
    db.parent().unwrap_or(std::path::Path::new(".")).join("knowledge.db")
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

//! The reasoning server behind `generate_repair_steps`: the last node of the diagnosis flow.
//!
//! [`synth`] turns the vision report and the manual sections into a repair plan by fixed, documented rules (the
//! default, reproducible and testable); [`llm`] optionally lets a language model rewrite the prose through an
//! OpenAI-compatible or Ollama endpoint, validated and merged so that measurements, severity and safety cannot be
//! changed by it; [`server`] wraps both as an MCP server. The split keeps the deterministic path free of I/O.

pub mod llm;
pub mod server;
pub mod synth;

pub use llm::{LlmApi, LlmConfig};
pub use server::{ReasoningConfig, ReasoningServer, RepairArgs};
pub use synth::RepairPlan;

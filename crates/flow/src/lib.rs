//! Switchboard's graph engine: flows of tool-calling nodes, such as the three-node thermal diagnosis
//! (vision → knowledge → reasoning).
//!
//! A flow file (TOML or JSON, see [`FlowFile`]) names nodes bound to tools by name or capability, argument
//! templates that read the run input and earlier outputs (`"$nodes.vision.output"`), and edges with
//! conditions. [`Flow::load`] checks all of it up front: unknown nodes, cycles, unresolvable tools, references
//! to nodes that do not run first, and arguments that cannot satisfy the tool's input schema. [`Engine::run`]
//! then runs it with per-node timeouts, retries and cancellation, streams [`RunEvent`]s (to the caller's
//! channel and to an engine-wide [`RunObserver`], such as the app's event bus) and returns a
//! [`RunRecord`], which a [`RunSink`] (e.g. [`StoreSink`]) persists.
//!
//! The crate does not depend on the router: tools are reached through [`ToolInvoker`], which the app
//! implements. That keeps flows testable against fakes and keeps tool naming (namespaces, capability
//! labels) the router's business.

pub mod condition;
pub mod engine;
pub mod error;
pub mod flow;
pub mod invoker;
pub mod record;
pub mod reference;
pub mod schema;
pub mod sink;
pub mod template;

pub use condition::When;
pub use engine::{CANCEL_GRACE, Engine, RunObserver, RunOptions};
pub use error::{FlowError, InvokeError, Issue};
pub use flow::{
    DEFAULT_TIMEOUT_MS, EdgeFile, Flow, FlowFile, Node, NodeFile, RetryFile, RetryOn, RetryPolicy,
};
pub use invoker::{ProgressSink, ToolBinding, ToolInfo, ToolInvoker, ToolOutput};
pub use record::{NodeOutcome, NodeRecord, RunEvent, RunOutcome, RunRecord};
pub use sink::{RunSink, SinkError, StoreSink};
pub use tokio_util::sync::CancellationToken;

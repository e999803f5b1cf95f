//! Switchboard's persistence: the router's registry of upstream servers, snapshots of what they offer, and
//! the log of every handshake, in one SQLite file through sqlx.
//!
//! It also keeps the flow engine's runs (one row per run, one per node of it), so a diagnosis can be
//! inspected and compared after the fact, and a bounded log of the requests downstream clients sent to the
//! federated endpoint (traces).
//!
//! The boundary exists so that nothing else in the workspace writes SQL: the router codes against [`Store`]
//! and plain record types, and the schema (embedded migrations) can change, or move to PostgreSQL for
//! scale-out, behind this API. One module per table; [`pool`] owns how the file is opened and checked.
//!
//! Timestamps are unix milliseconds (`i64`); JSON columns hold `serde_json` text.

pub mod error;
pub mod handshakes;
pub mod pool;
pub mod runs;
pub mod servers;
pub mod tools;
pub mod traces;

pub use error::Error;
pub use handshakes::{HANDSHAKES_KEPT, HandshakeRecord};
pub use pool::{Store, StoreConfig};
pub use runs::{RUNS_KEPT, StoredRun, StoredRunNode};
pub use servers::ServerRecord;
pub use tools::{TOOL_SNAPSHOTS_KEPT, ToolSnapshot};
pub use traces::{TRACES_KEPT, TraceRecord};

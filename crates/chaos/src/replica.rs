//! One replica's shared state: its id and the store, counters, faults and load meter that the
//! MCP handler, the HTTP gate, the control API and the registration client all work on.

use std::sync::Arc;

use crate::counters::Counters;
use crate::faults::Faults;
use crate::load::LoadMeter;
use crate::register::{RegistrationStatus, ReplicaView};
use crate::store::Store;

/// Name every replica gives itself in `serverInfo` (never the replica id: replicas must look
/// like instances of one server).
pub const SERVER_NAME: &str = "chaos";
/// Version in `serverInfo`, the same for every replica of a build.
pub const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The state of one replica (shared behind an `Arc`).
#[derive(Debug, Default)]
pub struct Replica {
    /// The replica id (`--replica-id`), in results and in the control API only.
    pub id: String,
    /// The key/value store.
    pub store: Store,
    /// Execution counters.
    pub counters: Counters,
    /// The faults.
    pub faults: Faults,
    /// The load meter.
    pub load: LoadMeter,
    /// Where self-registration stands.
    pub registration: Arc<RegistrationStatus>,
}

impl Replica {
    /// A healthy replica named `id`.
    pub fn new(id: String) -> Arc<Self> {
        Arc::new(Self { id, ..Self::default() })
    }
}

impl Replica {
    /// What the registration client needs.
    pub fn registration_view(&self) -> ReplicaView {
        ReplicaView {
            id: self.id.clone(),
            server: SERVER_NAME,
            faults: self.faults.clone(),
            load: self.load.clone(),
            status: self.registration.clone(),
        }
    }
}

/// A random replica id: `chaos-` and 8 hex digits.
pub fn random_id() -> String {
    let mut bytes = [0u8; 4];
    if getrandom::fill(&mut bytes).is_err() {
        bytes = std::process::id().to_le_bytes();
    }
    format!("chaos-{:08x}", u32::from_le_bytes(bytes))
}

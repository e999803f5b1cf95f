//! The crate's error type: what can stop a replica from starting. Protocol errors are not here:
//! they are JSON-RPC data sent to the caller; fault refusals are HTTP answers.

use std::net::SocketAddr;

/// Why a replica could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The listen address could not be bound.
    #[error("cannot bind {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The initial faults were refused.
    #[error("initial faults: {0}")]
    Faults(#[source] crate::faults::FaultError),
    /// The registration client could not be built.
    #[error("cannot start the registration client: {0}")]
    Registration(#[from] crate::register::RegisterError),
}

//! Registry errors.

/// What can go wrong while configuring or running the registry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration file could not be parsed or is invalid.
    #[error("{file}: {message}")]
    Config {
        /// The file (or "flags") the configuration came from.
        file: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// Two servers with the same name.
    #[error("server name {name:?} is defined twice ({first} and {second}); rename one of them")]
    DuplicateName {
        /// The name.
        name: String,
        /// Where the first definition came from.
        first: String,
        /// Where the second definition came from.
        second: String,
    },
    /// A server of that name is already registered (or being added).
    #[error(
        "a server named {name:?} already exists (from {existing}); remove it first or choose another name"
    )]
    AlreadyExists {
        /// The name.
        name: String,
        /// Where the registered server came from.
        existing: String,
    },
    /// No server of that id or name is registered.
    #[error("no server named {name:?}")]
    UnknownServer {
        /// The id or name asked for.
        name: String,
    },
    /// The server has no live connection.
    #[error("server {server:?} is not connected ({state}: {reason})")]
    NotConnected {
        /// The server's name.
        server: String,
        /// Its state.
        state: &'static str,
        /// Why, as callers may see it (no stderr).
        reason: String,
    },
    /// Listing a server's catalog failed.
    #[error("listing the catalog of server {server:?} failed: {reason}")]
    Refresh {
        /// The server's name.
        server: String,
        /// Why.
        reason: String,
    },
    /// Every connection of its own a server's calls may hold is busy, and none freed up in time
    /// (see [`crate::Registry::client_for_call`]).
    #[error(
        "server {server:?} already has {limit} calls in flight that may ask questions, each on a connection of its own; none finished within {waited_ms} ms, try again later"
    )]
    Busy {
        /// The server's name.
        server: String,
        /// Connections of their own allowed per server.
        limit: usize,
        /// How long the call waited.
        waited_ms: u64,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] switchboard_store::Error),
}

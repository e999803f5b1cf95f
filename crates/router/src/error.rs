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
    /// The store failed.
    #[error(transparent)]
    Store(#[from] switchboard_store::Error),
}

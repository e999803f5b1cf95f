//! The crate's error type: one enum whose variants carry enough context (file, line, section, operation) for an
//! operator to fix the input without reading the code.

use std::path::PathBuf;

/// Errors raised by the built-in servers.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A knowledge file is not in the expected Markdown format.
    #[error("{}:{line}: {message}", path.display())]
    Parse {
        /// File (or embedded name) being parsed.
        path: PathBuf,
        /// 1-based line number of the offending line.
        line: usize,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A JSON knowledge file is not valid JSON or does not have the section shape.
    #[error("{}:{line}:{column}: invalid knowledge json: {message}", path.display())]
    Json {
        /// File being parsed.
        path: PathBuf,
        /// 1-based line reported by the JSON parser.
        line: usize,
        /// 1-based column reported by the JSON parser.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A section parsed from JSON is syntactically valid but breaks a rule (missing id, bad id, …).
    #[error("{}: section #{index}: {message}", path.display())]
    InvalidSection {
        /// File being imported.
        path: PathBuf,
        /// 0-based position of the section in the JSON array.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// A file or directory could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file given to the importer is neither Markdown nor JSON.
    #[error("unsupported knowledge file {}: expected a .md or .json file", path.display())]
    UnsupportedFile {
        /// The rejected path.
        path: PathBuf,
    },
    /// A search was asked with no text and no part number.
    #[error("empty query: give search text or a part number")]
    EmptyQuery,
    /// The bundled SQLite lacks a module the knowledge base needs.
    #[error("sqlite lacks {feature}; build sqlx with the bundled sqlite (feature `sqlite`): {source}")]
    SqliteFeature {
        /// `fts5` or `the trigram tokenizer`.
        feature: &'static str,
        /// The error SQLite returned.
        source: sqlx::Error,
    },
    /// A database operation failed.
    #[error("knowledge base database error while {context}: {source}")]
    Sql {
        /// What the knowledge base was doing.
        context: &'static str,
        /// The underlying error.
        source: sqlx::Error,
    },
    /// The image given to `analyze_thermal_image` is larger than the configured limit.
    #[error("image from {source_desc} is {size} bytes, over the {limit} byte limit (max_image_bytes)")]
    ImageTooLarge {
        /// Where the image came from (`inline base64`, the URL, the path).
        source_desc: String,
        /// Size found (or announced) in bytes; for streams, the bytes read when the limit was crossed.
        size: u64,
        /// The configured limit in bytes.
        limit: u64,
    },
    /// The image reference could not be resolved to bytes (bad base64, unsupported scheme, HTTP failure, …).
    #[error("cannot fetch image from {source_desc}: {message}")]
    ImageFetch {
        /// Where the image was to come from.
        source_desc: String,
        /// What went wrong and how to fix it.
        message: String,
    },
    /// The image bytes are not a readable thermal image.
    #[error("cannot read thermal image: {0}")]
    Thermal(#[from] switchboard_thermal::Error),
    /// The image bytes match no supported format (unlike the decoder's own error, this one never quotes the
    /// bytes: they may come from a third party).
    #[error("cannot read thermal image: unrecognised image format (expected JPEG, PNG, FFF or SEQ)")]
    UnknownImageFormat,
    /// A tool argument is out of range or malformed.
    #[error("invalid argument `{field}`: {message}")]
    InvalidArgument {
        /// The argument's name.
        field: &'static str,
        /// What is wrong and the valid range.
        message: String,
    },
    /// The `component_map` CSV is malformed.
    #[error("component_map line {line}: {message}")]
    ComponentMap {
        /// 1-based line number in the CSV text.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The optional LLM backend failed (the reasoning server falls back to its deterministic answer).
    #[error("llm backend {url}: {message}")]
    Llm {
        /// The endpoint URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// A server could not bind or serve its transport.
    #[error("cannot serve {transport} on {addr}: {source}")]
    Serve {
        /// `http`, `ws` or `stdio`.
        transport: &'static str,
        /// The address (or `stdin/stdout`).
        addr: String,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// An MCP session over a stream transport failed to start or ended with an error.
    #[error("mcp session over {transport} failed: {message}")]
    Session {
        /// `stdio`, `memory`, `ws`.
        transport: &'static str,
        /// The rmcp error, in words.
        message: String,
    },
    /// A background task failed (a panic or cancellation inside the server, not the caller's fault).
    #[error("internal error while {context}: {message}")]
    Internal {
        /// What the server was doing.
        context: &'static str,
        /// The failure.
        message: String,
    },
    /// A stored section could not be decoded (the database was edited by hand or by another version).
    #[error("stored section {id} is corrupt: {source}")]
    CorruptSection {
        /// The section id.
        id: String,
        /// The decoding error.
        source: serde_json::Error,
    },
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Adds a context string to sqlx errors.
pub(crate) trait SqlContext<T> {
    /// Wraps the error in [`Error::Sql`] with `context`.
    fn ctx(self, context: &'static str) -> Result<T>;
}

impl<T> SqlContext<T> for std::result::Result<T, sqlx::Error> {
    fn ctx(self, context: &'static str) -> Result<T> {
        self.map_err(|source| Error::Sql { context, source })
    }
}

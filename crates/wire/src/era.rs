//! Protocol eras and version negotiation.
//!
//! MCP has two incompatible shapes: the *legacy* era (`initialize` handshake, sessions;
//! 2024-11-05 … 2025-11-25) and the *modern* era (per-request `_meta`, stateless;
//! 2026-07-28). A message's era is decided by its `_meta`, not by the transport.

use serde::{Deserialize, Serialize};

use crate::{Message, meta};

/// Legacy (initialize-based) versions the router accepts, newest first.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// Modern (per-request metadata) versions the router accepts, newest first.
pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];

/// The two shapes of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Era {
    /// `initialize` handshake and sessions (2025-11-25 and earlier).
    Legacy,
    /// Stateless, `_meta` on every request, `server/discover` (2026-07-28).
    Modern,
}

impl Era {
    /// The newest protocol version of this era.
    pub fn latest_version(self) -> &'static str {
        match self {
            Era::Legacy => LEGACY_VERSIONS[0],
            Era::Modern => MODERN_VERSIONS[0],
        }
    }

    /// The era a protocol version string belongs to, if the router knows it.
    pub fn of_version(version: &str) -> Option<Era> {
        if MODERN_VERSIONS.contains(&version) {
            Some(Era::Modern)
        } else if LEGACY_VERSIONS.contains(&version) {
            Some(Era::Legacy)
        } else {
            None
        }
    }

    /// Lower-case name used in events, the store and the UI.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }

    /// Era of a client message: a request whose `params._meta` carries a protocol version
    /// is modern; everything else (including `initialize`) is legacy.
    pub fn of_message(msg: &Message) -> Era {
        if msg.meta().and_then(|m| m.get(meta::PROTOCOL_VERSION)).is_some() {
            Era::Modern
        } else {
            Era::Legacy
        }
    }
}

impl std::fmt::Display for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Legacy version negotiation as a server does it: echo the client's version when
/// supported, otherwise answer with the newest legacy version we support.
pub fn negotiate_legacy_version(requested: &str) -> &'static str {
    LEGACY_VERSIONS.iter().copied().find(|v| *v == requested).unwrap_or(LEGACY_VERSIONS[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_map_to_eras() {
        assert_eq!(Era::of_version("2026-07-28"), Some(Era::Modern));
        assert_eq!(Era::of_version("2025-06-18"), Some(Era::Legacy));
        assert_eq!(Era::of_version("1999-01-01"), None);
        assert_eq!(negotiate_legacy_version("2025-03-26"), "2025-03-26");
        assert_eq!(negotiate_legacy_version("2030-01-01"), "2025-11-25");
    }
}

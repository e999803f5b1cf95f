//! Capability labels: what a server can be asked for. A label is one of MCP's own capability
//! names ([`MCP_CAPABILITIES`]) or a domain label the configuration declares (`[router]
//! labels`, plus those the built-in servers carry, [`BUILTIN_LABELS`]). A label nobody
//! declared is a typo until proven otherwise: it is refused where it is written (a
//! `[servers.X]` table, a registration) with the closest known label, so a route never
//! silently fails to match `visoin`.

use std::collections::BTreeSet;

/// MCP's own capability names, in the order the specification lists them.
pub const MCP_CAPABILITIES: [&str; 5] = ["tools", "resources", "prompts", "completions", "logging"];

/// The domain labels of the built-in servers (`vision`, `knowledge`, `reasoning` in the
/// embedded default configuration).
pub const BUILTIN_LABELS: [&str; 5] = ["vision", "thermal-analysis", "rag", "knowledge", "reasoning"];

/// Largest edit distance at which a known label is suggested.
const SUGGEST_DISTANCE: usize = 2;

/// A label that is neither an MCP capability nor a declared domain label.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown capability label {label:?} for server {server:?}: {hint}(known: {known})")]
pub struct UnknownLabel {
    /// The label as written.
    pub label: String,
    /// The server it was written for.
    pub server: String,
    /// The closest known label, when one is within two edits.
    pub suggestion: Option<String>,
    hint: String,
    known: String,
}

/// The labels a configuration knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownLabels {
    domain: BTreeSet<String>,
}

impl Default for KnownLabels {
    /// The built-in servers' labels and nothing else.
    fn default() -> Self {
        KnownLabels::new(std::iter::empty::<String>())
    }
}

impl KnownLabels {
    /// MCP's capabilities, the built-in labels and `declared`.
    pub fn new(declared: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut domain: BTreeSet<String> = BUILTIN_LABELS.iter().map(|s| (*s).to_owned()).collect();
        domain.extend(declared.into_iter().map(Into::into));
        KnownLabels { domain }
    }

    /// Whether `label` is one of MCP's own capability names.
    pub fn is_mcp(label: &str) -> bool {
        MCP_CAPABILITIES.contains(&label)
    }

    /// Whether `label` is known.
    pub fn contains(&self, label: &str) -> bool {
        KnownLabels::is_mcp(label) || self.domain.contains(label)
    }

    /// Every known label: MCP's first, then the domain labels in order.
    pub fn all(&self) -> Vec<&str> {
        MCP_CAPABILITIES.iter().copied().chain(self.domain.iter().map(String::as_str)).collect()
    }

    /// Accepts a known `label` of `server`, or says which known label was probably meant.
    pub fn check(&self, server: &str, label: &str) -> Result<(), UnknownLabel> {
        if self.contains(label) {
            return Ok(());
        }
        let suggestion = self
            .all()
            .into_iter()
            .map(|k| (distance(label, k), k))
            .filter(|(d, _)| *d <= SUGGEST_DISTANCE)
            .min_by_key(|(d, _)| *d)
            .map(|(_, k)| k.to_owned());
        let hint = suggestion.as_ref().map(|s| format!("did you mean {s:?}? ")).unwrap_or_default();
        Err(UnknownLabel {
            label: label.to_owned(),
            server: server.to_owned(),
            suggestion,
            hint,
            known: self.all().join(", "),
        })
    }

    /// Checks every label of `server`; the first unknown one is the error.
    pub fn check_all<'a>(
        &self,
        server: &str,
        labels: impl IntoIterator<Item = &'a String>,
    ) -> Result<(), UnknownLabel> {
        labels.into_iter().try_for_each(|l| self.check(server, l))
    }
}

/// Levenshtein distance, by characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_labels_suggest_the_closest_known_one() {
        let known = KnownLabels::new(["camera"]);
        assert!(known.check("x", "tools").is_ok());
        assert!(known.check("x", "vision").is_ok());
        assert!(known.check("x", "camera").is_ok());
        let e = known.check("x", "visoin").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown capability label \"visoin\" for server \"x\": did you mean \"vision\"? (known: tools, resources, prompts, completions, logging, camera, knowledge, rag, reasoning, thermal-analysis, vision)"
        );
        let e = known.check("x", "astrology").unwrap_err();
        assert_eq!(e.suggestion, None);
        assert!(
            e.to_string().starts_with("unknown capability label \"astrology\" for server \"x\": (known: "),
            "{e}"
        );
    }

    #[test]
    fn distances() {
        assert_eq!(distance("visoin", "vision"), 2);
        assert_eq!(distance("tool", "tools"), 1);
        assert_eq!(distance("", "rag"), 3);
    }
}

//! The request and the results of a search: [`SearchQuery`] (what `search_manual` receives), [`Hit`] and
//! the [`MatchReason`]s that say why a hit was returned.

use serde::{Deserialize, Serialize};

use super::DEFAULT_TOP_K;
use crate::knowledge::taxonomy;

/// A search request, as the `search_manual` tool receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchQuery {
    /// Free text: symptoms, component description, part numbers.
    #[serde(default)]
    pub query: String,
    /// A part number read off the component (any spelling: `lm 7805`, `EEU-FR1V101`).
    #[serde(default)]
    pub part_number: Option<String>,
    /// The component kind, e.g. from the vision step (`breaker`, `electrolytic-capacitor`).
    #[serde(default)]
    pub component_kind: Option<String>,
    /// The component group (`termination`, `capacitor`, …, see [`taxonomy`]); default: the group of
    /// `component_kind` when a failure mode is given.
    #[serde(default)]
    pub component_group: Option<String>,
    /// The failure mode (`loose-connection`, `overload-imbalance`, …), matched against section modes.
    #[serde(default)]
    pub failure_mode: Option<String>,
    /// The equipment kind (`panel`, `board`, `pv-module`, …); filters out sections of groups that do not occur
    /// in it.
    #[serde(default)]
    pub equipment: Option<String>,
    /// Number of hits wanted; clamped to `1..=`[`MAX_TOP_K`](super::MAX_TOP_K).
    #[serde(default = "default_top_k")]
    pub top_k: usize,
}

fn default_top_k() -> usize {
    DEFAULT_TOP_K
}

impl Default for SearchQuery {
    fn default() -> Self {
        Self {
            query: String::new(),
            part_number: None,
            component_kind: None,
            component_group: None,
            failure_mode: None,
            equipment: None,
            top_k: DEFAULT_TOP_K,
        }
    }
}

impl SearchQuery {
    /// A text query with the default `top_k`.
    pub fn new(query: impl Into<String>) -> Self {
        Self { query: query.into(), ..Self::default() }
    }

    /// Sets the part number.
    #[must_use]
    pub fn part_number(mut self, part: impl Into<String>) -> Self {
        self.part_number = Some(part.into());
        self
    }

    /// Sets the component kind.
    #[must_use]
    pub fn component_kind(mut self, kind: impl Into<String>) -> Self {
        self.component_kind = Some(kind.into());
        self
    }

    /// Sets the component group.
    #[must_use]
    pub fn component_group(mut self, group: impl Into<String>) -> Self {
        self.component_group = Some(group.into());
        self
    }

    /// Sets the failure mode.
    #[must_use]
    pub fn failure_mode(mut self, mode: impl Into<String>) -> Self {
        self.failure_mode = Some(mode.into());
        self
    }

    /// Sets the equipment kind.
    #[must_use]
    pub fn equipment(mut self, equipment: impl Into<String>) -> Self {
        self.equipment = Some(equipment.into());
        self
    }

    /// The group the query asks for, when it asks for one: `component_group`, else the group of
    /// `component_kind` when a failure mode makes the query structured.
    pub fn group(&self) -> Option<String> {
        let explicit =
            self.component_group.as_deref().filter(|g| taxonomy::is_known(g)).map(taxonomy::group_of);
        explicit.or_else(|| {
            self.mode()?;
            self.component_kind.as_deref().filter(|k| taxonomy::is_known(k)).map(taxonomy::group_of)
        })
    }

    /// The failure mode asked for (`none`, `unknown` and `undetermined` ask for nothing).
    pub fn mode(&self) -> Option<&str> {
        self.failure_mode
            .as_deref()
            .map(str::trim)
            .filter(|m| taxonomy::is_known(m) && !m.eq_ignore_ascii_case("undetermined"))
    }

    pub(super) fn equipment_filter(&self) -> Option<String> {
        self.equipment
            .as_deref()
            .map(|e| e.trim().to_ascii_lowercase())
            .filter(|e| taxonomy::is_known(e) && e != "other")
    }

    /// Sets the number of hits.
    #[must_use]
    pub fn top_k(mut self, top_k: usize) -> Self {
        self.top_k = top_k;
        self
    }
}

/// Why a hit was returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum MatchReason {
    /// The normalised part number equals one the section lists.
    ExactPart {
        /// As the user wrote it.
        query: String,
        /// As the section lists it.
        part: String,
    },
    /// The part number is close to one the section lists.
    FuzzyPart {
        /// As the user wrote it.
        query: String,
        /// As the section lists it.
        part: String,
        /// Similarity in `0..1`.
        similarity: f64,
    },
    /// The text matched the section (BM25).
    Text {
        /// BM25 relative to the best text match of this query, `0..=1`.
        relevance: f64,
    },
    /// The section belongs to the requested component group.
    Group {
        /// The group.
        group: String,
        /// The section's kind.
        kind: String,
    },
    /// The section is about the requested failure mode.
    FailureMode {
        /// The mode.
        mode: String,
    },
    /// The section's kind matches the requested `component_kind`.
    Kind {
        /// The section's kind.
        kind: String,
        /// `1` for the same kind, `0.6` for a related one.
        affinity: f64,
    },
}

impl std::fmt::Display for MatchReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ExactPart { query, part } => write!(f, "part number {query} = {part}"),
            Self::FuzzyPart { query, part, similarity } => {
                write!(f, "part number {query} ≈ {part} ({similarity:.2})")
            }
            Self::Text { relevance } => write!(f, "text match ({relevance:.2})"),
            Self::Kind { kind, affinity } => write!(f, "kind {kind} ({affinity:.1})"),
            Self::Group { group, kind } => write!(f, "component group {group} (kind {kind})"),
            Self::FailureMode { mode } => write!(f, "failure mode {mode}"),
        }
    }
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// Section id.
    pub id: String,
    /// Section title.
    pub title: String,
    /// Component family.
    pub family: String,
    /// Component kind.
    pub kind: String,
    /// Component group of the kind ([`taxonomy::group_of`]).
    pub group: String,
    /// Failure modes the section is about.
    pub modes: Vec<String>,
    /// Relevance in `0..=1` (see the module docs for how it is composed).
    pub score: f64,
    /// Diagnosis and repair steps.
    pub steps: Vec<String>,
    /// Safety precautions.
    pub safety: Vec<String>,
    /// Provenance.
    pub source: String,
    /// Why this section matched, strongest reason first.
    pub matched: Vec<MatchReason>,
}

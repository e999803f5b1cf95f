//! The SQLite-backed knowledge index and its ranking.
//!
//! Four tables, all prefixed `kb_` so that the index can share a database file with the rest of the store:
//!
//! - `kb_section`: one row per section (id, kind, the section as JSON); its rowid keys the FTS row.
//! - `kb_section_fts`: FTS5 (`porter unicode61`) over title, kind, parts, symptoms, family, body and steps, ranked
//!   with BM25 weighting title, kind, parts and symptoms well above the prose.
//! - `kb_part`: every indexed variant of every part entry, normalised (see [`text::part_variants`]), for exact
//!   lookups.
//! - `kb_part_trigram`: FTS5 with `tokenize='trigram'` over the same variants, used to find fuzzy candidates that
//!   [`text::part_similarity`] then scores.
//!
//! # Ranking
//!
//! Every hit gets a base score in `0..=1`:
//!
//! | match | base score |
//! |---|---|
//! | exact normalised part number (`part_number`, or a part-like token of the query) | `0.85 + 0.15·text` |
//! | fuzzy part number (similarity `s ≥ 0.6` for `part_number`, `≥ 0.75` for query tokens) | `0.5 + 0.3·s + 0.05·text` |
//! | text only | `0.5·text` |
//!
//! where `text` is the hit's BM25 score divided by the best BM25 score of the query (so in `0..=1`). Exact part
//! matches therefore always come first, then fuzzy ones, then text matches; ties inside a tier go to the better
//! text match.
//!
//! # Structured queries
//!
//! A query that names a `component_group` (or a `component_kind`, whose group is derived, see [`taxonomy`])
//! together with a `failure_mode`, or either of them alone, ranks on section *metadata* rather than on words:
//! every section of the group, and every section about the failure mode, is a candidate whatever its text, and
//! the score is `0.2·base + 0.5·g + 0.3·m`, where `g` is `1` for the requested kind, `0.85` for another kind of
//! the same group, `0` otherwise, and `m` is `1` when the section's modes include the failure mode. With a
//! failure mode but no group, the score is `0.5·base + 0.5·m`. `equipment` is a **filter** in every query: a
//! section whose group does not occur in that equipment (a battery string in a PV module) is never returned;
//! method sections (survey practice, criteria) occur in all. The metadata also filters: only the best tier
//! present is returned (sections of the group about the failure mode; else of the group or about the mode), so
//! a section about another component never fills a slot. Each hit lists why it matched: group, failure mode,
//! text, part number.
//!
//! # Free-text queries
//!
//! `component_kind` alone (no group, no failure mode) keeps the older behaviour, a **strong boost, not a filter**: the final score becomes `(base + 2·k) / 3`, where `k` is
//! `1` when the section's kind equals the requested kind, `0.6` when one is a hyphen-word prefix or suffix of the
//! other (`breaker` ~ `afci-breaker`) and `0` otherwise. Sections of the requested kind thus rise above every
//! other section, but a kind the vision step got wrong, or one the corpus spells differently, still returns the
//! best text and part matches instead of nothing.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    str::FromStr,
    time::Duration,
};

use serde::{Deserialize, Serialize};
use sqlx::{
    Row, SqliteConnection, SqlitePool,
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
};

use super::{
    corpus::{self, Section},
    embedded, taxonomy, text,
};
use crate::error::{Error, Result, SqlContext};

/// Number of hits returned when the caller does not say.
pub const DEFAULT_TOP_K: usize = 3;
/// The most hits one search returns.
pub const MAX_TOP_K: usize = 20;
/// Minimum similarity for a fuzzy match of an explicit `part_number`.
pub const FUZZY_THRESHOLD_EXPLICIT: f64 = 0.6;
/// Minimum similarity for a fuzzy match of a part-like token found in the free text (stricter: the token may not
/// be a part number at all).
pub const FUZZY_THRESHOLD_QUERY: f64 = 0.75;
/// How many BM25 rows are re-ranked.
const TEXT_CANDIDATES: i64 = 200;

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS kb_section (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        origin TEXT NOT NULL,
        doc TEXT NOT NULL
    )",
    "CREATE VIRTUAL TABLE IF NOT EXISTS kb_section_fts USING fts5(
        title, kind, parts, symptoms, family, body, steps,
        tokenize = 'porter unicode61 remove_diacritics 2'
    )",
    "CREATE TABLE IF NOT EXISTS kb_part (
        section_id TEXT NOT NULL,
        part TEXT NOT NULL,
        norm TEXT NOT NULL
    )",
    "CREATE INDEX IF NOT EXISTS kb_part_norm ON kb_part(norm)",
    "CREATE INDEX IF NOT EXISTS kb_part_section ON kb_part(section_id)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS kb_part_trigram USING fts5(
        norm, section_id UNINDEXED, part UNINDEXED,
        tokenize = 'trigram'
    )",
];

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
    /// Number of hits wanted; clamped to `1..=`[`MAX_TOP_K`].
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

    fn equipment_filter(&self) -> Option<String> {
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

/// The outcome of an import: counts, and the files that failed (each failure leaves that file's sections out and
/// the rest of the import in place).
#[derive(Debug, Default)]
pub struct ImportReport {
    /// Sections whose id was new.
    pub added: usize,
    /// Sections that replaced an existing id.
    pub replaced: usize,
    /// Files or directories that could not be imported.
    pub errors: Vec<Error>,
}

impl ImportReport {
    fn merge(&mut self, other: ImportReport) {
        self.added += other.added;
        self.replaced += other.replaced;
        self.errors.extend(other.errors);
    }
}

/// A knowledge base: the index plus the search over it. Cheap to clone (it holds a pool handle).
#[derive(Debug, Clone)]
pub struct KnowledgeBase {
    pool: SqlitePool,
}

impl KnowledgeBase {
    /// Uses an existing pool (for example the store's), creating the `kb_` tables if needed.
    ///
    /// # Errors
    /// [`Error::SqliteFeature`] when SQLite lacks FTS5 or the trigram tokenizer, [`Error::Sql`] otherwise.
    pub async fn open(pool: SqlitePool) -> Result<Self> {
        let mut conn = pool.acquire().await.ctx("opening a connection")?;
        for statement in SCHEMA {
            if let Err(source) = sqlx::query(*statement).execute(&mut *conn).await {
                let message = source.to_string();
                if message.contains("no such module: fts5") {
                    return Err(Error::SqliteFeature { feature: "fts5", source });
                }
                if message.contains("no such tokenizer") {
                    return Err(Error::SqliteFeature { feature: "the fts5 trigram tokenizer", source });
                }
                return Err(Error::Sql { context: "creating the knowledge tables", source });
            }
        }
        drop(conn);
        Ok(Self { pool })
    }

    /// Opens (creating if missing) a database file.
    ///
    /// # Errors
    /// As [`KnowledgeBase::open`], or [`Error::Sql`] when the file cannot be opened.
    pub async fn open_path(path: &Path) -> Result<Self> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .ctx("opening the knowledge database file")?;
        Self::open(pool).await
    }

    /// A private, empty in-memory knowledge base.
    ///
    /// # Errors
    /// As [`KnowledgeBase::open`].
    pub async fn in_memory() -> Result<Self> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:").ctx("configuring sqlite")?;
        // An in-memory database lives as long as its connection: exactly one, never recycled.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .ctx("opening an in-memory database")?;
        Self::open(pool).await
    }

    /// An in-memory knowledge base loaded with the corpus embedded in the binary.
    ///
    /// # Errors
    /// A parse error in the embedded corpus (caught by this crate's tests) or a database error.
    pub async fn embedded() -> Result<Self> {
        let kb = Self::in_memory().await?;
        let sections = embedded::sections()?;
        kb.import_sections(Path::new("embedded"), &sections).await?;
        Ok(kb)
    }

    /// The pool, for callers that share the database.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Number of sections stored.
    ///
    /// # Errors
    /// [`Error::Sql`].
    pub async fn len(&self) -> Result<usize> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM kb_section")
            .fetch_one(&self.pool)
            .await
            .ctx("counting sections")?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// Whether no section is stored.
    ///
    /// # Errors
    /// [`Error::Sql`].
    pub async fn is_empty(&self) -> Result<bool> {
        Ok(self.len().await? == 0)
    }

    /// One section by id.
    ///
    /// # Errors
    /// [`Error::Sql`] or [`Error::CorruptSection`].
    pub async fn section(&self, id: &str) -> Result<Option<Section>> {
        let doc: Option<String> = sqlx::query_scalar("SELECT doc FROM kb_section WHERE id = ?1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .ctx("loading a section")?;
        doc.map(|doc| decode(id, &doc)).transpose()
    }

    /// Stores sections in one transaction; an id already present is replaced. `origin` is recorded for each row.
    ///
    /// # Errors
    /// [`Error::InvalidSection`] when a section breaks [`Section::validate`] (nothing is stored then), or
    /// [`Error::Sql`].
    pub async fn import_sections(&self, origin: &Path, sections: &[Section]) -> Result<ImportReport> {
        for (index, section) in sections.iter().enumerate() {
            section.validate().map_err(|message| Error::InvalidSection {
                path: origin.to_path_buf(),
                index,
                message,
            })?;
        }
        let mut tx = self.pool.begin().await.ctx("starting an import")?;
        let mut report = ImportReport::default();
        for section in sections {
            if upsert(&mut tx, origin, section).await? {
                report.replaced += 1;
            } else {
                report.added += 1;
            }
        }
        tx.commit().await.ctx("committing an import")?;
        tracing::debug!(origin = %origin.display(), added = report.added, replaced = report.replaced, "knowledge imported");
        Ok(report)
    }

    /// Imports one `.md` or `.json` file, all or nothing.
    ///
    /// # Errors
    /// [`Error::Io`], [`Error::UnsupportedFile`], a parse error naming the line, or [`Error::Sql`].
    pub async fn import_file(&self, path: &Path) -> Result<ImportReport> {
        if !matches!(
            path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref(),
            Some("md" | "markdown" | "json")
        ) {
            return Err(Error::UnsupportedFile { path: path.to_path_buf() });
        }
        let text =
            std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        let sections = corpus::parse_file_contents(path, &text)?;
        self.import_sections(path, &sections).await
    }

    /// Imports every `.md` and `.json` file directly inside `dir`, in name order. A file that fails is reported in
    /// [`ImportReport::errors`] and the others are still imported.
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be listed.
    pub async fn import_dir(&self, dir: &Path) -> Result<ImportReport> {
        let io = |source| Error::Io { path: dir.to_path_buf(), source };
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
            if path.is_file() && matches!(ext.as_deref(), Some("md" | "markdown" | "json")) {
                files.push(path);
            }
        }
        files.sort();
        let mut report = ImportReport::default();
        for file in files {
            match self.import_file(&file).await {
                Ok(r) => report.merge(r),
                Err(e) => report.errors.push(e),
            }
        }
        Ok(report)
    }

    /// Imports files and directories given on a command line; never fails as a whole, every problem is in
    /// [`ImportReport::errors`].
    pub async fn import_paths(&self, paths: &[PathBuf]) -> ImportReport {
        let mut report = ImportReport::default();
        for path in paths {
            let result =
                if path.is_dir() { self.import_dir(path).await } else { self.import_file(path).await };
            match result {
                Ok(r) => report.merge(r),
                Err(e) => report.errors.push(e),
            }
        }
        report
    }

    /// Searches the knowledge base; see the module docs for the ranking.
    ///
    /// # Errors
    /// [`Error::EmptyQuery`] when both the text and the part number are blank; [`Error::Sql`] on database failure.
    /// No user input produces an SQL or FTS5 syntax error.
    pub async fn search(&self, query: &SearchQuery) -> Result<Vec<Hit>> {
        let part_number = query.part_number.as_deref().filter(|p| !p.trim().is_empty());
        let group = query.group();
        let mode = query.mode();
        let structured = group.is_some() || mode.is_some();
        if query.query.trim().is_empty() && part_number.is_none() && !structured {
            return Err(Error::EmptyQuery);
        }
        let equipment = query.equipment_filter();
        let top_k = query.top_k.clamp(1, MAX_TOP_K);
        let mut conn = self.pool.acquire().await.ctx("opening a connection")?;

        let mut candidates: HashMap<String, Candidate> = HashMap::new();

        // Text relevance (BM25).
        let mut terms = text::query_terms(&query.query);
        if let Some(part) = part_number {
            for term in text::query_terms(part) {
                if !terms.contains(&term) {
                    terms.push(term);
                }
            }
        }
        if let Some(expr) = text::fts_or_expression(&terms) {
            // BM25 weights in column order: title, kind, parts, symptoms, family, body, steps.
            let sql = "SELECT s.id, s.kind, bm25(kb_section_fts, 10.0, 6.0, 6.0, 5.0, 2.0, 1.0, 0.5) AS rank
                 FROM kb_section_fts JOIN kb_section s ON s.rowid = kb_section_fts.rowid
                 WHERE kb_section_fts MATCH ?1 ORDER BY rank LIMIT ?2";
            let rows = sqlx::query(sql)
                .bind(&expr)
                .bind(TEXT_CANDIDATES)
                .fetch_all(&mut *conn)
                .await
                .ctx("running the text search")?;
            let best = rows.first().map(|r| r.get::<f64, _>("rank")).unwrap_or(-1.0).min(-1e-9);
            for row in rows {
                let rank: f64 = row.get("rank");
                let relevance = (rank / best).clamp(0.0, 1.0);
                let c = candidates.entry(row.get("id")).or_insert_with(|| Candidate::new(row.get("kind")));
                c.text = relevance;
            }
        }

        // Part numbers, exact then fuzzy.
        for cand in text::part_candidates(&query.query, part_number) {
            let rows = sqlx::query(
                "SELECT p.section_id, p.part, s.kind FROM kb_part p JOIN kb_section s ON s.id = p.section_id
                 WHERE p.norm = ?1",
            )
            .bind(&cand.norm)
            .fetch_all(&mut *conn)
            .await
            .ctx("looking up a part number")?;
            for row in rows {
                let c = candidates
                    .entry(row.get("section_id"))
                    .or_insert_with(|| Candidate::new(row.get("kind")));
                c.offer_part(1.0, &cand.raw, row.get("part"));
            }
            if cand.joined || cand.norm.chars().count() < 3 {
                continue;
            }
            let threshold = if cand.explicit { FUZZY_THRESHOLD_EXPLICIT } else { FUZZY_THRESHOLD_QUERY };
            let Some(expr) = text::fts_or_expression(&text::trigrams(&cand.norm)) else {
                continue;
            };
            let rows = sqlx::query(
                "SELECT t.norm, t.section_id, t.part, s.kind
                 FROM kb_part_trigram t JOIN kb_section s ON s.id = t.section_id
                 WHERE kb_part_trigram MATCH ?1",
            )
            .bind(&expr)
            .fetch_all(&mut *conn)
            .await
            .ctx("running the part-number trigram search")?;
            for row in rows {
                let norm: String = row.get("norm");
                let similarity = text::part_similarity(&cand.norm, &norm);
                if similarity >= threshold {
                    let c = candidates
                        .entry(row.get("section_id"))
                        .or_insert_with(|| Candidate::new(row.get("kind")));
                    c.offer_part(similarity, &cand.raw, row.get("part"));
                }
            }
        }

        // Structure: every section of the group or about the failure mode is a candidate.
        let mut modes_of: HashMap<String, Vec<String>> = HashMap::new();
        if structured || equipment.is_some() {
            let rows = sqlx::query("SELECT id, kind, doc FROM kb_section")
                .fetch_all(&mut *conn)
                .await
                .ctx("reading section metadata")?;
            for row in rows {
                let id: String = row.get("id");
                let doc: String = row.get("doc");
                let section = decode(&id, &doc)?;
                let modes = section.failure_modes();
                let in_group = group.as_deref().is_some_and(|g| section.group() == g);
                let about_mode = mode.is_some_and(|m| modes.iter().any(|x| x == m));
                if in_group || about_mode {
                    candidates.entry(id.clone()).or_insert_with(|| Candidate::new(row.get("kind")));
                }
                modes_of.insert(id, modes);
            }
        }

        // Score, rank, cut.
        let kind = query.component_kind.as_deref().filter(|k| taxonomy::is_known(k));
        let mut scored: Vec<(f64, String, Candidate)> = candidates
            .into_iter()
            .filter(|(_, c)| {
                let Some(e) = &equipment else { return true };
                taxonomy::equipment_of(&taxonomy::group_of(&c.kind))
                    .is_none_or(|list| list.contains(&e.as_str()))
            })
            .map(|(id, c)| {
                let base = c.base_score();
                let section_group = taxonomy::group_of(&c.kind);
                let about_mode =
                    mode.is_some_and(|m| modes_of.get(&id).is_some_and(|ms| ms.iter().any(|x| x == m)));
                let m = if about_mode { 1.0 } else { 0.0 };
                let score = match (&group, mode) {
                    (Some(g), _) => {
                        let g_score = if *g != section_group {
                            0.0
                        } else if kind.is_some_and(|k| text::kind_affinity(k, &c.kind) >= 1.0) {
                            1.0
                        } else {
                            0.85
                        };
                        0.2 * base + 0.5 * g_score + 0.3 * m
                    }
                    (None, Some(_)) => 0.5 * base + 0.5 * m,
                    (None, None) => match kind {
                        Some(kind) => (base + 2.0 * text::kind_affinity(kind, &c.kind)) / 3.0,
                        None => base,
                    },
                };
                (score, id, c)
            })
            .collect();
        if structured {
            // Metadata is a filter as well as a boost: keep only the best tier present (group and mode both
            // matching, else one of them), so a section about another component never fills a slot.
            let tier = |id: &str, c: &Candidate| {
                let g = group.as_deref().map(|g| taxonomy::group_of(&c.kind) == g);
                let m = mode.map(|m| modes_of.get(id).is_some_and(|ms| ms.iter().any(|x| x == m)));
                match (g, m) {
                    (Some(true), Some(true)) | (Some(true), None) | (None, Some(true)) => 2,
                    (Some(true), Some(false)) | (Some(false), Some(true)) => 1,
                    _ => 0,
                }
            };
            let best = scored.iter().map(|(_, id, c)| tier(id, c)).max().unwrap_or(0);
            if best > 0 {
                scored.retain(|(_, id, c)| tier(id, c) == best);
            }
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        scored.truncate(top_k);

        let mut hits = Vec::with_capacity(scored.len());
        for (score, id, c) in scored {
            let doc: String = sqlx::query_scalar("SELECT doc FROM kb_section WHERE id = ?1")
                .bind(&id)
                .fetch_one(&mut *conn)
                .await
                .ctx("loading a hit")?;
            let section = decode(&id, &doc)?;
            let mut matched = Vec::new();
            if let Some(part) = c.part {
                matched.push(if part.similarity >= 1.0 {
                    MatchReason::ExactPart { query: part.query, part: part.part }
                } else {
                    MatchReason::FuzzyPart {
                        query: part.query,
                        part: part.part,
                        similarity: round3(part.similarity),
                    }
                });
            }
            let section_group = section.group();
            let modes = section.failure_modes();
            if group.as_deref() == Some(section_group.as_str()) {
                matched.push(MatchReason::Group { group: section_group.clone(), kind: section.kind.clone() });
            }
            if let Some(m) = mode.filter(|m| modes.iter().any(|x| x == m)) {
                matched.push(MatchReason::FailureMode { mode: m.to_owned() });
            }
            if c.text > 0.0 {
                matched.push(MatchReason::Text { relevance: round3(c.text) });
            }
            if let Some(kind) = kind.filter(|_| !structured) {
                let affinity = text::kind_affinity(kind, &section.kind);
                if affinity > 0.0 {
                    matched.push(MatchReason::Kind { kind: section.kind.clone(), affinity });
                }
            }
            hits.push(Hit {
                id: section.id,
                title: section.title,
                family: section.family,
                kind: section.kind,
                group: section_group,
                modes,
                score: round3(score),
                steps: section.steps,
                safety: section.safety,
                source: section.source,
                matched,
            });
        }
        Ok(hits)
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The best part match of one candidate section.
#[derive(Debug)]
struct PartMatch {
    similarity: f64,
    query: String,
    part: String,
}

/// A section under consideration for one query.
#[derive(Debug)]
struct Candidate {
    kind: String,
    /// BM25 relative to the query's best, `0..=1`; `0` when the text did not match.
    text: f64,
    part: Option<PartMatch>,
}

impl Candidate {
    fn new(kind: String) -> Self {
        Self { kind, text: 0.0, part: None }
    }

    fn offer_part(&mut self, similarity: f64, query: &str, part: String) {
        if self.part.as_ref().is_none_or(|p| similarity > p.similarity) {
            self.part = Some(PartMatch { similarity, query: query.to_string(), part });
        }
    }

    fn base_score(&self) -> f64 {
        match &self.part {
            Some(p) if p.similarity >= 1.0 => 0.85 + 0.15 * self.text,
            Some(p) => 0.5 + 0.3 * p.similarity.min(0.95) + 0.05 * self.text,
            None => 0.5 * self.text,
        }
    }
}

fn decode(id: &str, doc: &str) -> Result<Section> {
    serde_json::from_str(doc).map_err(|source| Error::CorruptSection { id: id.to_string(), source })
}

/// Inserts or replaces one section; returns whether it replaced an existing one.
async fn upsert(conn: &mut SqliteConnection, origin: &Path, section: &Section) -> Result<bool> {
    let old: Option<i64> = sqlx::query_scalar("SELECT rowid FROM kb_section WHERE id = ?1")
        .bind(&section.id)
        .fetch_optional(&mut *conn)
        .await
        .ctx("looking up an existing section")?;
    if let Some(rowid) = old {
        sqlx::query("DELETE FROM kb_section_fts WHERE rowid = ?1")
            .bind(rowid)
            .execute(&mut *conn)
            .await
            .ctx("removing a replaced section from the text index")?;
        sqlx::query("DELETE FROM kb_part_trigram WHERE section_id = ?1")
            .bind(&section.id)
            .execute(&mut *conn)
            .await
            .ctx("removing a replaced section's part trigrams")?;
        sqlx::query("DELETE FROM kb_part WHERE section_id = ?1")
            .bind(&section.id)
            .execute(&mut *conn)
            .await
            .ctx("removing a replaced section's parts")?;
        sqlx::query("DELETE FROM kb_section WHERE rowid = ?1")
            .bind(rowid)
            .execute(&mut *conn)
            .await
            .ctx("removing a replaced section")?;
    }
    let doc = serde_json::to_string(section)
        .map_err(|source| Error::CorruptSection { id: section.id.clone(), source })?;
    let rowid = sqlx::query("INSERT INTO kb_section (id, kind, origin, doc) VALUES (?1, ?2, ?3, ?4)")
        .bind(&section.id)
        .bind(&section.kind)
        .bind(origin.display().to_string())
        .bind(&doc)
        .execute(&mut *conn)
        .await
        .ctx("storing a section")?
        .last_insert_rowid();
    sqlx::query(
        "INSERT INTO kb_section_fts (rowid, title, kind, parts, symptoms, family, body, steps)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )
    .bind(rowid)
    .bind(&section.title)
    .bind(section.kind.replace('-', " "))
    .bind(section.parts.join(", "))
    .bind(section.symptoms.join(", "))
    .bind(&section.family)
    .bind(&section.body)
    .bind(section.steps.join("\n"))
    .execute(&mut *conn)
    .await
    .ctx("indexing a section's text")?;
    let mut seen = Vec::new();
    for part in &section.parts {
        for norm in text::part_variants(part) {
            if seen.contains(&norm) {
                continue;
            }
            sqlx::query("INSERT INTO kb_part (section_id, part, norm) VALUES (?1, ?2, ?3)")
                .bind(&section.id)
                .bind(part)
                .bind(&norm)
                .execute(&mut *conn)
                .await
                .ctx("indexing a part number")?;
            sqlx::query("INSERT INTO kb_part_trigram (norm, section_id, part) VALUES (?1, ?2, ?3)")
                .bind(&norm)
                .bind(&section.id)
                .bind(part)
                .execute(&mut *conn)
                .await
                .ctx("indexing a part number's trigrams")?;
            seen.push(norm);
        }
    }
    Ok(old.is_some())
}

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
//! The search and its ranking are in [`search`]; the query and hit types in `query` (re-exported here).

use std::{
    path::{Path, PathBuf},
    str::FromStr,
    time::Duration,
};

use sqlx::{
    SqliteConnection, SqlitePool,
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
};

use super::{
    corpus::{self, Section},
    embedded, text,
};
use crate::error::{Error, Result, SqlContext};

mod query;
pub mod search;

pub use self::query::{Hit, MatchReason, SearchQuery};

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

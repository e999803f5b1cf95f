//! The search over the index: [`KnowledgeBase::search`] and its ranking.
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

use std::collections::HashMap;

use sqlx::Row;

use super::query::{Hit, MatchReason, SearchQuery};
use super::{
    FUZZY_THRESHOLD_EXPLICIT, FUZZY_THRESHOLD_QUERY, KnowledgeBase, MAX_TOP_K, TEXT_CANDIDATES, decode,
};
use crate::error::{Error, Result, SqlContext};
use crate::knowledge::{taxonomy, text};

impl KnowledgeBase {
    /// Searches the knowledge base; see [the module docs](crate::knowledge::index::search) for the ranking.
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

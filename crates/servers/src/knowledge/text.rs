//! Pure string helpers for retrieval: part-number normalisation and similarity, extraction of part-number-like
//! tokens from free text, and construction of FTS5 `MATCH` expressions that user input cannot break.
//!
//! Kept apart from [`super::index`] so that the rules are unit-tested without a database and reused by the MCP tool.

use std::collections::HashSet;

/// Normalises a part number for matching: ASCII letters upper-cased, everything that is not a letter or digit
/// removed (`"AMS1117-3.3"` → `"AMS11173 3"` without the space, i.e. `"AMS111733"`; `"lm 7805"` → `"LM7805"`).
pub fn normalize_part(part: &str) -> String {
    part.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_uppercase).collect()
}

/// Folds characters that are commonly confused when part numbers are typed or read off a component
/// (`O`→`0`, `I`/`L`→`1`, `S`→`5`, `B`→`8`, `Z`→`2`), applied to an already-normalised string.
pub fn fold_confusables(norm: &str) -> String {
    norm.chars()
        .map(|c| match c {
            'O' | 'Q' => '0',
            'I' | 'L' => '1',
            'S' => '5',
            'B' => '8',
            'Z' => '2',
            other => other,
        })
        .collect()
}

/// The normalised strings under which a manufacturer's part entry is indexed.
///
/// Entries often carry a brand or a description (`"Schneider LC1D18"`, `"Allen-Bradley PowerFlex 525"`,
/// `"ACS580 brake chopper"`), so besides the whole entry every word-suffix (brand dropped) and every single word
/// that looks like a part number is indexed too.
pub fn part_variants(part: &str) -> Vec<String> {
    let words: Vec<&str> = part.split_whitespace().collect();
    let mut out: Vec<String> = Vec::new();
    let push = |s: String, out: &mut Vec<String>| {
        if s.chars().count() >= 2 && !out.contains(&s) {
            out.push(s);
        }
    };
    for start in 0..words.len() {
        let suffix = normalize_part(&words[start..].concat());
        if start == 0 || (has_letter_and_digit(&suffix) && suffix.len() >= 3) || suffix.len() >= 5 {
            push(suffix, &mut out);
        }
    }
    for word in &words {
        let norm = normalize_part(word);
        if looks_like_part_number(word) {
            push(norm, &mut out);
        }
    }
    out
}

fn has_letter_and_digit(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit()) && s.chars().any(|c| c.is_alphabetic())
}

/// Whether one whitespace-free token of free text looks like a part number rather than a word or a quantity:
/// at least four letters-or-digits, both letters and digits, and not a number followed by a unit
/// (`12V`, `500mA`, `24VDC`, `80°C` are quantities; `14D471K`, `QO120`, `1N4007` are parts).
pub fn looks_like_part_number(token: &str) -> bool {
    let norm = normalize_part(token);
    if norm.chars().count() < 4 || !has_letter_and_digit(&norm) {
        return false;
    }
    // A quantity: digits (with . or ,) then at most four letters and nothing else.
    let trimmed = token.trim_matches(|c: char| !c.is_alphanumeric());
    let digits_end =
        trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ',')).unwrap_or(trimmed.len());
    let unit = &trimmed[digits_end..];
    let is_quantity = digits_end > 0
        && unit.chars().count() <= 4
        && unit.chars().all(|c| c.is_alphabetic() || c == '°' || c == 'µ' || c == 'Ω');
    !is_quantity
}

/// A candidate part number found in a query, with where it came from (which decides how much fuzziness is
/// tolerated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartCandidate {
    /// As the user wrote it (for explanations).
    pub raw: String,
    /// [`normalize_part`] of `raw`.
    pub norm: String,
    /// `true` when the caller passed it explicitly as `part_number`.
    pub explicit: bool,
    /// `true` when it was formed by joining two query words (`lm 7805`); such candidates only count when exact.
    pub joined: bool,
}

/// Extracts part-number candidates from the explicit `part_number` and from the free-text query.
pub fn part_candidates(query: &str, part_number: Option<&str>) -> Vec<PartCandidate> {
    let mut out: Vec<PartCandidate> = Vec::new();
    let mut seen = HashSet::new();
    let mut push = |raw: &str, explicit: bool, joined: bool, out: &mut Vec<PartCandidate>| {
        let norm = normalize_part(raw);
        if norm.chars().count() >= 2 && seen.insert(norm.clone()) {
            out.push(PartCandidate { raw: raw.trim().to_string(), norm, explicit, joined });
        }
    };
    if let Some(part) = part_number.filter(|p| !p.trim().is_empty()) {
        push(part, true, false, &mut out);
    }
    let words: Vec<&str> = query
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '"' | '\'' | '/'))
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty())
        .collect();
    for word in &words {
        if looks_like_part_number(word) {
            push(word, false, false, &mut out);
        }
    }
    // `lm 7805`, `LRD 22`, `ESP32 WROOM`: a short all-letter prefix or a part followed by a word.
    for pair in words.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let a_letters = a.chars().all(char::is_alphabetic) && (2..=4).contains(&a.chars().count());
        let b_has_digit = b.chars().any(|c| c.is_ascii_digit());
        if (a_letters && b_has_digit) || (looks_like_part_number(a) && b.chars().all(char::is_alphabetic)) {
            push(&format!("{a} {b}"), false, true, &mut out);
        }
    }
    out
}

/// Character trigrams of a normalised string (the unit of the FTS5 trigram tokenizer).
pub fn trigrams(norm: &str) -> Vec<String> {
    let chars: Vec<char> = norm.chars().collect();
    let mut out: Vec<String> = chars.windows(3).map(|w| w.iter().collect()).collect();
    out.sort();
    out.dedup();
    out
}

/// Optimal-string-alignment edit distance (Levenshtein plus adjacent transpositions).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev2 = vec![0usize; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0usize; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(prev2[j - 2] + 1);
            }
            cur[j] = best;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Similarity in `0..=1` between a normalised query part and a normalised indexed variant; `1.0` only when equal.
///
/// Takes the best of: edit distance over the longer length (misspellings such as `AMS117-3.3`), the same after
/// folding confusable characters (`3RT2O26`, `TIP12O`), trigram Dice overlap, and prefix matching (the query is
/// the start of a longer order code, such as `EEUFR1V` for `EEU-FR1V101`, or a misspelt start of one such as
/// `LM2956` for `LM2596S-5.0`). Non-equal strings score at most `0.95`.
pub fn part_similarity(query: &str, variant: &str) -> f64 {
    if query == variant {
        return 1.0;
    }
    let (ql, vl) = (query.chars().count(), variant.chars().count());
    if ql == 0 || vl == 0 {
        return 0.0;
    }
    let ratio = |d: usize, len: usize| 1.0 - d as f64 / len as f64;
    let mut best = ratio(edit_distance(query, variant), ql.max(vl));

    let (fq, fv) = (fold_confusables(query), fold_confusables(variant));
    if fq == fv {
        best = best.max(0.95);
    } else {
        best = best.max(0.95 * ratio(edit_distance(&fq, &fv), ql.max(vl)));
    }

    let (tq, tv) = (trigrams(query), trigrams(variant));
    if !tq.is_empty() && !tv.is_empty() {
        let common = tq.iter().filter(|t| tv.contains(t)).count();
        best = best.max(2.0 * common as f64 / (tq.len() + tv.len()) as f64);
    }

    if ql >= 4 {
        if variant.starts_with(query) {
            best = best.max(0.75 + 0.2 * ql as f64 / vl as f64);
        } else if vl > ql {
            // Misspelt prefix: compare with the variant cut to about the query's length.
            let vchars: Vec<char> = fv.chars().collect();
            let mut prefix_best = 0.0f64;
            for len in ql.saturating_sub(1)..=(ql + 1).min(vl) {
                let cut: String = vchars[..len].iter().collect();
                prefix_best = prefix_best.max(ratio(edit_distance(&fq, &cut), ql.max(len)));
            }
            best = best.max(0.9 * prefix_best);
        }
    }
    if vl >= 4 && ql > vl && query.starts_with(variant) {
        // The query carries a suffix the index does not (`LM7805CT` for `LM7805`).
        best = best.max(0.75 + 0.2 * vl as f64 / ql as f64);
    }
    best.min(0.95)
}

/// Words that carry no retrieval signal; also removes FTS5's own operators (`AND`, `OR`, `NOT`, `NEAR`).
const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "being", "below", "but", "by", "can", "could", "did", "do", "does", "doing", "during",
    "each", "for", "from", "had", "has", "have", "having", "here", "how", "i", "if", "in", "into", "is",
    "it", "its", "just", "me", "more", "most", "my", "near", "no", "nor", "not", "now", "of", "off", "on",
    "once", "only", "or", "other", "our", "out", "over", "own", "same", "should", "so", "some", "such",
    "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "through",
    "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which",
    "while", "who", "why", "will", "with", "would", "you", "your",
];

/// The search terms of a free-text query: lower-cased runs of letters and digits, without stop-words, one-letter
/// words and one- or two-digit numbers (temperatures and ratings that match every section).
pub fn query_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        let word = word.to_lowercase();
        let len = word.chars().count();
        let numeric = word.chars().all(|c| c.is_ascii_digit());
        if len < 2 || (numeric && len < 3) || STOPWORDS.contains(&word.as_str()) {
            continue;
        }
        if !terms.contains(&word) {
            terms.push(word);
        }
    }
    terms
}

/// Builds an FTS5 `MATCH` expression that ORs the given terms, each as a quoted string so that no user input
/// can be read as FTS5 syntax (operators, `NEAR(`, column filters `col:`, `^`, `*`). `None` when there is no term.
pub fn fts_or_expression<S: AsRef<str>>(terms: &[S]) -> Option<String> {
    let quoted: Vec<String> = terms
        .iter()
        .map(|t| t.as_ref())
        .filter(|t| !t.is_empty())
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

/// Normalises a component kind for comparison: lower case, spaces and underscores as hyphens, a trailing plural
/// `s` removed from each word.
pub fn normalize_kind(kind: &str) -> String {
    kind.trim()
        .to_lowercase()
        .split(|c: char| c == '-' || c == '_' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .map(|w| if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") { &w[..w.len() - 1] } else { w })
        .collect::<Vec<_>>()
        .join("-")
}

/// How well a section's kind answers a requested kind: `1.0` equal, `0.6` when one is a hyphen-word suffix or
/// prefix of the other (`breaker` ~ `afci-breaker`, `transformer` ~ `control-transformer`), else `0.0`.
pub fn kind_affinity(requested: &str, section_kind: &str) -> f64 {
    let (r, s) = (normalize_kind(requested), normalize_kind(section_kind));
    if r.is_empty() || s.is_empty() {
        return 0.0;
    }
    if r == s {
        return 1.0;
    }
    let (rw, sw): (Vec<&str>, Vec<&str>) = (r.split('-').collect(), s.split('-').collect());
    let (short, long) = if rw.len() <= sw.len() { (&rw, &sw) } else { (&sw, &rw) };
    if long.ends_with(short) || long.starts_with(short) { 0.6 } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation() {
        assert_eq!(normalize_part("AMS1117-3.3"), "AMS111733");
        assert_eq!(normalize_part("lm 7805"), "LM7805");
        assert_eq!(normalize_part("EEU-FR1V101"), "EEUFR1V101");
    }

    #[test]
    fn variants_drop_brands() {
        let v = part_variants("Schneider LC1D18");
        assert!(v.contains(&"SCHNEIDERLC1D18".to_string()));
        assert!(v.contains(&"LC1D18".to_string()));
        let v = part_variants("Allen-Bradley PowerFlex 525");
        assert!(v.contains(&"POWERFLEX525".to_string()));
        let v = part_variants("ACS580 brake chopper");
        assert!(v.contains(&"ACS580".to_string()));
    }

    #[test]
    fn part_like_tokens() {
        for part in ["IRF540N", "14D471K", "QO120", "1N4007", "3RT2O26", "MF-MSMF050-2"] {
            assert!(looks_like_part_number(part), "{part}");
        }
        for not_part in ["12V", "500mA", "24VDC", "80°C", "hot", "7805", "X7R"] {
            assert!(!looks_like_part_number(not_part), "{not_part}");
        }
        let c = part_candidates("lm 7805 regulator hot", None);
        assert!(c.iter().any(|c| c.norm == "LM7805" && c.joined));
    }

    #[test]
    fn similarity_handles_misspellings() {
        let sim = |a: &str, b: &str| part_similarity(&normalize_part(a), &normalize_part(b));
        assert_eq!(sim("LM7805", "lm 7805"), 1.0);
        assert!(sim("AMS117-3.3", "AMS1117-3.3") > 0.85);
        assert!(sim("EEUFR1V", "EEU-FR1V101") > 0.85);
        assert!(sim("3RT2O26", "3RT2026") >= 0.95);
        assert!(sim("LM2956", "LM2596S-5.0") > 0.7);
        assert!(sim("IRF540", "IRF540N") > 0.9);
        assert!(sim("LM7805", "IRF540N") < 0.4);
        assert!(sim("QO120", "QO130") < 0.85);
    }

    #[test]
    fn fts_expression_is_inert() {
        let terms = query_terms("\"AND OR NEAR( * : ^ hot-spot col:x");
        assert_eq!(terms, ["hot", "spot", "col"]);
        assert_eq!(fts_or_expression(&terms).as_deref(), Some("\"hot\" OR \"spot\" OR \"col\""));
        assert_eq!(fts_or_expression::<&str>(&[]), None);
        assert_eq!(fts_or_expression(&["a\"b"]).as_deref(), Some("\"a\"\"b\""));
    }

    #[test]
    fn kinds() {
        assert_eq!(kind_affinity("breaker", "breaker"), 1.0);
        assert_eq!(kind_affinity("Breakers", "breaker"), 1.0);
        assert_eq!(kind_affinity("breaker", "afci-breaker"), 0.6);
        assert_eq!(kind_affinity("transformer", "control-transformer"), 0.6);
        assert_eq!(kind_affinity("fuse", "fuse-clip"), 0.6);
        assert_eq!(kind_affinity("fuse", "diode"), 0.0);
    }
}

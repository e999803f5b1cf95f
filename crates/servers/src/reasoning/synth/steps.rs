//! Step text: duplicate detection by words, and the `[manual: <id>]` source tag every step ends with.

use std::collections::BTreeSet;

use super::DUPLICATE_SIMILARITY;

/// Lower-case words of `s` (letters and digits; apostrophes dropped), for duplicate detection.
pub fn words(s: &str) -> Vec<String> {
    // Apostrophes join words ("manufacturer's" = "manufacturers") so spelling variants still match.
    let joined: String = s.chars().filter(|c| !matches!(c, '\'' | '’')).collect();
    joined.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Whether two sentences say the same thing (identical words, or Jaccard overlap ≥ [`DUPLICATE_SIMILARITY`]).
pub fn is_duplicate(a: &str, b: &str) -> bool {
    let (wa, wb) = (words(strip_source(a)), words(strip_source(b)));
    if wa == wb {
        return true;
    }
    let sa: BTreeSet<&String> = wa.iter().collect();
    let sb: BTreeSet<&String> = wb.iter().collect();
    let union = sa.union(&sb).count();
    union > 0 && sa.intersection(&sb).count() as f64 / union as f64 >= DUPLICATE_SIMILARITY
}

/// Appends the items of `new` to `list` that do not duplicate an item already there (or in `also_against`).
pub fn push_unique(list: &mut Vec<String>, new: impl IntoIterator<Item = String>, also_against: &[String]) {
    for item in new {
        let item = item.trim().to_owned();
        if item.is_empty() {
            continue;
        }
        if list.iter().chain(also_against).any(|x| is_duplicate(x, &item)) {
            continue;
        }
        list.push(item);
    }
}

/// The `[manual: <id>]` suffix of a step.
pub fn source_tag(section: &str) -> String {
    format!("[manual: {section}]")
}

/// The section id a step names (`… [manual: <id>]`), if any.
pub fn step_section(step: &str) -> Option<&str> {
    let start = step.rfind("[manual:")?;
    let rest = &step[start + "[manual:".len()..];
    let end = rest.find(']')?;
    Some(rest[..end].trim()).filter(|s| !s.is_empty())
}

/// The step without its source tag.
pub fn strip_source(step: &str) -> &str {
    match step.rfind("[manual:") {
        Some(i) if step_section(step).is_some() => step[..i].trim_end(),
        _ => step,
    }
}

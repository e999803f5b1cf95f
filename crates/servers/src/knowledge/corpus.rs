//! Parsing of knowledge files into [`Section`]s.
//!
//! The Markdown format is deliberately small so that engineers can write it by hand and review it in a diff:
//!
//! ```text
//! # Family name
//!
//! ## Section title
//! id: linreg-7805-dissipation
//! kind: regulator
//! parts: LM7805, L7805CV
//! symptoms: 7805 hot, regulator heatsink hot
//! modes: semiconductor-overheating
//!
//! Prose paragraphs…
//!
//! Steps:
//! 1. First step.
//! 2. Second step.
//!
//! Safety:
//! - A precaution.
//!
//! Source: where the knowledge comes from
//! ```
//!
//! The metadata lines must directly follow the `## ` heading; `id` and `kind` are required; `modes` (optional) lists
//! the failure modes the section is about (the vision server's `failure_mode.kind` values; without it the
//! defaults of the kind's group apply, see [`super::taxonomy`]), and every section needs
//! at least one step. Errors name the file and the 1-based line so that a broken import can be fixed quickly.
//! JSON imports are an array of objects with the same fields as [`Section`].

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One failure mode of one component family: the unit of retrieval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    /// Stable identifier (`[a-z0-9._-]`, starting with a letter or digit); re-importing an id replaces it.
    pub id: String,
    /// The component family (the file's `# ` heading).
    #[serde(default)]
    pub family: String,
    /// The `## ` heading.
    pub title: String,
    /// Component kind, lower-case with hyphens (`regulator`, `mccb`, `electrolytic-capacitor`).
    pub kind: String,
    /// Part numbers and product names as written by the manufacturer.
    #[serde(default)]
    pub parts: Vec<String>,
    /// Short symptom phrases an operator might type.
    #[serde(default)]
    pub symptoms: Vec<String>,
    /// Failure modes the section is about (`loose-connection`, `overload-imbalance`, …); empty: the defaults of
    /// the kind's group ([`super::taxonomy::default_modes`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<String>,
    /// Explanatory prose (paragraphs separated by a blank line).
    #[serde(default)]
    pub body: String,
    /// Ordered diagnosis and repair steps.
    #[serde(default)]
    pub steps: Vec<String>,
    /// Safety precautions.
    #[serde(default)]
    pub safety: Vec<String>,
    /// Provenance of the knowledge.
    #[serde(default)]
    pub source: String,
}

impl Section {
    /// The component group of the section ([`super::taxonomy::group_of`] of its kind).
    pub fn group(&self) -> String {
        super::taxonomy::group_of(&self.kind)
    }

    /// The failure modes the section is about: its `modes`, else its group's defaults.
    pub fn failure_modes(&self) -> Vec<String> {
        if self.modes.is_empty() {
            super::taxonomy::default_modes(&self.group()).iter().map(|m| (*m).to_owned()).collect()
        } else {
            self.modes.clone()
        }
    }

    /// Checks the rules every section must satisfy, whatever format it came from.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.id.is_empty() {
            return Err("missing `id`".into());
        }
        if !valid_id(&self.id) {
            return Err(format!(
                "invalid id `{}`: use lower-case letters, digits, `-`, `_` and `.`",
                self.id
            ));
        }
        if self.title.trim().is_empty() {
            return Err(format!("section `{}` has an empty title", self.id));
        }
        if self.kind.trim().is_empty() {
            return Err(format!("section `{}` has no `kind`", self.id));
        }
        if self.steps.is_empty() {
            return Err(format!("section `{}` has no steps (add a `Steps:` list)", self.id));
        }
        Ok(())
    }
}

fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'))
}

/// Parses a knowledge file, choosing the format from the extension (`.md` or `.json`).
pub fn parse_file_contents(path: &Path, text: &str) -> Result<Vec<Section>> {
    match path.extension().and_then(|e| e.to_str()) {
        Some(ext) if ext.eq_ignore_ascii_case("md") || ext.eq_ignore_ascii_case("markdown") => {
            parse_markdown(path, text)
        }
        Some(ext) if ext.eq_ignore_ascii_case("json") => parse_json(path, text),
        _ => Err(Error::UnsupportedFile { path: path.to_path_buf() }),
    }
}

/// Parses a JSON array of sections. `path` is only used in error messages.
pub fn parse_json(path: &Path, text: &str) -> Result<Vec<Section>> {
    let sections: Vec<Section> = serde_json::from_str(text).map_err(|e| Error::Json {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    let mut seen = std::collections::HashSet::new();
    for (index, section) in sections.iter().enumerate() {
        let invalid = |message: String| Error::InvalidSection { path: path.to_path_buf(), index, message };
        section.validate().map_err(invalid)?;
        if !seen.insert(section.id.as_str()) {
            return Err(invalid(format!("duplicate id `{}` in this file", section.id)));
        }
    }
    Ok(sections)
}

/// Where the parser is inside a section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Right after the `## ` heading: `key: value` lines.
    Meta,
    /// Prose paragraphs.
    Body,
    /// Inside `Steps:`.
    Steps,
    /// Inside `Safety:`.
    Safety,
    /// After the `Source:` line; only blank lines may follow before the next heading.
    Done,
}

/// A section being assembled, with the line numbers needed for errors.
struct Draft {
    section: Section,
    heading_line: usize,
    mode: Mode,
    /// A blank line was seen in the body: the next prose line starts a new paragraph.
    paragraph_break: bool,
    seen_keys: Vec<&'static str>,
}

const META_KEYS: [&str; 5] = ["id", "kind", "parts", "symptoms", "modes"];

/// Parses the Markdown format described in the module docs. `path` is only used in error messages.
pub fn parse_markdown(path: &Path, text: &str) -> Result<Vec<Section>> {
    let err = |line: usize, message: String| Error::Parse { path: path.to_path_buf(), line, message };
    let mut family: Option<String> = None;
    let mut draft: Option<Draft> = None;
    let mut sections: Vec<Section> = Vec::new();
    let mut first_line_of: std::collections::HashMap<String, usize> = std::collections::HashMap::new();

    let mut finish = |draft: Draft, sections: &mut Vec<Section>| -> Result<()> {
        let Draft { mut section, heading_line, .. } = draft;
        section.body = section.body.trim().to_string();
        if section.id.is_empty() {
            return Err(err(
                heading_line,
                format!(
                    "section `{}` has no `id:` line (metadata lines must directly follow the `## ` heading)",
                    section.title
                ),
            ));
        }
        section.validate().map_err(|message| err(heading_line, message))?;
        if let Some(previous) = first_line_of.insert(section.id.clone(), heading_line) {
            return Err(err(
                heading_line,
                format!("duplicate id `{}` (first used by the section at line {previous})", section.id),
            ));
        }
        sections.push(section);
        Ok(())
    };

    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.trim_end();
        let trimmed = line.trim_start();

        if let Some(title) = line.strip_prefix("## ") {
            let Some(family) = &family else {
                return Err(err(line_no, "section heading before the `# Family` heading".into()));
            };
            if let Some(previous) = draft.take() {
                finish(previous, &mut sections)?;
            }
            let title = title.trim();
            if title.is_empty() {
                return Err(err(line_no, "empty section title after `## `".into()));
            }
            draft = Some(Draft {
                section: Section {
                    id: String::new(),
                    family: family.clone(),
                    title: title.to_string(),
                    kind: String::new(),
                    parts: Vec::new(),
                    symptoms: Vec::new(),
                    modes: Vec::new(),
                    body: String::new(),
                    steps: Vec::new(),
                    safety: Vec::new(),
                    source: String::new(),
                },
                heading_line: line_no,
                mode: Mode::Meta,
                paragraph_break: false,
                seen_keys: Vec::new(),
            });
            continue;
        }
        if let Some(name) = line.strip_prefix("# ") {
            if family.is_some() {
                return Err(err(line_no, "second `# ` family heading: put one family per file".into()));
            }
            let name = name.trim();
            if name.is_empty() {
                return Err(err(line_no, "empty family name after `# `".into()));
            }
            family = Some(name.to_string());
            continue;
        }
        if line.starts_with('#') && !line.starts_with("###") {
            return Err(err(
                line_no,
                format!("malformed heading `{line}`: write `# Family` or `## Section title`"),
            ));
        }

        let Some(d) = draft.as_mut() else {
            if trimmed.is_empty() || family.is_some() {
                // Blank lines, and an introduction between the family heading and the first section, are allowed.
                continue;
            }
            return Err(err(line_no, format!("expected the `# Family` heading, found `{line}`")));
        };

        if d.mode == Mode::Meta {
            if trimmed.is_empty() {
                if !d.seen_keys.is_empty() {
                    d.mode = Mode::Body;
                }
                continue;
            }
            if let Some((key, value)) = meta_line(line) {
                let Some(key) = META_KEYS.iter().copied().find(|k| *k == key) else {
                    return Err(err(
                        line_no,
                        format!("unknown field `{key}`: expected one of id, kind, parts, symptoms, modes"),
                    ));
                };
                if d.seen_keys.contains(&key) {
                    return Err(err(line_no, format!("duplicate `{key}:` line in this section")));
                }
                d.seen_keys.push(key);
                match key {
                    "id" => {
                        if !valid_id(value) {
                            return Err(err(
                                line_no,
                                format!(
                                    "invalid id `{value}`: use lower-case letters, digits, `-`, `_` and `.`"
                                ),
                            ));
                        }
                        d.section.id = value.to_string();
                    }
                    "kind" => {
                        if value.is_empty() {
                            return Err(err(line_no, "empty `kind:`".into()));
                        }
                        d.section.kind = value.to_ascii_lowercase();
                    }
                    "parts" => d.section.parts = split_list(value),
                    "modes" => {
                        d.section.modes =
                            split_list(value).into_iter().map(|m| m.to_ascii_lowercase()).collect();
                    }
                    _ => d.section.symptoms = split_list(value),
                }
                continue;
            }
            d.mode = Mode::Body;
        }

        match (trimmed, d.mode) {
            ("Steps:", Mode::Body) => {
                d.mode = Mode::Steps;
                continue;
            }
            ("Steps:", _) => {
                return Err(err(
                    line_no,
                    "`Steps:` must come once, after the prose and before `Safety:`".into(),
                ));
            }
            ("Safety:", Mode::Body | Mode::Steps) => {
                d.mode = Mode::Safety;
                continue;
            }
            ("Safety:", _) => {
                return Err(err(line_no, "`Safety:` must come once, before `Source:`".into()));
            }
            _ => {}
        }
        if let Some(source) = trimmed.strip_prefix("Source:") {
            if d.mode == Mode::Done {
                return Err(err(line_no, "second `Source:` line in this section".into()));
            }
            d.section.source = source.trim().to_string();
            d.mode = Mode::Done;
            continue;
        }

        match d.mode {
            Mode::Meta | Mode::Body => {
                if trimmed.is_empty() {
                    d.paragraph_break = !d.section.body.is_empty();
                } else {
                    if d.paragraph_break {
                        d.section.body.push_str("\n\n");
                    } else if !d.section.body.is_empty() {
                        d.section.body.push('\n');
                    }
                    d.paragraph_break = false;
                    d.section.body.push_str(trimmed);
                }
            }
            Mode::Steps => {
                if trimmed.is_empty() {
                    continue;
                }
                if let Some((number, text)) = numbered_item(trimmed) {
                    let expected = d.section.steps.len() + 1;
                    if number != expected {
                        return Err(err(line_no, format!("step numbered {number}, expected {expected}")));
                    }
                    d.section.steps.push(text.to_string());
                } else if line.starts_with(char::is_whitespace) && !d.section.steps.is_empty() {
                    append_continuation(&mut d.section.steps, trimmed);
                } else {
                    return Err(err(
                        line_no,
                        format!(
                            "expected a numbered step like `1. …`, `Safety:` or `Source:`, found `{trimmed}`"
                        ),
                    ));
                }
            }
            Mode::Safety => {
                if trimmed.is_empty() {
                    continue;
                }
                if let Some(text) = trimmed.strip_prefix("- ").or_else(|| trimmed.strip_prefix("* ")) {
                    d.section.safety.push(text.trim().to_string());
                } else if line.starts_with(char::is_whitespace) && !d.section.safety.is_empty() {
                    append_continuation(&mut d.section.safety, trimmed);
                } else {
                    return Err(err(
                        line_no,
                        format!("expected a `- ` bullet or `Source:`, found `{trimmed}`"),
                    ));
                }
            }
            Mode::Done => {
                if !trimmed.is_empty() {
                    return Err(err(
                        line_no,
                        format!(
                            "unexpected text after `Source:`: `{trimmed}` (start a new section with `## Title`)"
                        ),
                    ));
                }
            }
        }
    }
    if let Some(previous) = draft.take() {
        finish(previous, &mut sections)?;
    }
    if family.is_none() {
        return Err(err(1, "missing the `# Family` heading".into()));
    }
    Ok(sections)
}

/// `key: value` with a lower-case ASCII key, as used by the metadata lines.
fn meta_line(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once(':')?;
    let is_key = !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    is_key.then(|| (key, value.trim()))
}

fn numbered_item(line: &str) -> Option<(usize, &str)> {
    let digits = line.find(|c: char| !c.is_ascii_digit())?;
    if digits == 0 {
        return None;
    }
    let rest = line[digits..].strip_prefix(". ")?;
    Some((line[..digits].parse().ok()?, rest.trim()))
}

fn append_continuation(items: &mut [String], text: &str) {
    if let Some(last) = items.last_mut() {
        last.push(' ');
        last.push_str(text);
    }
}

fn split_list(value: &str) -> Vec<String> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "# Widgets\n\nIntro text.\n\n## Hot widget\nid: widget-hot\nkind: widget\nparts: W-100, ACME W200\nsymptoms: widget hot, widget smells\n\nFirst paragraph\ncontinues.\n\nSecond paragraph.\n\nSteps:\n1. Look.\n2. Fix\n   carefully.\n\nSafety:\n- Power off.\n\nSource: test\n";

    #[test]
    fn parses_a_section() {
        let sections = parse_markdown(Path::new("w.md"), GOOD).unwrap();
        assert_eq!(sections.len(), 1);
        let s = &sections[0];
        assert_eq!(s.id, "widget-hot");
        assert_eq!(s.family, "Widgets");
        assert_eq!(s.parts, ["W-100", "ACME W200"]);
        assert_eq!(s.body, "First paragraph\ncontinues.\n\nSecond paragraph.");
        assert_eq!(s.steps, ["Look.", "Fix carefully."]);
        assert_eq!(s.safety, ["Power off."]);
        assert_eq!(s.source, "test");
    }

    fn error_line(text: &str) -> (usize, String) {
        match parse_markdown(Path::new("bad.md"), text) {
            Err(Error::Parse { line, message, .. }) => (line, message),
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn errors_name_the_line() {
        let (line, msg) = error_line(&GOOD.replace("2. Fix", "3. Fix"));
        assert_eq!(line, 18);
        assert!(msg.contains("expected 2"), "{msg}");
        let (line, msg) = error_line(&GOOD.replace("kind: widget", "knd: widget"));
        assert_eq!(line, 7);
        assert!(msg.contains("unknown field `knd`"), "{msg}");
        let (line, msg) = error_line(&GOOD.replace("id: widget-hot\n", ""));
        assert_eq!(line, 5);
        assert!(msg.contains("no `id:`"), "{msg}");
        let (line, _) = error_line("## orphan\nid: x\n");
        assert_eq!(line, 1);
        let (line, msg) = error_line(&format!("{GOOD}\n{}", &GOOD[GOOD.find("## ").unwrap_or(0)..]));
        assert_eq!(line, 26);
        assert!(msg.contains("duplicate id"), "{msg}");
        let (line, msg) = error_line(&GOOD.replace("- Power off.", "Power off."));
        assert_eq!(line, 22);
        assert!(msg.contains("bullet"), "{msg}");
    }

    #[test]
    fn json_round_trip_and_validation() {
        let sections = parse_markdown(Path::new("w.md"), GOOD).unwrap();
        let json = serde_json::to_string(&sections).unwrap();
        assert_eq!(parse_json(Path::new("w.json"), &json).unwrap(), sections);
        let bad = json.replace("widget-hot", "Widget Hot");
        assert!(matches!(parse_json(Path::new("w.json"), &bad), Err(Error::InvalidSection { index: 0, .. })));
        assert!(matches!(parse_json(Path::new("w.json"), "[{]"), Err(Error::Json { line: 1, .. })));
    }
}

//! The corpus shipped inside the binary (`assets/knowledge/*.md` and `*.json`, listed by `build.rs` at build
//! time), so that `search_manual` works on a machine that has only the `switchboard` executable.

use std::path::Path;

use super::corpus::{self, Section};
use crate::error::Result;

include!(concat!(env!("OUT_DIR"), "/embedded_corpus.rs"));

/// The embedded corpus files as `(file name, contents)`, sorted by name.
pub fn files() -> &'static [(&'static str, &'static str)] {
    EMBEDDED_FILES
}

/// Parses every embedded file. Errors name the file as `assets/knowledge/<name>`.
pub fn sections() -> Result<Vec<Section>> {
    let mut all = Vec::new();
    for (name, text) in EMBEDDED_FILES {
        let path = Path::new("assets/knowledge").join(name);
        all.extend(corpus::parse_file_contents(&path, text)?);
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_shipped_corpus_parses() {
        let sections = super::sections().unwrap();
        assert!(sections.len() >= 150, "{} sections", sections.len());
    }
}

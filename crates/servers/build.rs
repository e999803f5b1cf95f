//! Embeds the shipped knowledge corpus (`assets/knowledge/*.md`, `*.json`) into the crate so that the
//! `switchboard` binary can answer `search_manual` without the assets folder next to it.
//!
//! The list of files is discovered here, at build time, and written to `$OUT_DIR/embedded_corpus.rs` as
//! `include_str!` entries; adding a file to the corpus needs no code change.

use std::{env, error::Error, fs, path::PathBuf};

fn main() -> Result<(), Box<dyn Error>> {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?);
    let corpus_dir = manifest_dir.join("../../assets/knowledge");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={}", corpus_dir.display());

    let mut files = Vec::new();
    // A crate built outside the workspace (no assets folder) embeds an empty corpus instead of failing.
    if let Ok(entries) = fs::read_dir(&corpus_dir) {
        for entry in entries {
            let path = entry?.path();
            let is_corpus = matches!(path.extension().and_then(|e| e.to_str()), Some("md" | "json"));
            if is_corpus && path.is_file() {
                files.push(path.canonicalize()?);
            }
        }
    }
    files.sort();

    let mut out = String::from(
        "/// Corpus files embedded at build time: `(file name, contents)`, sorted by name.\n\
         pub(crate) static EMBEDDED_FILES: &[(&str, &str)] = &[\n",
    );
    for path in &files {
        let name = path.file_name().and_then(|n| n.to_str()).ok_or("corpus file name is not UTF-8")?;
        let full = path.to_str().ok_or("corpus path is not UTF-8")?;
        out.push_str(&format!("    ({name:?}, include_str!({full:?})),\n"));
    }
    out.push_str("];\n");
    fs::write(PathBuf::from(env::var("OUT_DIR")?).join("embedded_corpus.rs"), out)?;
    Ok(())
}

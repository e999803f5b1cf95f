//! Embeds the built UI (`ui/dist`, from `vite build`) into the crate at compile time.
//!
//! Writes `$OUT_DIR/ui_assets.rs`: a table of `(path, bytes)` with one `include_bytes!` per file
//! under `ui/dist`. Without `ui/dist` the table is empty and the binary still builds; the
//! router then serves a page saying how to build the UI. `SWITCHBOARD_UI_DIST` points at
//! another directory.

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    let dist = std::env::var_os("SWITCHBOARD_UI_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../../ui/dist"));
    println!("cargo:rerun-if-env-changed=SWITCHBOARD_UI_DIST");
    // A missing directory cannot be watched (cargo would rerun this every build): watch its
    // parent then, whose contents change when `vite build` creates it.
    let watched =
        if dist.is_dir() { dist.clone() } else { dist.parent().map(Path::to_path_buf).unwrap_or_default() };
    println!("cargo:rerun-if-changed={}", watched.display());
    let mut files = Vec::new();
    if dist.is_dir() {
        collect(&dist, &dist, &mut files);
    }
    files.sort();
    let mut out = String::from("/// Files of the built UI: path relative to `ui/dist`, bytes.\n");
    out.push_str("pub static ASSETS: &[(&str, &[u8])] = &[\n");
    for (rel, abs) in &files {
        println!("cargo:rerun-if-changed={}", abs.display());
        out.push_str(&format!("    ({rel:?}, include_bytes!({:?})),\n", abs.display().to_string()));
    }
    out.push_str("];\n");
    let target = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into())).join("ui_assets.rs");
    if std::fs::read_to_string(&target).is_ok_and(|old| old == out) {
        return;
    }
    if let Err(e) = std::fs::write(&target, out) {
        panic!("writing {}: {e}", target.display());
    }
}

/// Every regular file under `dir`, as (path relative to `root` with `/`, absolute path).
fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files);
        } else if path.is_file()
            && let Ok(rel) = path.strip_prefix(root)
        {
            let rel = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
            let abs = path.canonicalize().unwrap_or(path.clone());
            files.push((rel, abs));
        }
    }
}

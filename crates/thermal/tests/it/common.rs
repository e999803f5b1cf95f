//! Locating the sample data and reading its ground truth.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The thermal sample directory: `$SWITCHBOARD_THERMAL_DATA`, else the first
/// `<ancestor>/shared/data/thermal` above this crate.
pub fn data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SWITCHBOARD_THERMAL_DATA") {
        let dir = PathBuf::from(dir);
        assert!(dir.is_dir(), "SWITCHBOARD_THERMAL_DATA={} is not a directory", dir.display());
        return dir;
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.ancestors().map(|a| a.join("shared/data/thermal")).find(|p| p.is_dir()).unwrap_or_else(|| {
        panic!(
            "thermal sample data not found: set SWITCHBOARD_THERMAL_DATA or place shared/data/thermal \
                 in an ancestor of {}",
            manifest.display()
        )
    })
}

/// One sample image with its ground truth.
pub struct Sample {
    pub name: String,
    pub bytes: Vec<u8>,
    pub truth: Value,
}

/// Every image in the data directory that has a JSON file beside it, sorted by name.
pub fn samples() -> Vec<Sample> {
    let dir = data_dir();
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        if ext == "json" || ext == "md" {
            continue;
        }
        let json = path.with_extension("json");
        if !json.is_file() {
            continue;
        }
        let truth: Value =
            serde_json::from_slice(&std::fs::read(&json).expect("read json")).expect("parse json");
        out.push(Sample {
            name: path.file_name().expect("file name").to_string_lossy().into_owned(),
            bytes: std::fs::read(&path).expect("read sample"),
            truth,
        });
    }
    assert!(!out.is_empty(), "no samples with ground truth in {}", dir.display());
    out
}

/// One named sample.
pub fn sample(prefix: &str) -> Sample {
    samples()
        .into_iter()
        .find(|s| s.name.starts_with(prefix))
        .unwrap_or_else(|| panic!("no sample {prefix}*"))
}

pub fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("expected a number, found {v}"))
}

pub fn xy(v: &Value) -> (usize, usize) {
    let a = v.as_array().unwrap_or_else(|| panic!("expected [x, y], found {v}"));
    let coord = |i: usize| a[i].as_u64().unwrap_or_else(|| panic!("bad coordinate in {v}")) as usize;
    (coord(0), coord(1))
}

//! `switchboard diagnose` on real radiometric images, through the router's built-in
//! servers, with every run (including refused ones) persisted.

use std::process::Command;

use crate::*;

fn data(name: &str) -> std::path::PathBuf {
    repo_root().join("../shared/data/thermal").join(name)
}

fn diagnose(
    db: &std::path::Path,
    image: &std::path::Path,
    extra: &[&str],
) -> (Option<i32>, serde_json::Value, String) {
    let out = Command::new(switchboard())
        .args(["--db", db.to_str().unwrap(), "diagnose", "--json"])
        .args(extra)
        .arg(image)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), v, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn node<'a>(run: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    run["nodes"].as_array().unwrap().iter().find(|n| n["id"] == id).unwrap()
}

#[test]
fn the_overheated_neutral_is_a_major_discrepancy() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sb.db");
    let (code, run, err) = diagnose(&db, &data("wm01_200_deg_neutral.jpg"), &["--equipment", "panel"]);
    assert_eq!(code, Some(0), "{err}\n{run}");
    assert_eq!(run["outcome"], "ok");
    let vision = &node(&run, "vision")["output"];
    assert_eq!(vision["equipment"], "panel", "{vision}");
    assert_eq!(vision["equipment_source"], "operator", "{vision}");
    assert_eq!(vision["severity"]["band"], "major", "{vision}");
    assert!(vision["severity"]["action"].as_str().unwrap().contains("major discrepancy; repair immediately"));
    assert!(vision["delta_t_ref_c"].as_f64().unwrap() > 15.0);
    let top = &vision["hotspots"][0]["bbox"];
    let (x, y, w, h) = (
        top["x"].as_u64().unwrap(),
        top["y"].as_u64().unwrap(),
        top["width"].as_u64().unwrap(),
        top["height"].as_u64().unwrap(),
    );
    assert!(
        (x..x + w).contains(&51) && (y..y + h).contains(&65),
        "hotspot {top} contains the overheated neutral at (51,65)"
    );
    let reasoning = &node(&run, "reasoning")["output"];
    assert!(!reasoning["steps"].as_array().unwrap().is_empty());
    assert!(
        reasoning["safety"].as_array().unwrap().iter().any(|s| s.as_str().unwrap().contains("lockout")),
        "{reasoning}"
    );
    // The plan stays on the overheated termination: no battery, UPS, intercell, capacitor or contactor steps,
    // and every step names the manual section it comes from.
    for step in reasoning["steps"].as_array().unwrap() {
        let step = step.as_str().unwrap();
        let words: Vec<String> = step.split(|c: char| !c.is_alphanumeric()).map(str::to_lowercase).collect();
        for banned in
            ["battery", "batteries", "ups", "intercell", "capacitor", "capacitors", "contactor", "contactors"]
        {
            assert!(!words.iter().any(|w| w == banned), "step mentions {banned}: {step}");
        }
        assert!(step.contains("[manual: "), "step names no source section: {step}");
    }
    let knowledge = &node(&run, "knowledge")["output"]["results"];
    for hit in knowledge.as_array().unwrap() {
        assert_eq!(hit["group"], "termination", "{hit}");
    }
    // The image travelled as a blob reference that vision reads from the blob store, not as base64 or HTTP.
    assert!(run["input"]["image"].as_str().unwrap().starts_with("blob:"), "{}", run["input"]);
}

#[test]
fn a_uniform_pipe_has_no_deficiency() {
    let dir = tempfile::tempdir().unwrap();
    let (code, run, err) =
        diagnose(&dir.path().join("sb.db"), &data("rt_ax8.jpg"), &["--equipment", "panel"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(node(&run, "vision")["output"]["severity"]["band"], "none");
}

#[test]
fn without_equipment_the_image_is_unknown_and_gets_no_band() {
    let dir = tempfile::tempdir().unwrap();
    let (code, run, err) = diagnose(&dir.path().join("sb.db"), &data("wm01_200_deg_neutral.jpg"), &[]);
    assert_eq!(code, Some(0), "{err}\n{run}");
    let vision = &node(&run, "vision")["output"];
    assert_eq!(vision["equipment"], "unknown", "{vision}");
    assert_eq!(vision["equipment_source"], "none");
    assert!(vision["equipment_reason"].as_str().unwrap().contains("unknown"), "{vision}");
    assert!(vision["severity"]["band"].is_null(), "no NETA band: {}", vision["severity"]);
    assert_eq!(vision["severity"]["standard"], "none");
    assert!(vision["delta_t_ref_c"].as_f64().unwrap() > 15.0, "the ΔT figures are still reported");
    let reasoning = &node(&run, "reasoning")["output"];
    let first = reasoning["steps"][0].as_str().unwrap();
    assert!(first.starts_with("Confirm what the image shows"), "{reasoning}");
    assert!(reasoning["summary"].as_str().unwrap().starts_with("Not graded"), "{reasoning}");
}

#[test]
fn a_pv_module_gets_an_iec_62446_3_class() {
    let dir = tempfile::tempdir().unwrap();
    let (code, run, err) =
        diagnose(&dir.path().join("sb.db"), &data("rt_zenmuse_xtr.jpg"), &["--equipment", "pv-module"]);
    assert_eq!(code, Some(0), "{err}\n{run}");
    let severity = &node(&run, "vision")["output"]["severity"];
    assert_eq!(severity["standard"], "IEC TS 62446-3", "{severity}");
    assert!(severity["band"].is_null(), "{severity}");
    assert!(severity["class"].as_str().unwrap().starts_with("CoA "), "{severity}");
}

#[test]
fn the_evaluation_command_prints_the_scores() {
    let out = Command::new(switchboard())
        .args(["diagnose", "--eval", "--data"])
        .arg(repo_root().join("../shared/data/thermal"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let summary = text.lines().last().unwrap();
    for word in ["recall@3", "precision@3", "plan precision"] {
        assert!(summary.contains(word), "{summary}");
    }
    let plan: f64 = summary
        .split("plan precision ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert!(plan >= 0.9, "{summary}");
    let help = Command::new(switchboard()).args(["diagnose", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("--eval"));
}

#[test]
fn corrupt_truncated_and_oversize_images_fail_clearly_and_are_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sb.db");
    let corrupt = dir.path().join("corrupt.jpg");
    std::fs::write(&corrupt, b"\xff\xd8\xff\xe0 this is not really a jpeg").unwrap();
    let truncated = dir.path().join("truncated.jpg");
    let full = std::fs::read(data("wm01_200_deg_neutral.jpg")).unwrap();
    std::fs::write(&truncated, &full[..5000]).unwrap();
    let big = dir.path().join("big.jpg");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(100 * 1000 * 1000).unwrap();
    let cases = [
        (&corrupt, "cannot read thermal image"),
        (&truncated, "truncated FLIR APP1 chunk"),
        (&big, "exceeds the blob size limit"),
    ];
    for (image, want) in cases {
        let (code, run, err) = diagnose(&db, image, &[]);
        assert_eq!(code, Some(1), "{err}");
        assert_eq!(run["outcome"], "failed", "{run}");
        assert!(run["error"].as_str().unwrap().contains(want), "{}: {}", image.display(), run["error"]);
    }
    // Every run is in the store, failed with its reason.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let runs = rt.block_on(async {
        let store = switchboard_store::Store::open(&switchboard_store::StoreConfig {
            path: db.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
        store.runs(10).await.unwrap()
    });
    assert_eq!(runs.len(), 3);
    assert!(runs.iter().all(|r| r.outcome == "failed" && r.error.is_some()), "{runs:?}");
}

//! The official conformance suite's client scenarios that a probing client can satisfy,
//! run with `switchboard probe` as the client under test (`conformance client --command`).
//! Scenarios that require calling a tool (tools_call, http-custom-headers, MRTR, …) do
//! not apply to a probe; they are exercised through the router endpoint instead.

use std::process::Command;

use crate::*;

/// Runs one scenario and returns its checks. Node's stdout is unreliable when piped
/// (the suite exits before flushing), so the verdict is read from `checks.json`.
fn run(suite: &str, scenario: &str, min_success: usize) {
    let cli = node_dir().join("node_modules").join(suite).join("dist/index.js");
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(node())
        .arg(&cli)
        .args(["client", "--command", &format!("{} probe", switchboard()), "--scenario", scenario, "-o"])
        .arg(out_dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{suite} {scenario} exited with {:?}: {stderr}", out.status);
    let run_dir =
        std::fs::read_dir(out_dir.path()).unwrap().next().expect("a result directory").unwrap().path();
    let checks: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("checks.json")).unwrap()).unwrap();
    let bad: Vec<_> =
        checks.iter().filter(|c| c["status"] == "FAILURE" || c["status"] == "WARNING").collect();
    assert!(bad.is_empty(), "{suite} {scenario}: {bad:#?}");
    let ok = checks.iter().filter(|c| c["status"] == "SUCCESS").count();
    assert!(
        ok >= min_success,
        "{suite} {scenario}: {ok} successful checks, expected at least {min_success}: {checks:#?}"
    );
    println!("{suite} {scenario}: {ok} checks passed");
}

#[test]
fn v0_1_16_initialize() {
    run("conformance-0-1", "initialize", 1);
}

#[test]
fn v0_2_initialize() {
    run("conformance-0-2", "initialize", 1);
}

#[test]
fn v0_2_request_metadata() {
    run("conformance-0-2", "request-metadata", 5);
}

#[test]
fn v0_2_http_standard_headers() {
    run("conformance-0-2", "http-standard-headers", 4);
}

#[test]
fn v0_2_json_schema_ref_no_deref() {
    run("conformance-0-2", "json-schema-ref-no-deref", 1);
}

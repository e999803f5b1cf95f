//! Smoke test: the measurement runs end to end with tiny numbers, for both upstream
//! transports; no timing assertions.

use std::time::Duration;

use switchboard_bench::{BenchConfig, Report, Upstream, run};

fn check(report: &Report) {
    assert!(!report.truncated);
    for p in [&report.direct, &report.router] {
        assert_eq!(p.requests, 50);
        assert_eq!(p.ok, 50, "{report:?}");
        assert!(p.p50_us > 0.0 && p.p50_us <= p.p99_us, "{report:?}");
        assert!(p.mean_us > 0.0 && p.requests_per_sec > 0.0, "{report:?}");
    }
    assert!(report.throughput_ratio > 0.0);
    let json = serde_json::to_value(report).expect("json");
    for k in ["upstream", "direct", "router", "added_p50_us", "added_p99_us", "throughput_ratio"] {
        assert!(json.get(k).is_some(), "{k} missing");
    }
    assert!(report.table().contains("router"));
}

fn tiny(upstream: Upstream) -> BenchConfig {
    BenchConfig {
        upstream,
        // The test binary lives in target/<profile>/deps; the fixture one level up (built by
        // the test script's `cargo build --workspace --all-targets`).
        fixture_bin: std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().and_then(|d| d.parent()).map(|d| d.join("mcp-fixture"))),
        requests: 50,
        concurrency: 4,
        warmup: 5,
        max_duration: Duration::from_secs(60),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_run_over_http_succeeds_and_reports_both_phases() {
    let report = run(&tiny(Upstream::Http)).await.expect("run");
    check(&report);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_run_over_stdio_succeeds_and_reports_both_phases() {
    let report = run(&tiny(Upstream::Stdio)).await.expect("run");
    check(&report);
}

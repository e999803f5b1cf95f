//! Smoke test: the measurement runs end to end with tiny numbers, for both upstream
//! transports; no timing assertions.

use std::time::Duration;

use switchboard_bench::{BenchConfig, Report, Upstream, run};

fn check(report: &Report) {
    assert!(!report.truncated);
    for (c, n) in [(&report.latency, 20), (&report.throughput, 50)] {
        for p in [&c.direct, &c.router] {
            assert_eq!(p.requests, n);
            assert_eq!(p.ok, n, "{report:?}");
            assert!(p.p50_us > 0.0 && p.p50_us <= p.p99_us, "{report:?}");
            assert!(p.mean_us > 0.0 && p.requests_per_sec > 0.0, "{report:?}");
        }
        assert!(c.throughput_ratio > 0.0);
    }
    assert_eq!(report.latency.clients, 1);
    assert_eq!(report.throughput.clients, 4);
    if cfg!(target_os = "linux") {
        // The router's threads are found and read (a tiny run may stay under one 10 ms tick,
        // so no figure is asserted: the benchmark reports them).
        let router = report.cpu.router_us.expect("router threads measured");
        let process = report.cpu.process_routed_us.expect("process measured");
        assert!(router >= 0.0 && process >= 0.0, "{report:?}");
    }
    let json = serde_json::to_value(report).expect("json");
    for k in ["upstream", "latency", "throughput", "cpu"] {
        assert!(json.get(k).is_some(), "{k} missing");
    }
    for k in ["added_p50_us", "added_p99_us", "throughput_ratio", "direct", "router"] {
        assert!(json["latency"].get(k).is_some(), "latency.{k} missing");
    }
    assert!(report.table().contains("CPU per call"));
}

fn tiny(upstream: Upstream) -> BenchConfig {
    BenchConfig {
        upstream,
        // The test binary lives in target/<profile>/deps; the fixture one level up (built by
        // the test script's `cargo build --workspace --all-targets`).
        fixture_bin: std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().and_then(|d| d.parent()).map(|d| d.join("mcp-fixture"))),
        latency_requests: 20,
        requests: 50,
        concurrency: 4,
        router_threads: 1,
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

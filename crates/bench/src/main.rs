//! `endpoint-bench`: `tools/call` latency and throughput through the router versus direct.

use std::time::Duration;

use clap::Parser;
use switchboard_bench::{BenchConfig, Upstream, run};

/// Measures `tools/call echo` p50/p99/mean latency and throughput against an rmcp fixture
/// directly and through the router's `/mcp` endpoint, on loopback.
#[derive(Parser, Debug)]
#[command(name = "endpoint-bench")]
struct Args {
    /// The upstream's transport: an in-process HTTP fixture, or the mcp-fixture binary over stdio.
    #[arg(long, value_enum, default_value_t = Upstream::Http)]
    upstream: Upstream,
    /// The mcp-fixture binary for `--upstream stdio` (default: beside this executable).
    #[arg(long)]
    fixture_bin: Option<std::path::PathBuf>,
    /// Measured requests of each one-client (latency) phase.
    #[arg(long, default_value_t = 2000)]
    latency_requests: usize,
    /// Measured requests of each concurrent (throughput) phase.
    #[arg(long, default_value_t = 5000)]
    requests: usize,
    /// Worker threads of the router's runtime.
    #[arg(long, default_value_t = 2)]
    router_threads: usize,
    /// Concurrent keep-alive clients of the throughput phases.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Unmeasured warm-up requests per phase.
    #[arg(long, default_value_t = 200)]
    warmup: usize,
    /// Stop the whole run after this many seconds.
    #[arg(long, default_value_t = 180)]
    max_seconds: u64,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let cfg = BenchConfig {
        upstream: args.upstream,
        fixture_bin: args.fixture_bin,
        latency_requests: args.latency_requests,
        requests: args.requests,
        router_threads: args.router_threads,
        concurrency: args.concurrency,
        warmup: args.warmup,
        max_duration: Duration::from_secs(args.max_seconds),
    };
    let report = tokio::time::timeout(cfg.max_duration + Duration::from_secs(30), run(&cfg)).await??;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.table());
    }
    Ok(())
}

//! `switchboard diagnose IMAGE` and `bench-diagnose`: the thermal diagnosis flow through the router.
//!
//! The runs go through the app's diagnosis service ([`Diagnosis`], the one the panel uses).
//! Everything runs in this process but on the real paths: the image goes into the blob
//! store and reaches vision as a `blob:<sha256>` reference (read from the blob directory,
//! never over HTTP; the store is also served on loopback), the built-in servers are reached through
//! the registry's MCP connections, and the run is persisted (a refused upload is stored
//! as a failed run too).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::{Map, Value, json};
use switchboard_app::config::AppConfig;
use switchboard_app::diagnosis::Diagnosis;
use switchboard_app::{App, AppOptions};
use switchboard_flow::{Engine, RunEvent, RunOptions, RunOutcome, RunRecord};

use super::Sources;

/// What to diagnose and how.
#[derive(Debug, Clone, Default)]
pub(crate) struct DiagnoseOptions {
    /// The image file.
    pub image: PathBuf,
    /// A flow file instead of the default one.
    pub flow: Option<PathBuf>,
    /// Extra run inputs (emissivity, ambient_c, context, …).
    pub extra: Map<String, Value>,
    /// Draw progress on stderr.
    pub progress: bool,
}

/// `switchboard diagnose`'s arguments (see the command's help).
#[derive(Debug)]
pub(crate) struct Args {
    pub image: Option<PathBuf>,
    pub flow: Option<PathBuf>,
    pub json: bool,
    pub emissivity: Option<f64>,
    pub ambient_c: Option<f64>,
    pub context: Option<String>,
    pub max_bytes: u64,
    pub equipment: Option<String>,
    pub eval: bool,
    pub data: Option<PathBuf>,
}

/// Runs `switchboard diagnose`.
pub(crate) async fn command(sources: Sources<'_>, args: Args) -> ExitCode {
    if std::env::var_os("RUST_LOG").is_some() {
        super::init_tracing();
    }
    if args.eval {
        return match eval(args.data.as_deref()).await {
            Ok(report) => {
                if args.json {
                    println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
                } else {
                    print!("{}", report.render());
                }
                if report.failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
            }
            Err(e) => {
                eprintln!("switchboard: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let Some(image) = args.image else {
        eprintln!("switchboard: diagnose needs an IMAGE (or --eval)");
        return ExitCode::FAILURE;
    };
    let mut extra = serde_json::Map::new();
    if let Some(e) = args.equipment {
        extra.insert("equipment".into(), e.into());
    }
    if let Some(e) = args.emissivity {
        extra.insert("emissivity".into(), e.into());
    }
    if let Some(a) = args.ambient_c {
        extra.insert("ambient_c".into(), a.into());
    }
    if let Some(c) = args.context {
        extra.insert("context".into(), c.into());
    }
    let opts = DiagnoseOptions { image, flow: args.flow, extra, progress: !args.json };
    let result = async {
        let cfg = sources.load()?;
        let env = Env::start(&cfg, args.max_bytes).await?;
        let record = env.diagnose(&opts).await;
        env.shutdown().await;
        record
    }
    .await;
    match result {
        Ok(record) => {
            if args.json {
                outln!("{}", serde_json::to_string_pretty(&record).unwrap_or_default());
            } else {
                out!("{}", render(&record));
            }
            if record.outcome == RunOutcome::Ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => {
            eprintln!("switchboard: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `switchboard bench-diagnose`.
pub(crate) async fn bench_command(sources: Sources<'_>, image: &Path, runs: usize) -> ExitCode {
    let result = async {
        let cfg = sources.load()?;
        let env = Env::start(&cfg, switchboard_app::blobs::DEFAULT_MAX_BLOB).await?;
        let r = bench(&env, image, runs.max(1)).await;
        env.shutdown().await;
        r
    }
    .await;
    match result {
        Ok(r) => {
            outln!("runs            {}", r.runs);
            for (node, p50, p95) in &r.nodes {
                outln!("node {node:<10} p50 {p50:>7.1} ms   p95 {p95:>7.1} ms");
            }
            outln!("end to end      p50 {:>7.1} ms   p95 {:>7.1} ms", r.end_to_end.0, r.end_to_end.1);
            outln!(
                "baseline        p50 {:>7.1} ms   (thermal library alone, same image, same run)",
                r.baseline_ms
            );
            outln!("ratio           {:.2}× baseline", r.ratio);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("switchboard: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A running diagnosis environment: the router ([`App`]) with the built-in servers ready and
/// its HTTP listener on loopback, and the diagnosis service over it.
pub(crate) struct Env {
    /// The router.
    pub app: App,
    /// The runs (the same service the panel's routes use).
    pub diagnosis: Diagnosis,
}

impl Env {
    /// Starts everything the flow needs and waits for the servers to be ready. Without a
    /// built-in server in the configuration, the embedded default's are added.
    pub async fn start(config: &AppConfig, max_bytes: u64) -> anyhow::Result<Env> {
        let mut config = config.clone();
        if !config
            .servers
            .iter()
            .any(|s| matches!(s.transport, switchboard_router::TransportSpec::Builtin { .. }))
        {
            config.servers.extend(
                switchboard_app::config::parse(
                    switchboard_app::config::EMBEDDED_DEFAULT,
                    "embedded default config",
                    &[],
                    None,
                )?
                .servers,
            );
        }
        let app =
            App::build(&config, AppOptions { max_blob: Some(max_bytes), ..AppOptions::default() }).await?;
        app.registry().wait_settled(Duration::from_secs(30)).await;
        // The blob store is also served on loopback, as `serve` serves it.
        app.listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .context("binding the blob listener")?;
        let diagnosis = app.diagnosis().clone();
        Ok(Env { app, diagnosis })
    }

    /// Runs a diagnosis.
    pub async fn diagnose(&self, opts: &DiagnoseOptions) -> anyhow::Result<RunRecord> {
        let flow = self.diagnosis.load_flow(opts.flow.as_deref())?;
        let mut input = opts.extra.clone();
        let blob = match self.app.blobs().put_file(&opts.image).await {
            Ok(b) => b,
            Err(e) => {
                // The refusal is a failed run like any other, so it shows in the run history.
                let reason = format!("image {}: {e}", opts.image.display());
                input.insert("image".into(), json!(opts.image.display().to_string()));
                return Ok(self.diagnosis.record_refused(&flow, Value::Object(input), reason).await?);
            }
        };
        // A blob reference: vision reads it from the blob directory, not over HTTP.
        input.insert("image".into(), json!(format!("blob:{}", blob.sha256)));
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        let draw = opts.progress;
        let total = flow.nodes().len();
        let painter = tokio::spawn(async move {
            let mut done = 0;
            while let Some(ev) = rx.recv().await {
                if matches!(ev, RunEvent::NodeFinished { .. }) {
                    done += 1;
                }
                if draw {
                    render_event(&ev, done, total);
                }
            }
        });
        let record = self.diagnosis.run(&flow, Value::Object(input), Some(tx)).await;
        let _ = painter.await;
        Ok(record?)
    }

    /// Stops the runs, the listener, the servers and the store, in that order.
    pub async fn shutdown(self) {
        self.app.shutdown(Duration::from_secs(5)).await;
    }
}

/// A run-level progress bar: `[######......] 1/3`.
fn run_bar(done: usize, total: usize) -> String {
    const WIDTH: usize = 12;
    let filled = (done.min(total) * WIDTH).checked_div(total).unwrap_or(WIDTH);
    format!("[{}{}] {done}/{total}", "#".repeat(filled), ".".repeat(WIDTH - filled))
}

fn render_event(ev: &RunEvent, done: usize, total: usize) {
    let mut err = std::io::stderr().lock();
    let _ = match ev {
        RunEvent::NodeStarted { node, tool, .. } => {
            writeln!(err, "{} {node:<10} {tool} …", run_bar(done, total))
        }
        RunEvent::NodeProgress { node, progress, total, message, .. } => {
            let bar = total.filter(|t| *t > 0.0).map(|t| {
                let filled = ((progress / t).clamp(0.0, 1.0) * 20.0).round() as usize;
                format!("[{}{}]", "#".repeat(filled), ".".repeat(20 - filled))
            });
            writeln!(
                err,
                "  {node:<10} {} {}",
                bar.unwrap_or_else(|| format!("{progress}")),
                message.as_deref().unwrap_or("")
            )
        }
        other => {
            let v = serde_json::to_value(other).unwrap_or(Value::Null);
            match v.get("type").and_then(Value::as_str) {
                Some("node_finished") => writeln!(
                    err,
                    "{} {:<10} {} in {} ms",
                    run_bar(done, total),
                    v["node"].as_str().unwrap_or("?"),
                    v["outcome"].as_str().unwrap_or("?"),
                    v["latency_ms"].as_u64().map_or_else(|| v["latency_ms"].to_string(), |n| n.to_string())
                ),
                Some(t) if t != "run_started" && t != "run_finished" => writeln!(err, "  {t}: {v}"),
                _ => Ok(()),
            }
        }
    };
}

/// Renders a finished run for a terminal.
pub(crate) fn render(record: &RunRecord) -> String {
    let mut out = String::new();
    if record.outcome != RunOutcome::Ok {
        let outcome = format!("{:?}", record.outcome).to_lowercase();
        out += &format!("diagnosis {outcome}: {}\n", record.error.as_deref().unwrap_or("unknown error"));
        return out;
    }
    let node = |id: &str| {
        record.nodes.iter().find(|n| n.id == id).and_then(|n| n.output.clone()).unwrap_or(Value::Null)
    };
    let vision = node("vision");
    let reasoning = node("reasoning");
    let sev = &vision["severity"];
    out += &format!("run           {}\n", record.run_id);
    out += &format!("analysis      {}\n", vision["analysis"].as_str().unwrap_or("?"));
    if let (Some(min), Some(max)) = (vision["min_c"].as_f64(), vision["max_c"].as_f64()) {
        out += &format!("temperatures  {min:.1} … {max:.1} °C\n");
    }
    if let Some(d) = vision["delta_t_ref_c"].as_f64() {
        out +=
            &format!("ΔT reference  {d:.1} °C ({})\n", vision["reference"]["method"].as_str().unwrap_or("?"));
    }
    if let Some(h) = vision["hotspots"].as_array().and_then(|a| a.first()) {
        out += &format!(
            "hotspot       max {:.1} °C at ({}, {}), {} px\n",
            h["max_c"].as_f64().unwrap_or(f64::NAN),
            h["centroid"]["x"],
            h["centroid"]["y"],
            h["area_px"]
        );
    }
    out += &format!(
        "equipment     {} ({})\n",
        vision["equipment"].as_str().unwrap_or("?"),
        vision["equipment_reason"].as_str().unwrap_or("")
    );
    let grade = match (sev["band"].as_str(), sev["class"].as_str()) {
        (Some(b), _) => format!("{b} ({})", sev["standard"].as_str().unwrap_or("NETA")),
        (None, Some(c)) => format!("{c} ({})", sev["standard"].as_str().unwrap_or("IEC TS 62446-3")),
        (None, None) => "not graded".to_owned(),
    };
    out += &format!("severity      {grade} — {}\n", sev["action"].as_str().unwrap_or(""));
    if let Some(s) = reasoning["summary"].as_str() {
        out += &format!("summary       {s}\n");
    }
    for (i, step) in reasoning["steps"].as_array().into_iter().flatten().enumerate() {
        out += &format!("  {}. {}\n", i + 1, step.as_str().map_or_else(|| step.to_string(), str::to_owned));
    }
    for s in reasoning["safety"].as_array().into_iter().flatten() {
        out += &format!("  ⚠ {}\n", s.as_str().map_or_else(|| s.to_string(), str::to_owned));
    }
    let lat: Vec<String> = record.nodes.iter().map(|n| format!("{} {} ms", n.id, n.latency_ms)).collect();
    out += &format!("latency       {}\n", lat.join(", "));
    out
}

/// Runs the labelled diagnosis evaluation (`switchboard diagnose --eval`) on the embedded knowledge corpus.
///
/// `data` is the thermal sample directory; default `$SWITCHBOARD_THERMAL_DATA`, else the first
/// `shared/data/thermal` above the current directory.
pub(crate) async fn eval(data: Option<&Path>) -> anyhow::Result<switchboard_servers::eval::EvalReport> {
    let dir = match data {
        Some(d) => d.to_path_buf(),
        None => match std::env::var_os("SWITCHBOARD_THERMAL_DATA") {
            Some(d) => PathBuf::from(d),
            None => {
                let cwd = std::env::current_dir()?;
                cwd.ancestors().map(|a| a.join("shared/data/thermal")).find(|p| p.is_dir()).context(
                    "thermal sample directory not found: pass --data DIR or set SWITCHBOARD_THERMAL_DATA",
                )?
            }
        },
    };
    anyhow::ensure!(dir.is_dir(), "{} is not a directory", dir.display());
    let cases = switchboard_servers::eval::cases().map_err(anyhow::Error::msg)?;
    let kb = switchboard_servers::knowledge::KnowledgeBase::embedded().await?;
    Ok(switchboard_servers::eval::run(&cases, kb, &dir).await)
}

/// Latency figures of repeated diagnoses of one image.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct BenchReport {
    /// Runs measured (after one warm-up run).
    pub runs: usize,
    /// Median and 95th percentile of each node, in ms, by node id.
    pub nodes: Vec<(String, f64, f64)>,
    /// Median and 95th percentile of the whole run (upload excluded), in ms.
    pub end_to_end: (f64, f64),
    /// Median of the baseline — decoding and analysing the same image with the thermal
    /// library directly, no MCP, no flow — in ms.
    pub baseline_ms: f64,
    /// `end_to_end median / baseline median`: what the router, MCP and the flow cost on top.
    pub ratio: f64,
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Runs the default flow `runs` times on `image` and the library baseline as often.
pub(crate) async fn bench(env: &Env, image: &Path, runs: usize) -> anyhow::Result<BenchReport> {
    let flow = env.diagnosis.load_flow(None)?;
    let engine = Engine::new(Arc::new(env.app.invoker()));
    let blob = env.app.blobs().put_file(image).await?;
    let input = json!({"image": format!("blob:{}", blob.sha256)});
    let bytes = tokio::fs::read(image).await?;
    let mut per_node: std::collections::BTreeMap<String, Vec<f64>> = std::collections::BTreeMap::new();
    let mut e2e = Vec::new();
    let mut base = Vec::new();
    for i in 0..=runs {
        let t = std::time::Instant::now();
        let rec = engine.run(&flow, input.clone(), RunOptions::default()).await;
        let total = t.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(rec.outcome == RunOutcome::Ok, "bench run failed: {}", rec.error.unwrap_or_default());
        let t = std::time::Instant::now();
        let img = switchboard_thermal::decode(&bytes, &switchboard_thermal::DecodeOptions::default())?;
        let _ = img.hotspots(&switchboard_thermal::HotspotConfig::default())?;
        let b = t.elapsed().as_secs_f64() * 1000.0;
        if i == 0 {
            continue; // warm-up
        }
        e2e.push(total);
        base.push(b);
        for n in &rec.nodes {
            per_node.entry(n.id.clone()).or_default().push(n.latency_ms as f64);
        }
    }
    let nodes = per_node.into_iter().map(|(k, mut v)| (k, pct(&mut v, 0.5), pct(&mut v, 0.95))).collect();
    let end_to_end = (pct(&mut e2e, 0.5), pct(&mut e2e, 0.95));
    let baseline_ms = pct(&mut base, 0.5);
    Ok(BenchReport { runs, nodes, end_to_end, baseline_ms, ratio: end_to_end.0 / baseline_ms })
}

//! Replicas failing under load: one killed while 2 000 idempotent calls run (none lost), one
//! crashed while non-idempotent calls run (none executed twice, by the replicas' own counters),
//! one partitioned (unavailable, then back).

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_router::ServerState;
use tokio::io::AsyncBufReadExt;
use tokio::sync::Semaphore;

use switchboard_router::schedule::KeySource;

use super::{call_with_key, decisions, harness_of, replica_of, replicas};
use crate::harness::*;

/// Calls in flight at once in the load tests.
const CONCURRENCY: usize = 16;

/// The `switchboard-chaos` binary, built beside the test binary.
fn chaos_bin() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().and_then(|d| d.parent()).unwrap().join("switchboard-chaos");
    assert!(bin.exists(), "{} is missing: run `cargo build --workspace`", bin.display());
    bin
}

/// A replica as a process of its own (so it can be killed), with its MCP URL.
async fn spawn_replica(id: &str) -> (tokio::process::Child, String) {
    spawn_replica_with(id, &[]).await
}

/// [`spawn_replica`] with more flags (`--register`, `--faults`).
async fn spawn_replica_with(id: &str, extra: &[&str]) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(chaos_bin())
        .args(["--listen", "127.0.0.1:0", "--replica-id", id])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the chaos binary starts");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(u) = line.strip_prefix("listening ") {
                return u.to_owned();
            }
        }
        panic!("the chaos binary exited before listening");
    })
    .await
    .expect("the chaos binary listens in time");
    (child, url)
}

/// A replica's counters over its control API.
async fn counters(url: &str) -> Value {
    let control = url.replace("/mcp", "/chaos");
    reqwest::get(&control).await.unwrap().json::<Value>().await.unwrap()["counters"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_replica_under_load_loses_no_idempotent_call() {
    let mut procs = Vec::new();
    let mut h = Harness::new();
    for i in 1..=3 {
        let (child, url) = spawn_replica(&format!("r{i}")).await;
        h = h.url_upstream(&format!("chaos-{i}"), &url);
        procs.push((child, url));
    }
    let env = Arc::new(h.start().await);
    let gate = Arc::new(Semaphore::new(CONCURRENCY));
    let done = Arc::new(AtomicUsize::new(0));
    let mut calls = Vec::new();
    for n in 0..2000 {
        let (env, gate, done) = (env.clone(), gate.clone(), done.clone());
        calls.push(tokio::spawn(async move {
            let _permit = gate.acquire().await.unwrap();
            let r = env.client.call_tool("read", json!({"key": format!("k{}", n % 50)})).await;
            done.fetch_add(1, Ordering::Relaxed);
            r
        }));
    }
    // Once a quarter of the calls are through, replica 2 dies (SIGKILL: connections reset).
    tokio::time::timeout(PATIENCE, async {
        while done.load(Ordering::Relaxed) < 500 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("a quarter of the calls in time");
    procs[1].0.start_kill().unwrap();
    let _ = procs[1].0.wait().await;
    let mut served = BTreeMap::new();
    for c in calls {
        let r = tokio::time::timeout(PATIENCE * 4, c).await.expect("every call ends").unwrap();
        assert!(r.get("result").is_some() && r["result"]["isError"] != true, "a call was lost: {r}");
        *served.entry(replica_of(&r)).or_insert(0) += 1;
    }
    assert_eq!(served.values().sum::<usize>(), 2000, "{served:?}");
    for i in [0, 2] {
        let c = counters(&procs[i].1).await;
        let executed = c["executions"]["read"].as_u64().unwrap();
        assert_eq!(executed as usize, served[&format!("r{}", i + 1)], "the survivors' counters agree");
    }
    let retried = decisions(&env, |d| d.attempt > 0);
    assert!(!retried.is_empty(), "calls cut off by the kill were retried elsewhere");
    assert!(
        retried
            .iter()
            .all(|d| d.excluded.iter().all(|s| s == "chaos-2") && d.chosen.as_deref() != Some("chaos-2"))
    );
    for (mut child, _) in procs {
        let _ = child.kill().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_idempotent_tool_is_never_executed_twice() {
    let reps = replicas(3).await;
    let env = Arc::new(harness_of(&reps).start().await);
    let gate = Arc::new(Semaphore::new(CONCURRENCY));
    let done = Arc::new(AtomicUsize::new(0));
    let mut calls = Vec::new();
    for n in 0..300 {
        let (env, gate, done) = (env.clone(), gate.clone(), done.clone());
        calls.push(tokio::spawn(async move {
            let _permit = gate.acquire().await.unwrap();
            // Slow enough that calls are in flight on the replica when it crashes.
            let r = env.client.call_tool("append", json!({"key": format!("once-{n}"), "item": "x"})).await;
            done.fetch_add(1, Ordering::Relaxed);
            r
        }));
        if n == 0 {
            reps.iter().for_each(|r| r.faults().set_slow_tools(Duration::from_millis(20)));
        }
    }
    tokio::time::timeout(PATIENCE, async {
        while done.load(Ordering::Relaxed) < 100 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("a third of the calls in time");
    reps[1].faults().crash();
    let mut ok = Vec::new();
    let mut failed = 0;
    for (n, c) in calls.into_iter().enumerate() {
        let r = tokio::time::timeout(PATIENCE * 4, c).await.expect("every call ends").unwrap();
        if r.get("result").is_some() {
            ok.push(n);
        } else {
            failed += 1;
            assert_eq!(r["error"]["code"], -32051, "a cut-off append fails, never silently: {r}");
        }
    }
    for n in 0..300 {
        let key = format!("once-{n}");
        let runs: u64 = reps.iter().map(|r| r.counters().appends(&key)).sum();
        assert!(runs <= 1, "append {key} ran {runs} times");
        if ok.contains(&n) {
            assert_eq!(runs, 1, "append {key} answered without running");
        }
    }
    let retried_appends = decisions(&env, |d| d.target == "tool \"append\"" && d.attempt > 0);
    assert!(
        retried_appends.iter().all(|d| d.excluded == ["chaos-2"]),
        "an append is retried only when it cannot have run (refused connection), never after a reset"
    );
    eprintln!(
        "appends: {} ok, {failed} failed with the crash, {} retried safely",
        ok.len(),
        retried_appends.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_replica_is_unavailable_and_comes_back_after_it_heals() {
    let reps = replicas(3).await;
    let env = harness_of(&reps)
        .config(|c| {
            c.registry.probe_interval = Duration::from_millis(300);
            c.registry.probe_timeout = Duration::from_millis(200);
            c.registry.failure_threshold = 1;
        })
        .start()
        .await;
    reps[2].faults().set_partition(true);
    env.registry()
        .wait_for("chaos-3", ServerState::Unavailable, PATIENCE)
        .await
        .expect("partitioned: unavailable");
    for _ in 0..6 {
        let r = env.client.call_tool("whoami", json!({})).await;
        assert_ne!(replica_of(&r), "r3");
    }
    let d = decisions(&env, |d| d.target == "tool \"whoami\"");
    let c3 = d[0].candidates.iter().find(|c| c.server == "chaos-3").unwrap();
    assert!(c3.rejected.as_deref().unwrap().starts_with("unavailable"), "{c3:?}");
    reps[2].faults().set_partition(false);
    env.registry().wait_for("chaos-3", ServerState::Ready, PATIENCE).await.expect("healed: ready again");
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..9 {
        seen.insert(replica_of(&env.client.call_tool("whoami", json!({})).await));
    }
    assert!(seen.contains("r3"), "the healed replica serves again: {seen:?}");
}

/// Replicas as processes of their own that register themselves (`--register`): each reports
/// its own CPU; the one started overloaded reports 100 % and gets no new keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_registered_replicas_report_their_load_and_the_overloaded_one_gets_no_new_keys() {
    let env = Harness::new().start().await;
    let mut procs = Vec::new();
    for i in 1..=3 {
        let (id, server) = (format!("r{i}"), format!("chaos-{i}"));
        let mut args = vec!["--register", env.base.as_str(), "--server-id", server.as_str()];
        if i == 1 {
            args.extend(["--faults", r#"{"overload": true}"#]);
        }
        procs.push(spawn_replica_with(&id, &args).await);
    }
    for i in 1..=3 {
        let name = format!("chaos-{i}");
        env.registry().wait_for(&name, ServerState::Ready, PATIENCE).await.expect(&name);
    }
    let entry = env.registry().entry("chaos-1").unwrap();
    let age = env.registry().scheduler().config().report_max_age();
    tokio::time::timeout(PATIENCE, async {
        while entry.load().fresh_report(age).is_none_or(|r| r.cpu_usage_percent < 100.0) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the overloaded replica's status report arrives");
    let groups = env.api_json("/api/groups").await;
    assert_eq!(
        groups[0]["members"].as_array().map(Vec::len),
        Some(3),
        "registered replicas are one group: {groups}"
    );
    for k in 0..9 {
        let r = call_with_key(&env, &format!("registered-{k}"), "whoami", json!({})).await;
        assert_ne!(replica_of(&r), "r1", "{r}");
    }
    let d = decisions(&env, |d| d.key_source == KeySource::Header);
    assert_eq!(d.len(), 9, "no call needed a retry: {d:?}");
    for x in &d {
        assert_eq!((x.candidates[0].cpu_percent, x.candidates[0].overloaded), (Some(100.0), true), "{x:?}");
        assert!(x.reason.contains("overloaded, no new keys: chaos-1"), "{}", x.reason);
    }
    assert_eq!(counters(&procs[0].1).await["executions"]["whoami"].as_u64().unwrap_or(0), 0);
    for (mut child, _) in procs {
        let _ = child.kill().await;
    }
}

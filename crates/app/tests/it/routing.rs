//! Routing across replicas (issue: replica groups, the three-layer scheduler, affinity,
//! fallback, safe retries): three `switchboard-chaos` replicas behind the router, faults
//! switched at run time, and every decision read back with its reason.

mod faults;
mod health;

use std::collections::BTreeMap;

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use switchboard_chaos::{Chaos, ChaosConfig, ChaosHandle, FailTools};
use switchboard_router::registry::LoadReport;
use switchboard_router::schedule::{Decision, KeySource, Layer};

use crate::harness::*;

/// `n` in-process replicas `r1`…`rn`.
pub async fn replicas(n: usize) -> Vec<ChaosHandle> {
    let mut out = Vec::new();
    for i in 1..=n {
        let cfg = ChaosConfig { replica_id: Some(format!("r{i}")), ..ChaosConfig::default() };
        out.push(Chaos::bind(cfg).await.expect("a chaos replica binds"));
    }
    out
}

/// A harness with the replicas as servers `chaos-1`…`chaos-n` (no group declared: detected).
pub fn harness_of(replicas: &[ChaosHandle]) -> Harness {
    replicas
        .iter()
        .enumerate()
        .fold(Harness::new(), |h, (i, r)| h.url_upstream(&format!("chaos-{}", i + 1), r.url()))
}

/// The `replica` a tool result names.
pub fn replica_of(answer: &Value) -> String {
    answer["result"]["structuredContent"]["replica"]
        .as_str()
        .unwrap_or_else(|| panic!("no replica in {answer}"))
        .to_owned()
}

/// A 2026-07-28 `tools/call` sent with the affinity header `key`.
pub async fn call_with_key(env: &Env, key: &str, tool: &str, args: Value) -> Value {
    send(env.client.post_req(&tool_call(1, tool, args)).header("Switchboard-Affinity-Key", key)).await.1
}

/// The decisions the scheduler kept, newest first, matching `keep`.
pub fn decisions(env: &Env, keep: impl Fn(&Decision) -> bool) -> Vec<Decision> {
    env.registry().scheduler().decisions(10_000, keep).into_iter().map(|d| (*d).clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_are_one_group_with_one_catalog_entry_per_tool() {
    let reps = replicas(3).await;
    let mut env = harness_of(&reps).start().await;
    let mut tools = env.client.list_tools().await;
    tools.sort();
    assert_eq!(tools, ["append", "put", "read", "whoami", "work"], "one entry per tool, no prefixes");
    let groups = env.api_json("/api/groups").await;
    assert_eq!(groups.as_array().map(Vec::len), Some(1), "{groups}");
    assert_eq!(groups[0]["name"], "chaos");
    assert_eq!(groups[0]["formed"], "detected");
    let members: Vec<&str> =
        groups[0]["members"].as_array().unwrap().iter().map(|m| m["server"].as_str().unwrap()).collect();
    assert_eq!(members, ["chaos-1", "chaos-2", "chaos-3"]);
    // The member names still reach one replica each.
    let r = env.client.call_tool("chaos-2__whoami", json!({})).await;
    assert_eq!(replica_of(&r), "r2");
    let d = decisions(&env, |d| d.target == "tool \"chaos-2__whoami\"");
    assert_eq!(d[0].layer, Layer::Only, "{:?}", d[0]);
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_spreads_by_score() {
    let reps = replicas(3).await;
    let mut env = harness_of(&reps).start().await;
    let calls = (0..24).map(|_| env.client.call_tool("work", json!({"ms": 300})));
    let answers = futures::future::join_all(calls).await;
    let mut by_replica = BTreeMap::new();
    for a in &answers {
        *by_replica.entry(replica_of(a)).or_insert(0) += 1;
    }
    for r in &reps {
        let n = r.counters().executions("work");
        assert!(n >= 4, "24 concurrent calls spread over 3 replicas by score: {by_replica:?}");
    }
    let scored = decisions(&env, |d| d.target == "tool \"work\"");
    assert_eq!(scored.len(), 24);
    assert!(scored.iter().all(
        |d| d.key_source == KeySource::None && d.reason.starts_with("no affinity key: lowest load score")
    ));
    assert!(
        scored.iter().any(|d| d.candidates.iter().any(|c| c.in_flight > 0)),
        "scores saw calls in flight"
    );
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sdk_session_stays_on_one_replica_and_moves_when_its_success_rate_falls() {
    let reps = replicas(3).await;
    let mut env = harness_of(&reps).start().await;
    let config =
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("affinity-test", "1.0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25);
    let transport = StreamableHttpClientTransport::from_uri(env.url.clone());
    let client = tokio::time::timeout(
        PATIENCE,
        config.serve_with_lifecycle(transport, ClientLifecycleMode::Initialize),
    )
    .await
    .unwrap()
    .expect("the official SDK's 2025-11-25 client initializes through the router");
    let whoami = || async {
        let r = client.call_tool(CallToolRequestParams::new("whoami")).await;
        r.map(|r| r.structured_content.unwrap()["replica"].as_str().unwrap().to_owned())
    };
    let home = whoami().await.expect("whoami");
    for _ in 0..19 {
        assert_eq!(whoami().await.expect("whoami"), home, "the session stays on its replica");
    }
    // Its replica starts failing: 20 ok and 1 failed is 95.2 %, it stays; one more and it moves.
    let i: usize = home.trim_start_matches('r').parse().unwrap();
    reps[i - 1].faults().set_fail_tools(Some(FailTools::Every(1))).unwrap();
    assert!(whoami().await.is_err(), "the injected failure reaches the client");
    assert!(whoami().await.is_err(), "still 95.2 %: the key stays");
    let moved = whoami().await.expect("the key moved to a healthy replica");
    assert_ne!(moved, home);
    for _ in 0..5 {
        assert_eq!(whoami().await.expect("whoami"), moved, "and stays there");
    }
    let session = decisions(&env, |d| d.key_source == KeySource::Session && d.target == "tool \"whoami\"");
    assert_eq!(session.len(), 28);
    let key = session[0].key.clone().unwrap();
    assert!(session.iter().all(|d| d.key.as_ref() == Some(&key)), "one session, one key");
    let why = session.iter().find(|d| d.reason.contains("moved off")).expect("the move is recorded");
    assert!(
        why.reason
            .contains(&format!("moved off chaos-{i}: its success rate for the key fell to 91 % (< 95 %)")),
        "{}",
        why.reason
    );
    // The same decision over the admin API, by id and by key.
    let by_id = env.api_json(&format!("/api/decisions/{}", why.id)).await;
    assert_eq!(by_id["reason"], why.reason.as_str());
    let by_key = env.api_json(&format!("/api/decisions?key={key}")).await;
    assert_eq!(by_key.as_array().map(Vec::len), Some(28));
    client.cancel().await.ok();
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overloaded_replica_receives_no_new_keys() {
    let reps = replicas(3).await;
    let mut env = harness_of(&reps).start().await;
    // chaos-1 reports 100 % cpu: its score (200) is above the threshold (150).
    let hot = LoadReport {
        pending_requests: 100,
        avg_response_time_ms: 5.0,
        cpu_usage_percent: 100.0,
        uptime_seconds: 60,
    };
    assert!(env.registry().report_load("chaos-1", hot));
    for k in 0..12 {
        let r = call_with_key(&env, &format!("caller-{k}"), "whoami", json!({})).await;
        assert_ne!(replica_of(&r), "r1", "an overloaded replica gets no new keys");
    }
    let d = decisions(&env, |d| d.key_source == KeySource::Header);
    assert_eq!(d.len(), 12);
    for x in &d {
        assert!(x.candidates[0].overloaded && x.candidates[0].score == Some(200.0), "{x:?}");
        assert!(x.reason.contains("overloaded, no new keys: chaos-1"), "{}", x.reason);
    }
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fallback_returns_a_result_marked_degraded_and_then_names_every_rejection() {
    let reps = replicas(2).await;
    let mut env = harness_of(&reps)
        .config(|c| {
            for s in &mut c.servers {
                s.labels = vec!["kv".into()];
            }
        })
        .start()
        .await;
    let mut body = tool_call(1, "read", json!({"key": "a"}));
    body["params"]["_meta"]["dev.switchboard/capabilities"] = json!({"core": ["kv", "gpu"]});
    let (status, r) = env.client.call(&body).await;
    assert_eq!(status, 200, "{r}");
    let route = &r["result"]["_meta"]["dev.switchboard/route"];
    assert_eq!(route["degraded"], true, "{r}");
    assert_eq!(route["dropped"], json!(["gpu"]));
    // With no fallback step left, the error lists why each replica was rejected.
    let cfg = switchboard_router::SchedulerConfig {
        max_fallback_retries: 0,
        ..env.registry().scheduler().config()
    };
    env.registry().scheduler().set_config(cfg);
    let (_, r) = env.client.call(&body).await;
    assert_eq!(r["error"]["code"], -32050, "{r}");
    assert_eq!(
        r["error"]["message"],
        "no upstream of \"chaos\" can serve tool \"read\": chaos-1: lacks capability \"gpu\"; chaos-2: lacks capability \"gpu\""
    );
    let id = r["error"]["data"]["decision"].as_str().unwrap();
    assert_eq!(env.api_json(&format!("/api/decisions/{id}")).await["layer"], "none");
    // The traces keep both decisions: the degraded one, then the refusal.
    let rows = env.traces(2).await;
    assert_eq!(rows[1].route.as_ref().unwrap()["degraded"], true, "{:?}", rows[1]);
    assert_eq!(rows[0].route.as_ref().unwrap()["layer"], "none");
}

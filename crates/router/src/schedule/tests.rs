//! The scheduler's layers, fallback and records, over in-memory groups (time paused).

use std::time::Duration;

use serde_json::json;

use super::groups::{Formed, Group, Member};
use super::*;
use crate::catalog::Catalog;
use crate::load::{Load, LoadReport};
use crate::schema::compile_tools;
use crate::state::ServerState;

struct Tool(&'static str);

impl Offers for Tool {
    fn missing(&self, m: &Member) -> Option<String> {
        m.catalog.tool(self.0).is_none().then(|| format!("does not offer tool {:?}", self.0))
    }
}

fn catalog(tools: &[&str]) -> Arc<Catalog> {
    let raw: Vec<_> = tools.iter().map(|t| json!({"name": t, "inputSchema": {"type": "object"}})).collect();
    let (tools, quarantined) = compile_tools(&raw);
    Arc::new(Catalog { tools, quarantined, ..Catalog::default() })
}

fn member(name: &str, labels: &[&str]) -> Member {
    Member {
        server: name.into(),
        state: ServerState::Ready,
        reason: String::new(),
        labels: labels.iter().map(|l| l.to_string()).collect(),
        catalog: catalog(&["read", "append"]),
        load: Arc::new(Load::default()),
    }
}

fn group(members: Vec<Member>) -> Group {
    Group { name: "chaos".into(), formed: Formed::Declared, members }
}

fn scheduler(config: SchedulerConfig) -> (Scheduler, crate::Subscription) {
    let bus = EventBus::new(64);
    let sub = bus.subscribe();
    (Scheduler::new(config, bus), sub)
}

fn ask(key: Option<&str>) -> Ask<'_> {
    Ask { key, key_source: Some(KeySource::Session), ..Ask::default() }
}

fn choose(s: &Scheduler, g: &Group, a: &Ask<'_>) -> Arc<Decision> {
    s.choose(g, "tool \"read\"".into(), &Tool("read"), a).expect("a candidate")
}

#[tokio::test(start_paused = true)]
async fn load_spreads_by_score_and_ties_are_taken_in_turn() {
    let (s, _sub) = scheduler(SchedulerConfig::default());
    let g = group(vec![member("c1", &[]), member("c2", &[]), member("c3", &[])]);
    let mut seen = std::collections::BTreeMap::new();
    for _ in 0..30 {
        *seen.entry(choose(&s, &g, &ask(None)).chosen.clone().unwrap()).or_insert(0) += 1;
    }
    assert_eq!(seen.values().copied().collect::<Vec<_>>(), [10, 10, 10], "{seen:?}");
    // Two calls in flight on c1 and one on c2: c3 has the lowest score.
    let _a = g.members[0].load.begin();
    let _b = g.members[0].load.begin();
    let _c = g.members[1].load.begin();
    let d = choose(&s, &g, &ask(None));
    assert_eq!(d.chosen.as_deref(), Some("c3"));
    assert_eq!(d.layer, Layer::Score);
    assert_eq!(d.key_source, KeySource::None);
    let scores: Vec<_> = d.candidates.iter().map(|c| c.score).collect();
    assert_eq!(scores, [Some(20.0), Some(10.0), Some(0.0)]);
    assert!(d.reason.starts_with("no affinity key: lowest load score 0.0 is c3"), "{}", d.reason);
}

#[tokio::test(start_paused = true)]
async fn cpu_and_latency_count_in_the_score() {
    let (s, _sub) = scheduler(SchedulerConfig::default());
    let g = group(vec![member("c1", &[]), member("c2", &[])]);
    g.members[0].load.report(LoadReport {
        pending_requests: 0,
        avg_response_time_ms: 1.0,
        cpu_usage_percent: 30.0,
        uptime_seconds: 1,
    });
    g.members[1].load.observe(Duration::from_millis(45));
    let d = choose(&s, &g, &ask(None));
    assert_eq!(d.candidates[0].score, Some(60.0));
    assert_eq!(d.candidates[1].score, Some(45.0));
    assert_eq!(d.chosen.as_deref(), Some("c2"));
    // The report goes stale after three sampling intervals.
    tokio::time::advance(Duration::from_secs(16)).await;
    let d = choose(&s, &g, &ask(None));
    assert_eq!((d.candidates[0].score, d.chosen.as_deref()), (Some(0.0), Some("c1")));
}

#[tokio::test(start_paused = true)]
async fn a_key_stays_on_its_upstream_and_moves_when_its_success_rate_falls() {
    let (s, _sub) = scheduler(SchedulerConfig::default());
    let g = group(vec![member("c1", &[]), member("c2", &[]), member("c3", &[])]);
    let first = choose(&s, &g, &ask(Some("session-1")));
    let home = first.chosen.clone().unwrap();
    assert!(first.reason.starts_with("new key k:"), "{}", first.reason);
    for _ in 0..20 {
        // Load elsewhere does not move it.
        let d = choose(&s, &g, &ask(Some("session-1")));
        assert_eq!(d.chosen.as_ref(), Some(&home));
        assert_eq!(d.layer, Layer::Affinity);
        s.outcome(&d, true);
    }
    let d = choose(&s, &g, &ask(Some("session-1")));
    s.outcome(&d, false);
    // 20 ok, 1 failed: 95.2 % — it stays.
    let d = choose(&s, &g, &ask(Some("session-1")));
    assert_eq!(d.chosen.as_ref(), Some(&home), "{}", d.reason);
    s.outcome(&d, false);
    // 20 ok, 2 failed: 90.9 % — it moves, and the decision says why.
    let d = choose(&s, &g, &ask(Some("session-1")));
    assert_ne!(d.chosen.as_ref(), Some(&home));
    assert!(
        d.reason.contains(&format!("moved off {home}: its success rate for the key fell to 91 % (< 95 %)")),
        "{}",
        d.reason
    );
    let c = d.candidates.iter().find(|c| c.server == home).unwrap();
    assert!(c.affinity.as_deref().unwrap().contains("20 ok / 2 failed"), "{c:?}");
    // The new binding holds.
    let again = choose(&s, &g, &ask(Some("session-1")));
    assert_eq!(again.chosen, d.chosen);
    assert_eq!(again.layer, Layer::Affinity);
}

#[tokio::test(start_paused = true)]
async fn a_binding_expires_after_the_window_and_an_empty_key_is_no_key() {
    let (s, _sub) =
        scheduler(SchedulerConfig { affinity_window: Duration::from_secs(300), ..Default::default() });
    let g = group(vec![member("c1", &[]), member("c2", &[])]);
    let d = choose(&s, &g, &ask(Some("k")));
    let home = d.chosen.clone().unwrap();
    let _busy = g.members.iter().find(|m| m.server == home).unwrap().load.begin();
    tokio::time::advance(Duration::from_secs(299)).await;
    assert_eq!(choose(&s, &g, &ask(Some("k"))).chosen.as_ref(), Some(&home), "within the window");
    tokio::time::advance(Duration::from_secs(301)).await;
    let d = choose(&s, &g, &ask(Some("k")));
    assert_ne!(d.chosen.as_ref(), Some(&home), "expired: the lowest score wins");
    assert!(d.reason.starts_with("new key"), "{}", d.reason);
    let d = choose(&s, &g, &ask(Some("")));
    assert_eq!((d.key.as_deref(), d.key_source), (None, KeySource::None));
}

#[tokio::test(start_paused = true)]
async fn an_overloaded_upstream_gets_no_new_keys() {
    let (s, _sub) = scheduler(SchedulerConfig { overload_threshold: 150.0, ..Default::default() });
    let g = group(vec![member("c1", &[]), member("c2", &[])]);
    g.members[0].load.report(LoadReport {
        pending_requests: 90,
        avg_response_time_ms: 900.0,
        cpu_usage_percent: 95.0,
        uptime_seconds: 9,
    });
    // c2 is busier by in-flight count than c1's score would suggest without its report.
    let _in: Vec<_> = (0..3).map(|_| g.members[1].load.begin()).collect();
    for i in 0..10 {
        let key = format!("key-{i}");
        let d = choose(&s, &g, &ask(Some(&key)));
        assert_eq!(d.chosen.as_deref(), Some("c2"), "{}", d.reason);
        assert!(d.candidates[0].overloaded);
        assert!(d.reason.contains("overloaded, no new keys: c1"), "{}", d.reason);
    }
    // Everybody overloaded: the lowest score still serves, and the decision says so.
    let _more: Vec<_> = (0..20).map(|_| g.members[1].load.begin()).collect();
    let d = choose(&s, &g, &ask(None));
    assert_eq!(d.chosen.as_deref(), Some("c1"));
    assert!(d.reason.contains("every candidate is overloaded (> 150)"), "{}", d.reason);
}

#[tokio::test(start_paused = true)]
async fn fallback_drops_optional_then_core_capabilities_and_marks_the_call_degraded() {
    let (s, _sub) = scheduler(SchedulerConfig { max_fallback_retries: 3, ..Default::default() });
    let g = group(vec![member("c1", &["thermal"]), member("c2", &["thermal", "gpu"])]);
    let core = ["thermal".to_owned(), "radiometric".to_owned()];
    let optional = ["gpu".to_owned()];
    let a = Ask { core: &core, optional: &optional, ..Ask::default() };
    let d = s.choose(&g, "tool \"read\"".into(), &Tool("read"), &a).expect("fallback finds one");
    assert_eq!(d.dropped, ["gpu", "radiometric"]);
    assert!(d.degraded);
    assert_eq!(d.layer, Layer::Fallback);
    assert!(d.reason.contains("after dropping capabilities \"gpu\", \"radiometric\""), "{}", d.reason);
    // Optional only: not degraded.
    let a = Ask { core: &core[..1], optional: &["fast".to_owned()], ..Ask::default() };
    let d = s.choose(&g, "tool \"read\"".into(), &Tool("read"), &a).expect("one");
    assert_eq!((d.degraded, d.dropped.clone()), (false, vec!["fast".to_owned()]));
    // Out of steps: the error lists every candidate's rejection.
    let (s, _sub) = scheduler(SchedulerConfig { max_fallback_retries: 1, ..Default::default() });
    let a = Ask { core: &core, optional: &optional, ..Ask::default() };
    let err = s.choose(&g, "tool \"read\"".into(), &Tool("read"), &a).expect_err("one step is not enough");
    assert_eq!(err.layer, Layer::None);
    assert_eq!(
        err.reason,
        "no upstream of \"chaos\" can serve tool \"read\": c1: lacks capability \"radiometric\"; c2: lacks capability \"radiometric\""
    );
}

#[tokio::test(start_paused = true)]
async fn down_draining_excluded_and_lacking_members_are_rejected_with_their_reasons() {
    let (s, _sub) = scheduler(SchedulerConfig::default());
    let mut down = member("c1", &[]);
    down.state = ServerState::Unavailable;
    down.reason = "3 health probes failed in a row".into();
    let draining = member("c2", &[]);
    draining.load.set_draining(true);
    let mut lacking = member("c3", &[]);
    lacking.catalog = catalog(&["read"]);
    let ok = member("c4", &[]);
    let g = group(vec![down, draining, lacking, ok, member("c5", &[])]);
    let exclude = ["c5".to_owned()];
    let a = Ask { exclude: &exclude, attempt: 1, ..Ask::default() };
    let d = s.choose(&g, "tool \"append\"".into(), &Tool("append"), &a).expect("c4");
    assert_eq!(d.chosen.as_deref(), Some("c4"));
    let why: Vec<_> = d.candidates.iter().map(|c| c.rejected.clone()).collect();
    assert_eq!(
        why,
        [
            Some("unavailable: 3 health probes failed in a row".into()),
            Some("draining (deregistered)".into()),
            Some("does not offer tool \"append\"".into()),
            None,
            Some("an earlier attempt of this call failed there".into()),
        ]
    );
    assert_eq!((d.attempt, d.excluded.clone()), (1, vec!["c5".to_owned()]));
}

#[tokio::test(start_paused = true)]
async fn every_decision_is_published_and_kept_within_bounds() {
    let (s, mut sub) = scheduler(SchedulerConfig::default());
    let g = group(vec![member("c1", &[]), member("c2", &[])]);
    let d = choose(&s, &g, &ask(Some("abc")));
    match sub.recv().await.as_deref() {
        Ok(Event::Route { decision }) => assert_eq!(decision.id, d.id),
        other => panic!("expected a route event, got {other:?}"),
    }
    assert_eq!(s.decision(&d.id).as_deref(), Some(&*d));
    for _ in 0..DECISIONS_KEPT + 10 {
        choose(&s, &g, &ask(None));
    }
    assert!(s.decision(&d.id).is_none(), "the oldest went first");
    assert_eq!(s.decisions(usize::MAX, |_| true).len(), DECISIONS_KEPT);
    let key = fingerprint("abc");
    assert!(s.decisions(10, |x| x.key.as_deref() == Some(&key)).is_empty());
}

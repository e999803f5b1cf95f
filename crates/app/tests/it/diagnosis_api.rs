//! The diagnosis routes (`switchboard_app::diagnosis::routes`) over HTTP, as the app mounts
//! them behind the `/api` guard, in front of the real built-in servers: upload → thermal view
//! → run → progress on the bus → the stored run.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Value, json};
use switchboard_app::diagnosis::Diagnosis;
use switchboard_router::{Event, EventKind, Filter, Subscription};

use crate::harness::{Env, Harness, PATIENCE};
use crate::repo_root;

fn data(name: &str) -> std::path::PathBuf {
    repo_root().join("../shared/data/thermal").join(name)
}

/// The diagnosis routes of `env`'s app, on its listener, with the admin token.
struct Api {
    base: String,
    token: String,
    http: reqwest::Client,
    diagnosis: Diagnosis,
}

impl Api {
    async fn start(env: &Env) -> Api {
        let diagnosis = env.app().diagnosis().clone();
        Api {
            base: format!("http://{}", env.addr),
            token: env.admin_token.clone(),
            http: reqwest::Client::new(),
            diagnosis,
        }
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> (u16, Value) {
        let r = req.bearer_auth(&self.token).send().await.unwrap();
        let status = r.status().as_u16();
        let body = r.bytes().await.unwrap();
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.send(self.http.get(format!("{}{path}", self.base))).await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(self.http.post(format!("{}{path}", self.base)).json(&body)).await
    }

    async fn upload(&self, bytes: Vec<u8>) -> String {
        let (status, up) = self.send(self.http.post(format!("{}/api/blobs", self.base)).body(bytes)).await;
        assert_eq!(status, 201, "{up}");
        let sha = up["sha256"].as_str().unwrap();
        assert_eq!(up["ref"], format!("blob:{sha}"));
        sha.to_owned()
    }
}

/// Run-level and node-level events of the flows, from now on.
fn flow_events(env: &Env) -> Subscription {
    env.events().subscribe_filtered(Filter {
        kinds: [EventKind::FlowProgress, EventKind::FlowRun].into(),
        ..Filter::default()
    })
}

/// Reads `run_id`'s events until the run is recorded as ended; the last status of each node
/// and the run's outcome.
async fn follow(events: &mut Subscription, run_id: &str) -> (BTreeMap<String, String>, String) {
    let mut nodes = BTreeMap::new();
    tokio::time::timeout(PATIENCE * 4, async {
        loop {
            let ev = events.recv().await.expect("the subscription keeps up");
            match ev.as_ref() {
                Event::FlowProgress { run_id: r, node, status, .. } if r == run_id => {
                    nodes.insert(node.clone(), status.clone());
                }
                Event::FlowRun { run_id: r, status, .. } if r == run_id && status != "running" => {
                    return (nodes, status.clone());
                }
                _ => {}
            }
        }
    })
    .await
    .expect("the run ends in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uploaded_neutral_renders_and_diagnoses_major_with_its_hotspot() {
    let env = Harness::new().builtin_servers().start().await;
    let api = Api::start(&env).await;
    let bytes = std::fs::read(data("wm01_200_deg_neutral.jpg")).unwrap();
    let sha = api.upload(bytes).await;

    // The thermal view: every pixel's temperature, as f32 LE, row-major.
    let (status, t) = api.get(&format!("/api/blobs/{sha}/thermal")).await;
    assert_eq!(status, 200, "{t}");
    assert_eq!((t["radiometric"].as_bool(), t["unit"].as_str()), (Some(true), Some("C")), "{}", t["unit"]);
    let (w, h) = (t["width"].as_u64().unwrap() as usize, t["height"].as_u64().unwrap() as usize);
    let raw = base64::engine::general_purpose::STANDARD.decode(t["temps"].as_str().unwrap()).unwrap();
    assert_eq!(raw.len(), w * h * 4);
    let temps: Vec<f32> = raw.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let hottest = temps.iter().copied().filter(|v| v.is_finite()).fold(f32::MIN, f32::max);
    let max_c = t["max_c"].as_f64().unwrap();
    assert!((f64::from(hottest) - max_c).abs() < 0.01, "decoded max {hottest} vs max_c {max_c}");
    assert!((60.0..400.0).contains(&max_c), "an overheated neutral, not {max_c} °C");
    assert!(t["min_c"].as_f64().unwrap() < max_c);

    // The graph to draw.
    let (status, flow) = api.get("/api/flow").await;
    assert_eq!(status, 200);
    let ids: Vec<&str> =
        flow["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["vision", "knowledge", "reasoning"]);
    assert_eq!(flow["nodes"][0]["tool"], "analyze_thermal_image");
    assert_eq!(flow["edges"][0], json!({"from": "vision", "to": "knowledge", "when": null}));

    let mut events = flow_events(&env);
    let (status, started) =
        api.post("/api/runs", json!({"image": format!("blob:{sha}"), "equipment": "panel"})).await;
    assert_eq!(status, 202, "{started}");
    let run_id = started["run_id"].as_str().unwrap().to_owned();
    let (nodes, outcome) = follow(&mut events, &run_id).await;
    assert_eq!(outcome, "ok");
    assert_eq!(
        nodes,
        [("knowledge", "succeeded"), ("reasoning", "succeeded"), ("vision", "succeeded")]
            .map(|(n, s)| (n.to_owned(), s.to_owned()))
            .into()
    );

    let (status, run) = api.get(&format!("/api/runs/{run_id}")).await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["run"]["outcome"], "ok");
    for node in run["nodes"].as_array().unwrap() {
        assert_eq!(node["status"], "succeeded", "{node}");
        assert!(node["output"].is_object(), "{node}");
    }
    let result = &run["result"];
    assert_eq!(result["severity"]["band"], "major", "{result}");
    let bbox = &result["hotspot"]["bbox"];
    let [x, y, bw, bh] = ["x", "y", "width", "height"].map(|k| bbox[k].as_u64().unwrap());
    assert!(
        (x..x + bw).contains(&51) && (y..y + bh).contains(&65),
        "hotspot {bbox} holds the neutral at (51,65)"
    );
    assert!(x + bw <= w as u64 && y + bh <= h as u64, "the box is in the thermal view's pixel grid");
    let spot = &result["hotspot"]["hottest"];
    let (sx, sy) = (spot["x"].as_f64().unwrap(), spot["y"].as_f64().unwrap());
    assert!(
        (x as f64..(x + bw) as f64).contains(&sx) && (y as f64..(y + bh) as f64).contains(&sy),
        "the hottest pixel {spot} is inside its box {bbox}"
    );
    assert!(!result["knowledge"].as_array().unwrap().is_empty(), "{result}");
    assert!(!result["repair"]["steps"].as_array().unwrap().is_empty(), "{result}");

    // A run that ended cannot be cancelled.
    let (status, e) = api.post(&format!("/api/runs/{run_id}/cancel"), json!({})).await;
    assert_eq!(status, 409, "{e}");
    assert!(e["error"].as_str().unwrap().contains("already ended (ok)"), "{e}");
    let (status, _) = api.post("/api/runs/nope/cancel", json!({})).await;
    assert_eq!(status, 404);
    api.diagnosis.shutdown(PATIENCE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_image_is_refused_by_the_reader_and_its_run_fails_into_the_history() {
    let env = Harness::new().builtin_servers().start().await;
    let api = Api::start(&env).await;
    let full = std::fs::read(data("wm01_200_deg_neutral.jpg")).unwrap();
    let sha = api.upload(full[..5000].to_vec()).await;

    let (status, e) = api.get(&format!("/api/blobs/{sha}/thermal")).await;
    assert_eq!(status, 422, "{e}");
    let reader_error = e["error"].as_str().unwrap();
    assert!(reader_error.contains("truncated FLIR APP1 chunk"), "{e}");
    let (status, _) = api.get(&format!("/api/blobs/{}/thermal", "0".repeat(64))).await;
    assert_eq!(status, 404);

    let mut events = flow_events(&env);
    let (status, started) = api.post("/api/runs", json!({"image": format!("blob:{sha}")})).await;
    assert_eq!(status, 202, "{started}");
    let run_id = started["run_id"].as_str().unwrap().to_owned();
    let (nodes, outcome) = follow(&mut events, &run_id).await;
    assert_eq!(outcome, "failed");
    assert_eq!(nodes["vision"], "failed");
    assert_eq!(nodes["reasoning"], "skipped");

    let (_, run) = api.get(&format!("/api/runs/{run_id}")).await;
    let error = run["run"]["error"].as_str().unwrap();
    assert!(error.contains("node `vision` failed") && error.contains("truncated FLIR APP1 chunk"), "{error}");
    assert!(run["result"].is_null(), "{run}");
    let (status, runs) = api.get("/api/runs?limit=10").await;
    assert_eq!(status, 200);
    let listed = runs.as_array().unwrap().iter().find(|r| r["run_id"] == run_id.as_str()).expect("listed");
    assert_eq!(listed["outcome"], "failed");
    assert_eq!(listed["image"], format!("blob:{sha}"));
    api.diagnosis.shutdown(PATIENCE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_refused_with_a_sentence() {
    let env = Harness::new().builtin_servers().options(|o| o.max_blob = Some(1024)).start().await;
    let api = Api::start(&env).await;
    let (status, e) = api.send(api.http.post(format!("{}/api/blobs", api.base)).body(vec![7u8; 4096])).await;
    assert_eq!(status, 413, "{e}");
    assert!(e["error"].as_str().unwrap().contains("blob size limit of 1024 bytes"), "{e}");
    let (status, e) = api.post("/api/runs", json!({"image": "/etc/passwd"})).await;
    assert_eq!(status, 400, "{e}");
    assert!(e["error"].as_str().unwrap().contains("blob:<sha256>"), "{e}");
    let (status, _) = api.post("/api/runs", json!({"image": format!("blob:{}", "a".repeat(64))})).await;
    assert_eq!(status, 404);
    let sha = api.upload(b"small".to_vec()).await;
    let (status, e) =
        api.post("/api/runs", json!({"image": format!("blob:{sha}"), "equipment": "toaster"})).await;
    assert_eq!(status, 400, "{e}");
    let (status, e) = api.post("/api/runs", json!({"image": format!("blob:{sha}"), "colour": "red"})).await;
    assert_eq!(status, 422, "{e}");
    assert!(e["error"].as_str().unwrap().contains("colour"), "{e}");
    let (status, _) = api.get("/api/runs/unknown").await;
    assert_eq!(status, 404);
}

/// On a current-thread runtime a started run does not begin before the test yields, so the
/// bound and the cancellation are met before any node runs, every time.
#[tokio::test]
async fn runs_beyond_the_bound_are_refused_and_a_cancelled_run_ends_cancelled() {
    use switchboard_app::diagnosis::{DiagnosisConfig, DiagnosisError, RunRequest, routes::status_of};
    let env = Harness::new()
        .builtin_servers()
        .options(|o| o.diagnosis = Some(DiagnosisConfig { max_running: 1 }))
        .start()
        .await;
    let diagnosis = env.app().diagnosis().clone();
    let sha =
        diagnosis.blobs().put_reader(&std::fs::read(data("wm01_200_deg_neutral.jpg")).unwrap()[..]).await;
    let request = RunRequest { image: format!("blob:{}", sha.unwrap().sha256), ..RunRequest::default() };
    let mut events = flow_events(&env);
    let first = diagnosis.start(request.clone()).await.unwrap();
    let busy = diagnosis.start(request).await.expect_err("one run at a time");
    assert!(matches!(busy, DiagnosisError::Busy(1)), "{busy}");
    assert_eq!(status_of(&busy).as_u16(), 429);
    assert!(busy.to_string().contains("1 diagnosis runs are in progress"), "{busy}");
    diagnosis.cancel(&first).await.unwrap();
    let (nodes, outcome) = follow(&mut events, &first).await;
    assert_eq!(outcome, "cancelled");
    assert!(nodes.values().all(|s| s == "skipped"), "{nodes:?}");
    let view = diagnosis.run_view(&first).await.unwrap();
    assert_eq!(view.run.outcome, "cancelled");
    let again = diagnosis.cancel(&first).await.expect_err("ended");
    assert_eq!(status_of(&again).as_u16(), 409);
    assert_eq!(diagnosis.running(), 0);
}

//! `generate_repair_steps`: the whole diagnosis chain on a real image (vision → knowledge → reasoning over MCP),
//! and the optional LLM backend against fake OpenAI-compatible and Ollama endpoints served by axum on port 0.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{Json, Router, routing::post};
use base64::Engine as _;
use serde_json::{Value, json};
use switchboard_servers::{
    knowledge::{
        KnowledgeBase, KnowledgeServer,
        server::{SEARCH_MANUAL, SearchManualOutput},
    },
    reasoning::{
        LlmConfig, ReasoningConfig, ReasoningServer, RepairPlan,
        server::GENERATE_REPAIR_STEPS,
        synth::{step_section, strip_source},
    },
    vision::{VisionReport, VisionServer, server::ANALYZE_THERMAL_IMAGE},
};

use crate::common::{call, connect, sample, text_of};

/// Runs vision and knowledge on wm01 over MCP and returns their structured outputs.
async fn upstream_outputs() -> (Value, Value) {
    let vision = connect(VisionServer::default()).await;
    let image = base64::engine::general_purpose::STANDARD.encode(sample("wm01_200_deg_neutral.jpg"));
    let v = call(&vision, ANALYZE_THERMAL_IMAGE, json!({ "image": image, "equipment": "panel" })).await;
    let v = v.structured_content.expect("vision output");
    let _: VisionReport = serde_json::from_value(v.clone()).unwrap();
    vision.cancel().await.unwrap();

    let knowledge = connect(KnowledgeServer::new(KnowledgeBase::embedded().await.unwrap())).await;
    // The query the default flow builds: component and failure mode as fields.
    let args = serde_json::to_value(switchboard_servers::eval::knowledge_args(&v)).unwrap();
    let k = call(&knowledge, SEARCH_MANUAL, args).await;
    let k = k.structured_content.expect("knowledge output");
    knowledge.cancel().await.unwrap();
    (v, k)
}

async fn plan_from(server: ReasoningServer, args: Value) -> RepairPlan {
    let client = connect(server).await;
    let result = call(&client, GENERATE_REPAIR_STEPS, args).await;
    assert_ne!(result.is_error, Some(true), "{}", text_of(&result));
    client.cancel().await.unwrap();
    serde_json::from_value(result.structured_content.expect("structuredContent")).unwrap()
}

#[tokio::test]
async fn diagnosis_chain_gives_a_safe_ordered_plan() {
    let (vision, knowledge) = upstream_outputs().await;
    let args = json!({ "vision": vision, "knowledge": knowledge, "context": "main panel at 60 % load" });
    let plan = plan_from(ReasoningServer::default(), args).await;
    assert_eq!(plan.backend, "deterministic");
    assert_eq!(plan.severity.band.as_deref(), Some("major"));
    assert_eq!(plan.severity.action, "major discrepancy; repair immediately");
    assert!(plan.safety[0].contains("lockout/tagout"), "{:?}", plan.safety);
    assert!(plan.steps[0].starts_with("Repair immediately"), "{:?}", plan.steps);
    let knowledge: SearchManualOutput = serde_json::from_value(knowledge).unwrap();
    let top = &knowledge.results[0];
    assert!(
        plan.steps.iter().any(|s| strip_source(s) == top.steps[0]),
        "{:?} lacks {:?}",
        plan.steps,
        top.steps[0]
    );
    // Every step names the manual section it comes from.
    assert_eq!(plan.steps.len(), plan.step_sources.len());
    for (step, src) in plan.steps.iter().zip(&plan.step_sources) {
        assert_eq!(step_section(step), Some(src.section.as_str()), "{step}");
    }
    let vision_conf = vision["confidence"].as_f64().unwrap();
    assert!(
        (plan.confidence - vision_conf * top.score).abs() < 0.011,
        "{} vs {vision_conf}×{}",
        plan.confidence,
        top.score
    );
    // No step repeats another.
    for (i, a) in plan.steps.iter().enumerate() {
        assert!(!plan.steps[i + 1..].contains(a), "duplicate step {a}");
    }
    assert!(plan.summary.starts_with("Major discrepancy"), "{}", plan.summary);
    println!("plan: {}", plan.summary);
}

#[tokio::test]
async fn malformed_inputs_are_tool_errors() {
    let client = connect(ReasoningServer::default()).await;
    let r = call(&client, GENERATE_REPAIR_STEPS, json!({ "vision": "hot", "knowledge": {} })).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text_of(&r).starts_with("invalid argument `vision`"), "{}", text_of(&r));
    let r =
        call(&client, GENERATE_REPAIR_STEPS, json!({ "vision": {}, "knowledge": { "results": 3 } })).await;
    assert!(text_of(&r).starts_with("invalid argument `knowledge`"), "{}", text_of(&r));
    let r = call(&client, GENERATE_REPAIR_STEPS, json!({ "vision": {} })).await;
    assert!(text_of(&r).starts_with("invalid arguments"), "{}", text_of(&r));
    client.cancel().await.unwrap();
}

/// A fake chat endpoint: answers every POST to `path` with `answer`, after `delay`, recording the request body.
async fn fake_llm(path: &'static str, answer: Value, delay: Duration) -> (String, Arc<Mutex<Option<Value>>>) {
    let seen = Arc::new(Mutex::new(None));
    let record = seen.clone();
    let app = Router::new().route(
        path,
        post(move |Json(body): Json<Value>| {
            let answer = answer.clone();
            let record = record.clone();
            async move {
                *record.lock().unwrap() = Some(body);
                tokio::time::sleep(delay).await;
                Json(answer)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}{path}"), seen)
}

fn llm_server(url: &str, timeout: Duration) -> ReasoningServer {
    ReasoningServer::new(ReasoningConfig {
        llm: Some(LlmConfig { timeout, ..LlmConfig::new(url, "fake-model") }),
    })
}

const ANSWER: &str = r#"{"summary": "LLM: the neutral lug is loose; fix it today.",
    "steps": ["Tighten the neutral lug N1 to the specified torque. [manual: thermo-neta-severity-bands]",
              "Check the battery intercell connectors for hydrogen. [manual: batt-vrla-terminal-connector]",
              "Re-scan under load. [manual: thermo-reporting]"],
    "parts": ["Neutral lug kit"], "safety": ["Keep the panel door closed while energised."]}"#;

#[tokio::test]
async fn openai_compatible_backend_is_validated_and_merged() {
    let (vision, knowledge) = upstream_outputs().await;
    let reply = json!({ "choices": [ { "message": { "role": "assistant", "content": ANSWER } } ] });
    let (url, seen) = fake_llm("/v1/chat/completions", reply, Duration::ZERO).await;
    let args = json!({ "vision": vision, "knowledge": knowledge });
    let plan = plan_from(llm_server(&url, Duration::from_secs(10)), args).await;
    assert_eq!(plan.backend, "llm", "{:?}", plan.notes);
    assert!(plan.summary.starts_with("LLM:"));
    assert!(plan.steps[0].starts_with("Repair immediately"), "severity step kept first: {:?}", plan.steps);
    assert!(plan.steps.iter().any(|s| s.contains("Tighten the neutral lug N1")));
    // The same rule as the deterministic plan: a step from a section about another component is dropped.
    assert!(!plan.steps.iter().any(|s| s.contains("battery")), "{:?}", plan.steps);
    assert!(
        plan.notes.iter().any(|n| n.contains("named no manual section of this plan")),
        "{:?}",
        plan.notes
    );
    assert!(plan.safety[0].contains("lockout/tagout"), "mandatory safety kept first");
    assert!(plan.safety.iter().any(|s| s.contains("panel door")));
    assert!(plan.parts.iter().any(|p| p == "Neutral lug kit"));
    assert_eq!(plan.severity.band.as_deref(), Some("major"), "the model cannot change the severity");
    let body = seen.lock().unwrap().clone().expect("request seen");
    assert_eq!(body["model"], "fake-model");
    assert_eq!(body["response_format"]["type"], "json_object");
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(body["messages"][1]["content"].as_str().unwrap().contains("\"draft\""));
}

#[tokio::test]
async fn ollama_backend_is_spoken_on_api_chat() {
    let (vision, knowledge) = upstream_outputs().await;
    let reply =
        json!({ "model": "fake-model", "message": { "role": "assistant", "content": ANSWER }, "done": true });
    let (url, seen) = fake_llm("/api/chat", reply, Duration::ZERO).await;
    let plan = plan_from(
        llm_server(&url, Duration::from_secs(10)),
        json!({ "vision": vision, "knowledge": knowledge }),
    )
    .await;
    assert_eq!(plan.backend, "llm", "{:?}", plan.notes);
    let body = seen.lock().unwrap().clone().expect("request seen");
    assert_eq!((body["format"].as_str(), body["stream"].as_bool()), (Some("json"), Some(false)));
}

#[tokio::test]
async fn llm_failures_fall_back_to_the_deterministic_plan_with_a_note() {
    let (vision, knowledge) = upstream_outputs().await;
    let args = json!({ "vision": vision, "knowledge": knowledge });

    // Prose instead of the JSON object.
    let reply = json!({ "choices": [ { "message": { "content": "Sure! Tighten the lug." } } ] });
    let (url, _) = fake_llm("/v1/chat/completions", reply, Duration::ZERO).await;
    let plan = plan_from(llm_server(&url, Duration::from_secs(10)), args.clone()).await;
    assert_eq!(plan.backend, "deterministic");
    let note = plan.notes.last().unwrap();
    assert!(
        note.starts_with(&format!("llm backend {url}: message content is not the expected JSON object")),
        "{note}"
    );
    assert!(note.ends_with("the deterministic result is used"), "{note}");

    // A JSON object that fails validation.
    let reply = json!({ "choices": [ { "message": { "content": "{\"summary\": \"\", \"steps\": []}" } } ] });
    let (url, _) = fake_llm("/v1/chat/completions", reply, Duration::ZERO).await;
    let plan = plan_from(llm_server(&url, Duration::from_secs(10)), args.clone()).await;
    assert!(plan.notes.last().unwrap().contains("answer rejected: `summary` is empty"), "{:?}", plan.notes);

    // Too slow.
    let reply = json!({ "choices": [ { "message": { "content": ANSWER } } ] });
    let (url, _) = fake_llm("/v1/chat/completions", reply, Duration::from_secs(30)).await;
    let plan = plan_from(llm_server(&url, Duration::from_millis(300)), args.clone()).await;
    assert_eq!(plan.backend, "deterministic");
    assert!(plan.notes.last().unwrap().contains("no answer within"), "{:?}", plan.notes);

    // Nobody listening.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let plan = plan_from(llm_server(&url, Duration::from_secs(5)), args).await;
    assert!(plan.notes.last().unwrap().contains("request failed"), "{:?}", plan.notes);
    assert!(plan.safety[0].contains("lockout/tagout"));
}

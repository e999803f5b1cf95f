//! The optional LLM backend of `generate_repair_steps`: off by default, configured by URL.
//!
//! Two wire formats are spoken, chosen by [`LlmApi`] (or inferred from the URL path):
//!
//! - OpenAI-compatible `POST …/v1/chat/completions` (`response_format: json_object`; the answer is
//!   `choices[0].message.content`), which covers OpenAI, vLLM, llama.cpp's server, LM Studio and most gateways;
//! - Ollama `POST …/api/chat` (`format: "json"`, `stream: false`; the answer is `message.content`).
//!
//! The model gets the deterministic draft plus the inputs and must answer one JSON object
//! `{summary, steps[], parts[], safety[]}`. The answer is **validated** ([`LlmAnswer::validate`]) and then
//! **merged** ([`merge`]): the model may rewrite the summary and the steps and add parts and precautions, but the
//! severity, the mandatory safety preamble, the first (severity) step and the confidence stay those of the
//! deterministic synthesis, because they rest on measurements and standards rather than on prose. The model sees
//! only the manual sections the deterministic plan used, and every step it writes must name one of them
//! (`[manual: <id>]`); steps that do not are dropped, and with none left the deterministic steps stay. Any failure
//! (connection, timeout, HTTP status, malformed JSON, failed validation) is returned as an error; the server then
//! keeps the deterministic plan and says why in `notes`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::synth::{RepairPlan, StepSource, is_duplicate, push_unique, step_section};
use crate::error::{Error, Result};

/// Default time limit of one LLM call.
pub const DEFAULT_LLM_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest summary accepted, characters.
pub const MAX_SUMMARY_CHARS: usize = 4000;
/// Most steps accepted.
pub const MAX_STEPS: usize = 40;
/// Longest single step or list item accepted, characters.
pub const MAX_ITEM_CHARS: usize = 1000;

/// Which chat API the endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LlmApi {
    /// OpenAI-compatible `/v1/chat/completions`.
    OpenAi,
    /// Ollama `/api/chat`.
    Ollama,
}

impl LlmApi {
    /// Infers the API from the URL path: `/api/chat` is Ollama, anything else OpenAI-compatible.
    pub fn infer(url: &str) -> Self {
        let path = url.split('?').next().unwrap_or_default().trim_end_matches('/');
        if path.ends_with("/api/chat") { LlmApi::Ollama } else { LlmApi::OpenAi }
    }
}

/// Settings of the LLM backend.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmConfig {
    /// Full endpoint URL, e.g. `http://127.0.0.1:11434/api/chat` or `https://api.example/v1/chat/completions`.
    pub url: String,
    /// Wire format; `None` infers it from `url` ([`LlmApi::infer`]).
    pub api: Option<LlmApi>,
    /// Model name sent with the request.
    pub model: String,
    /// Bearer token, if the endpoint needs one (read from the environment by the binary, never here).
    pub api_key: Option<String>,
    /// Time limit of one call (connect + answer).
    pub timeout: Duration,
}

impl LlmConfig {
    /// A configuration for `url` and `model` with the default timeout and no key.
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> Self {
        Self { url: url.into(), api: None, model: model.into(), api_key: None, timeout: DEFAULT_LLM_TIMEOUT }
    }

    /// The API in force.
    pub fn api(&self) -> LlmApi {
        self.api.unwrap_or_else(|| LlmApi::infer(&self.url))
    }
}

/// The JSON object the model must answer with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmAnswer {
    /// Summary for the operator.
    pub summary: String,
    /// Ordered steps.
    pub steps: Vec<String>,
    /// Parts to have at hand.
    #[serde(default)]
    pub parts: Vec<String>,
    /// Extra safety precautions.
    #[serde(default)]
    pub safety: Vec<String>,
}

impl LlmAnswer {
    /// Checks sizes and emptiness; returns what is wrong.
    ///
    /// # Errors
    /// A message naming the offending field.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.summary.trim().is_empty() {
            return Err("`summary` is empty".into());
        }
        if self.summary.chars().count() > MAX_SUMMARY_CHARS {
            return Err(format!("`summary` is longer than {MAX_SUMMARY_CHARS} characters"));
        }
        if self.steps.is_empty() || self.steps.len() > MAX_STEPS {
            return Err(format!("`steps` must hold 1–{MAX_STEPS} items, found {}", self.steps.len()));
        }
        for (field, list) in [("steps", &self.steps), ("parts", &self.parts), ("safety", &self.safety)] {
            if list.len() > MAX_STEPS {
                return Err(format!("`{field}` holds more than {MAX_STEPS} items"));
            }
            if let Some(i) =
                list.iter().position(|s| s.trim().is_empty() || s.chars().count() > MAX_ITEM_CHARS)
            {
                return Err(format!("`{field}[{i}]` is empty or longer than {MAX_ITEM_CHARS} characters"));
            }
        }
        Ok(())
    }
}

const SYSTEM_PROMPT: &str = "You are an electrical maintenance engineer writing a repair plan from a thermal \
inspection. You receive the thermal analysis, maintenance manual sections, the operator's context and a draft plan. \
Answer with ONE JSON object and nothing else: {\"summary\": string, \"steps\": [string], \"parts\": [string], \
\"safety\": [string]}. Keep the severity and its NETA action exactly as given; never weaken safety precautions; \
order the steps as a technician would do them; use only facts from the inputs. End every step with the manual \
section it comes from, written exactly as `[manual: <section id>]`, using only the section ids of the draft's \
steps; a step without such a source is discarded.";

/// A client for one configured endpoint.
#[derive(Debug, Clone)]
pub struct LlmClient {
    config: LlmConfig,
    http: reqwest::Client,
}

impl LlmClient {
    /// A client for `config`.
    pub fn new(config: LlmConfig) -> Self {
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Self { config, http }
    }

    /// The configuration.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    fn fail(&self, message: impl Into<String>) -> Error {
        Error::Llm { url: self.config.url.clone(), message: message.into() }
    }

    /// The request body for `user` content.
    pub fn request_body(&self, user: &str) -> Value {
        let messages = json!([
            { "role": "system", "content": SYSTEM_PROMPT },
            { "role": "user", "content": user }
        ]);
        match self.config.api() {
            LlmApi::OpenAi => json!({
                "model": self.config.model,
                "messages": messages,
                "temperature": 0.2,
                "stream": false,
                "response_format": { "type": "json_object" }
            }),
            LlmApi::Ollama => json!({
                "model": self.config.model,
                "messages": messages,
                "stream": false,
                "format": "json",
                "options": { "temperature": 0.2 }
            }),
        }
    }

    /// Asks the model to rewrite `draft` given `inputs` (vision, knowledge, context as JSON).
    ///
    /// # Errors
    /// [`Error::Llm`] on any transport, status, format or validation failure.
    pub async fn ask(&self, draft: &RepairPlan, inputs: &Value) -> Result<LlmAnswer> {
        let user = json!({ "inputs": inputs, "draft": draft }).to_string();
        let mut request = self.http.post(&self.config.url).json(&self.request_body(&user));
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| {
            if e.is_timeout() {
                self.fail(format!("no answer within {:?}", self.config.timeout))
            } else {
                self.fail(format!("request failed: {e}"))
            }
        })?;
        let status = response.status();
        if !status.is_success() {
            return Err(self.fail(format!("answered HTTP {status}")));
        }
        let body: Value = response.json().await.map_err(|e| {
            if e.is_timeout() {
                self.fail(format!("no answer within {:?}", self.config.timeout))
            } else {
                self.fail(format!("answer is not JSON: {e}"))
            }
        })?;
        let content = match self.config.api() {
            LlmApi::OpenAi => body.pointer("/choices/0/message/content"),
            LlmApi::Ollama => body.pointer("/message/content"),
        }
        .and_then(Value::as_str)
        .ok_or_else(|| self.fail("answer has no message content"))?;
        let answer: LlmAnswer = serde_json::from_str(strip_fences(content))
            .map_err(|e| self.fail(format!("message content is not the expected JSON object: {e}")))?;
        answer.validate().map_err(|m| self.fail(format!("answer rejected: {m}")))?;
        Ok(answer)
    }
}

/// Removes a Markdown code fence around a JSON answer, which some models add despite JSON mode.
fn strip_fences(content: &str) -> &str {
    let t = content.trim();
    let Some(inner) = t.strip_prefix("```") else { return t };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

/// Merges a validated answer into the deterministic plan (see the module documentation for what may change).
///
/// The model is held to the same rule as the deterministic synthesis: a step is kept only when it names one of
/// the sections the deterministic plan used (`[manual: <id>]`), so it stays on the diagnosed component. When no
/// step of the answer passes, the deterministic steps are kept.
pub fn merge(mut plan: RepairPlan, answer: LlmAnswer, config: &LlmConfig) -> RepairPlan {
    let allowed: Vec<StepSource> = plan.step_sources.clone();
    let source_of = |step: &str| {
        let id = step_section(step)?;
        allowed.iter().find(|s| s.section == id).cloned()
    };
    let offered = answer.steps.len();
    let kept: Vec<(String, StepSource)> = answer
        .steps
        .into_iter()
        .filter_map(|s| source_of(&s).map(|src| (s.trim().to_owned(), src)))
        .collect();
    if kept.is_empty() {
        plan.notes.push(format!(
            "model {} offered no step naming a manual section of this plan; the deterministic steps are kept",
            config.model
        ));
        return plan;
    }
    if kept.len() < offered {
        plan.notes.push(format!(
            "{} step(s) of the model named no manual section of this plan and were left out",
            offered - kept.len()
        ));
    }
    plan.summary = answer.summary.trim().to_owned();
    let mut steps: Vec<String> = plan.steps.first().cloned().into_iter().collect();
    let mut sources: Vec<StepSource> = plan.step_sources.first().cloned().into_iter().collect();
    for (step, src) in kept {
        if steps.iter().chain(&plan.safety).any(|x| is_duplicate(x, &step)) {
            continue;
        }
        steps.push(step);
        sources.push(src);
    }
    plan.steps = steps;
    plan.step_sources = sources;
    push_unique(&mut plan.parts, answer.parts, &[]);
    push_unique(&mut plan.safety, answer.safety, &[]);
    plan.backend = "llm".into();
    plan.notes.push(format!(
        "summary and steps written by model {} ({}); severity, mandatory safety and confidence from the \
         deterministic synthesis",
        config.model, config.url
    ));
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_is_inferred_from_the_path() {
        assert_eq!(LlmApi::infer("http://127.0.0.1:11434/api/chat"), LlmApi::Ollama);
        assert_eq!(LlmApi::infer("http://h/v1/chat/completions"), LlmApi::OpenAi);
        let c = LlmClient::new(LlmConfig::new("http://h/api/chat/", "m"));
        assert_eq!(c.request_body("x")["format"], "json");
    }

    #[test]
    fn answers_are_validated_and_fences_stripped() {
        let a: LlmAnswer =
            serde_json::from_str(strip_fences("```json\n{\"summary\":\"s\",\"steps\":[\"a\"]}\n```"))
                .unwrap();
        assert!(a.validate().is_ok());
        let bad = LlmAnswer { summary: " ".into(), steps: vec!["a".into()], parts: vec![], safety: vec![] };
        assert_eq!(bad.validate().unwrap_err(), "`summary` is empty");
        let bad = LlmAnswer { summary: "s".into(), steps: vec!["".into()], parts: vec![], safety: vec![] };
        assert!(bad.validate().unwrap_err().starts_with("`steps[0]`"));
    }
}

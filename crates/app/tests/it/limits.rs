//! Per-upstream limits reach the transport: a server's `read_timeout_ms` ends a call the
//! server stays silent on, while the same call through a server without it completes.

use std::time::Duration;

use serde_json::json;

use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_timeout_ends_a_call_the_server_is_silent_on() {
    let env = Harness::new()
        .upstream("patient", Era::Legacy, Profile::Basic)
        .upstream("strict", Era::Legacy, Profile::Basic)
        .config(|c| {
            let strict = c.servers.iter_mut().find(|s| s.name == "strict").unwrap();
            strict.limits.read_timeout = Some(Duration::from_millis(300));
            strict.limits.write_timeout = Some(Duration::from_millis(200));
        })
        .start()
        .await;
    let slow = |server: &str| tool_call(1, &format!("{server}__slow"), json!({"ms": 1500, "steps": 1}));
    let (_, answer) = env.call(&slow("patient")).await;
    assert!(answer.get("result").is_some() && answer["result"]["isError"] != true, "{answer}");
    let (_, answer) = env.call(&slow("strict")).await;
    // The silent stream is cut, and the answer says why.
    assert_eq!(
        answer["error"]["message"], "upstream server \"strict\" failed: no response within 300ms",
        "{answer}"
    );
    // Fast calls are unaffected.
    let (_, answer) = env.call(&tool_call(2, "strict__echo", json!({"text": "hi"}))).await;
    assert!(answer.to_string().contains("hi"), "{answer}");
}

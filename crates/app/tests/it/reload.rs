//! Config reload: a running app follows its config file — a server added, a label changed, a
//! broken file refused (the old configuration stays), a fixed one applied, a removed server
//! drained first — and a call in flight during the reloads completes.

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use switchboard_app::reload::{ReloadConfig, ReloadStatus};
use switchboard_app::{App, AppOptions};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::harness::*;

fn server(name: &str, url: &str, labels: &str) -> String {
    format!("[servers.{name}]\nurl = \"{url}\"\nlabels = [{labels}]\n")
}

/// Writes `text` and waits for the reload it causes (`attempts` goes up).
async fn rewrite(path: &Path, text: &str, reloads: &mut watch::Receiver<ReloadStatus>) -> ReloadStatus {
    let before = reloads.borrow_and_update().attempts;
    std::fs::write(path, text).unwrap();
    tokio::time::timeout(PATIENCE, reloads.wait_for(|s| s.attempts > before))
        .await
        .expect("reloaded")
        .unwrap()
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_app_follows_its_config_file_without_dropping_calls() {
    let stop = CancellationToken::new();
    let (a, b, c) = (
        RunningFixture::of(Era::Legacy, Profile::Basic, stop.child_token()).await,
        RunningFixture::of(Era::Legacy, Profile::Basic, stop.child_token()).await,
        RunningFixture::of(Era::Legacy, Profile::Basic, stop.child_token()).await,
    );
    let dir = tempfile::tempdir().unwrap();
    let (path, db) = (dir.path().join("switchboard.toml"), dir.path().join("switchboard.db"));
    let head = "[endpoint]\nprefix = \"always\"\n";
    let first = format!("{head}{}{}", server("alpha", &a.url, "\"rag\""), server("gamma", &c.url, ""));
    std::fs::write(&path, &first).unwrap();
    let config = switchboard_app::config::load(Some(&path), &[], Some(&db)).unwrap();
    let app =
        App::build(&config, AppOptions { in_memory_store: true, ..AppOptions::default() }).await.unwrap();
    for name in ["alpha", "gamma"] {
        app.registry().wait_for(name, switchboard_router::ServerState::Ready, PATIENCE).await.unwrap();
    }
    let addr = app.listen(LOOPBACK).await.unwrap();
    let client = Client::new(format!("http://{addr}/mcp"));
    let reload =
        ReloadConfig { db: Some(db.clone()), poll: Duration::from_millis(20), ..ReloadConfig::new(&path) };
    app.watch_config(reload, config);
    let mut reloads = app.reloads();

    // A call in flight on gamma, which every reload below leaves alone.
    let slow = tokio::spawn({
        let client = client.clone();
        async move { client.call(&tool_call(9, "gamma__slow", json!({"ms": 1500, "steps": 3}))).await }
    });

    // Add beta, change alpha's label.
    let second = format!(
        "{head}[router]\nlabels = [\"camera\"]\n{}{}{}",
        server("alpha", &a.url, "\"camera\""),
        server("beta", &b.url, ""),
        server("gamma", &c.url, "")
    );
    let s = rewrite(&path, &second, &mut reloads).await;
    assert_eq!(
        (s.added.as_slice(), s.changed.as_slice(), s.removed.len(), &s.error),
        (&["beta".to_owned()][..], &["alpha".to_owned()][..], 0, &None)
    );
    assert_eq!(app.registry().entry("alpha").unwrap().spec.labels, ["camera"]);
    app.registry().wait_for("beta", switchboard_router::ServerState::Ready, PATIENCE).await.unwrap();
    assert!(client.list_tools().await.iter().any(|t| t == "beta__echo"));
    assert!(app.router_settings().borrow().labels.contains("camera"), "the router settings were swapped");
    assert!(app.registration().config().labels.contains("camera"), "registrations see the new labels");

    // Broken: an unknown label. Nothing changes, the error is published.
    let broken = format!(
        "{head}{}{}{}",
        server("alpha", &a.url, "\"camera\""),
        server("beta", &b.url, ""),
        server("gamma", &c.url, "")
    );
    let s = rewrite(&path, &broken, &mut reloads).await;
    let error = s.error.clone().unwrap_or_else(|| panic!("the broken file is refused: {s:?}"));
    assert!(error.contains("unknown capability label \"camera\" for server \"alpha\""), "{error}");
    assert_eq!(s.applied, 1);
    assert!(app.registry().entry("beta").is_some() && app.registry().entry("alpha").is_some());

    // Fixed, without beta: beta drains first (a call in flight holds it), then goes.
    let beta = app.registry().entry("beta").unwrap();
    let call = beta.load().begin();
    let third = format!(
        "{head}[router]\nlabels = [\"camera\"]\n{}{}",
        server("alpha", &a.url, "\"camera\""),
        server("gamma", &c.url, "")
    );
    let before = reloads.borrow_and_update().attempts;
    std::fs::write(&path, &third).unwrap();
    while !beta.load().draining() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(app.registry().entry("beta").is_some(), "still there while its call runs");
    drop(call);
    let s = tokio::time::timeout(PATIENCE, reloads.wait_for(|s| s.attempts > before))
        .await
        .unwrap()
        .unwrap()
        .clone();
    assert_eq!(
        (s.removed.as_slice(), s.added.len(), s.changed.len(), &s.error),
        (&["beta".to_owned()][..], 0, 0, &None)
    );
    assert!(app.registry().entry("beta").is_none());

    let (status, answer) = slow.await.unwrap();
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer.get("result").is_some() && answer["result"]["isError"] != true,
        "the call in flight completed: {answer}"
    );
    app.shutdown(Duration::from_secs(10)).await;
    stop.cancel();
}

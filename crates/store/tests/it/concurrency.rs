//! Many writers at once, in one process and across two pools on the same file, must all succeed: WAL, the busy
//! timeout and `BEGIN IMMEDIATE` turn contention into waiting, never into SQLITE_BUSY.

use std::time::Duration;

use switchboard_store::{Store, StoreConfig};

use crate::common::{handshake, server, snapshot};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_never_see_busy() {
    let dir = tempfile::tempdir().unwrap();
    // The default busy timeout, as the router runs it.
    let config = StoreConfig { path: dir.path().join("sb.db"), ..StoreConfig::default() };
    let first = Store::open(&config).await.unwrap();
    // A second pool on the same file stands in for a second router process.
    let second = Store::open(&config).await.unwrap();
    assert_eq!(config.busy_timeout, Duration::from_secs(5));

    let writers = 16;
    let rounds = 25;
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..writers {
        let store = if w % 2 == 0 { first.clone() } else { second.clone() };
        tasks.spawn(async move {
            let id = format!("server-{w:02}");
            store.upsert_server(&server(&id, &id)).await?;
            for r in 0..rounds {
                store.set_server_state(&id, "ready", Some("probe ok"), r).await?;
                store.save_tool_snapshot(&snapshot(&id, r)).await?;
                store.insert_handshake(&handshake(Some(&id), r)).await?;
                store.servers().await?;
            }
            Ok::<_, switchboard_store::Error>(())
        });
    }
    let mut failures = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        if let Err(err) = joined.expect("writer task panicked") {
            failures.push(format!("{err}: {:?}", std::error::Error::source(&err)));
        }
    }
    assert!(failures.is_empty(), "writers failed: {failures:#?}");

    assert_eq!(first.servers().await.unwrap().len(), writers);
    let expected = writers * usize::try_from(rounds).unwrap();
    assert_eq!(second.handshakes(None, u32::MAX).await.unwrap().len(), expected);
    for w in 0..writers {
        let id = format!("server-{w:02}");
        let latest = first.latest_tool_snapshot(&id).await.unwrap().unwrap();
        assert_eq!(latest.taken_at_ms, rounds - 1);
    }
    first.close().await;
    second.close().await;
}

/// Ten processes started at once on a fresh file (say, several `switchboard` commands launched together) must
/// all open it: only one of them may run the migrations, and the others must find them applied instead of
/// failing with "table servers already exists". Each open here has its own thread, runtime and pool, which is
/// what a separate process has; the barrier makes them start together. Several fresh files make a lost race
/// all but certain to show.
#[test]
fn ten_opens_at_once_of_one_fresh_file_all_succeed() {
    const OPENS: usize = 10;
    const ROUNDS: usize = 5;
    let dir = tempfile::tempdir().unwrap();
    for round in 0..ROUNDS {
        let config =
            StoreConfig { path: dir.path().join(format!("fresh-{round}.db")), ..StoreConfig::default() };
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(OPENS));
        let threads: Vec<_> = (0..OPENS)
            .map(|_| {
                let (config, barrier) = (config.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                    barrier.wait();
                    runtime.block_on(async {
                        let store = Store::open(&config).await?;
                        let servers = store.servers().await?;
                        store.close().await;
                        Ok::<_, switchboard_store::Error>(servers.len())
                    })
                })
            })
            .collect();
        let results: Vec<_> =
            threads.into_iter().map(|t| t.join().expect("opening thread panicked")).collect();
        let failures: Vec<String> = results
            .iter()
            .filter_map(|r| r.as_ref().err())
            .map(|e| format!("{e}: {:?}", std::error::Error::source(e)))
            .collect();
        assert!(
            failures.is_empty(),
            "round {round}: {} of {OPENS} opens failed: {failures:#?}",
            failures.len()
        );
        assert!(results.iter().all(|r| matches!(r, Ok(0))), "round {round}: {results:?}");
    }
}

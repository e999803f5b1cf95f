//! The knowledge base: the labelled retrieval benchmark, part-number ranking, hostile input, imports and errors.

use std::path::PathBuf;

use serde::Deserialize;
use switchboard_servers::{
    Error,
    knowledge::{KnowledgeBase, SearchQuery},
};

#[derive(Debug, Deserialize)]
struct Labelled {
    query: String,
    part_number: Option<String>,
    component_kind: Option<String>,
    relevant: Vec<String>,
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

#[tokio::test]
async fn labelled_queries_recall_at_3() {
    let kb = KnowledgeBase::embedded().await.unwrap();
    let text = std::fs::read_to_string(fixture("knowledge_queries.json")).unwrap();
    let labelled: Vec<Labelled> = serde_json::from_str(&text).unwrap();
    assert!(!labelled.is_empty());

    let mut hits = 0usize;
    let mut misses = Vec::new();
    for l in &labelled {
        for id in &l.relevant {
            assert!(kb.section(id).await.unwrap().is_some(), "label names unknown section {id}");
        }
        let q = SearchQuery {
            query: l.query.clone(),
            part_number: l.part_number.clone(),
            component_kind: l.component_kind.clone(),
            top_k: 3,
            ..SearchQuery::default()
        };
        let results = kb.search(&q).await.unwrap();
        let ids: Vec<&str> = results.iter().map(|h| h.id.as_str()).collect();
        if l.relevant.iter().any(|r| ids.contains(&r.as_str())) {
            hits += 1;
        } else {
            misses.push(format!(
                "  {:?} part={:?} kind={:?}\n    want {:?}\n    got  {:?}",
                l.query,
                l.part_number,
                l.component_kind,
                l.relevant,
                results.iter().map(|h| format!("{} {:.3}", h.id, h.score)).collect::<Vec<_>>()
            ));
        }
    }
    let recall = hits as f64 / labelled.len() as f64;
    println!("recall@3 = {hits}/{} = {recall:.3}", labelled.len());
    for miss in &misses {
        println!("miss:\n{miss}");
    }
    assert!(recall >= 0.9, "recall@3 {recall:.3} < 0.9; misses:\n{}", misses.join("\n"));
}

#[tokio::test]
async fn embedded_corpus_is_large_enough() {
    let kb = KnowledgeBase::embedded().await.unwrap();
    let n = kb.len().await.unwrap();
    assert!(n >= 150, "only {n} sections");
}

#[tokio::test]
async fn sqlite_has_fts5_and_trigram() {
    let kb = KnowledgeBase::in_memory().await.unwrap();
    let fts5: i64 = sqlx::query_scalar("SELECT sqlite_compileoption_used('ENABLE_FTS5')")
        .fetch_one(kb.pool())
        .await
        .unwrap();
    assert_eq!(fts5, 1);
    // The trigram tokenizer matches substrings, which unicode61 would not.
    sqlx::query("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')").execute(kb.pool()).await.unwrap();
    sqlx::query("INSERT INTO t (x) VALUES ('AMS111733')").execute(kb.pool()).await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t WHERE t MATCH '\"S1117\"'")
        .fetch_one(kb.pool())
        .await
        .unwrap();
    assert_eq!(n, 1);
}

#[tokio::test]
async fn exact_part_number_ranks_first() {
    let kb = KnowledgeBase::embedded().await.unwrap();
    // In the text, with no explicit part number: a query that BM25 alone would send elsewhere.
    let hits = kb.search(&SearchQuery::new("hot 1N5822 on the board")).await.unwrap();
    assert!(
        hits[0]
            .matched
            .iter()
            .any(|m| matches!(m, switchboard_servers::knowledge::MatchReason::ExactPart { .. })),
        "{hits:#?}"
    );
    // Spelled with a space and lower case, passed explicitly.
    let hits = kb.search(&SearchQuery::new("hot").part_number("lm 7805")).await.unwrap();
    assert_eq!(hits[0].id, "linreg-7805-dissipation");
    assert!(hits[0].score > 0.85 && hits[0].score <= 1.0, "{}", hits[0].score);
    // Misspelt: fuzzy, below any exact match.
    let hits = kb.search(&SearchQuery::new("").part_number("AMS117-3.3")).await.unwrap();
    assert_eq!(hits[0].id, "linreg-ams1117-sot223");
    assert!(hits[0].score < 0.85);
    let hits = kb.search(&SearchQuery::new("cap warm").part_number("EEUFR1V")).await.unwrap();
    assert!(hits.iter().all(|h| h.id.starts_with("ecap-")), "{hits:#?}");
}

#[tokio::test]
async fn scores_are_normalised_and_top_k_is_clamped() {
    let kb = KnowledgeBase::embedded().await.unwrap();
    let hits = kb.search(&SearchQuery::new("hot terminal screw").top_k(500)).await.unwrap();
    assert_eq!(hits.len(), 20);
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(hits.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    assert_eq!(kb.search(&SearchQuery::new("hot terminal screw")).await.unwrap().len(), 3);
}

#[tokio::test]
async fn component_kind_boosts_matching_sections() {
    let kb = KnowledgeBase::embedded().await.unwrap();
    let hits = kb
        .search(&SearchQuery::new("hot terminal screw").component_kind("contactor").top_k(3))
        .await
        .unwrap();
    assert!(hits.iter().all(|h| h.kind == "contactor"), "{hits:#?}");
}

#[tokio::test]
async fn fts5_hostile_input_never_errors() {
    let kb = KnowledgeBase::embedded().await.unwrap();
    let before = kb.len().await.unwrap();
    for q in [
        "\"AND OR NEAR( * : ^",
        "NEAR(hot cold, 2)",
        "title:hot OR",
        "\"unbalanced",
        "-hot +cold {x} [y] 'z'",
        "'; DROP TABLE kb_section; --",
        "***",
        "^",
        "a",
        "ÄÖÜ ✓ 熱い",
    ] {
        let hits = kb.search(&SearchQuery::new(q)).await;
        assert!(hits.is_ok(), "{q:?}: {hits:?}");
        let hits = kb.search(&SearchQuery::new("hot").part_number(q)).await;
        assert!(hits.is_ok(), "part {q:?}: {hits:?}");
    }
    assert_eq!(kb.len().await.unwrap(), before, "no input changes the data");
    assert!(kb.section("linreg-7805-dissipation").await.unwrap().is_some());
}

#[tokio::test]
async fn empty_query_is_a_clear_error() {
    let kb = KnowledgeBase::embedded().await.unwrap();
    let err = kb.search(&SearchQuery::new("   ")).await.unwrap_err();
    assert!(matches!(err, Error::EmptyQuery));
    assert!(err.to_string().contains("empty query"));
    // A part number alone is enough.
    assert!(!kb.search(&SearchQuery::new("").part_number("IRF540N")).await.unwrap().is_empty());
}

const EXTRA_MD: &str = "# Flux capacitors

## Flux capacitor overheating at 88 mph
id: flux-capacitor-88
kind: flux-capacitor
parts: DMC-12 FC1, Brown FX-1955
symptoms: flux capacitor glowing, time circuit hot

The flux capacitor dissipates 1.21 GW during a jump.

Steps:
1. Check the plutonium chamber.
2. Image the flux capacitor housing.

Safety:
- Do not touch during a jump.

Source: test fixture
";

#[tokio::test]
async fn imports_markdown_and_json_and_replaces_by_id() {
    let kb = KnowledgeBase::embedded().await.unwrap();
    let before = kb.len().await.unwrap();
    let dir = tempfile::tempdir().unwrap();

    let md = dir.path().join("flux.md");
    std::fs::write(&md, EXTRA_MD).unwrap();
    let report = kb.import_file(&md).await.unwrap();
    assert_eq!((report.added, report.replaced), (1, 0));
    assert_eq!(kb.len().await.unwrap(), before + 1);
    let hits = kb.search(&SearchQuery::new("time circuit glowing").part_number("FX1955")).await.unwrap();
    assert_eq!(hits[0].id, "flux-capacitor-88");

    // JSON: one new section and one that replaces the Markdown one.
    let mut replaced = kb.section("flux-capacitor-88").await.unwrap().unwrap();
    replaced.title = "Flux capacitor replaced".into();
    replaced.parts = vec!["MRFUSION-2".into()];
    let json = serde_json::json!([
        replaced,
        {
            "id": "hoverboard-pad",
            "family": "Hoverboards",
            "title": "Hoverboard lift pad hot",
            "kind": "hoverboard",
            "parts": ["Mattel HB-2015"],
            "symptoms": ["pad hot over water"],
            "body": "Lift pads lose power over water.",
            "steps": ["Stay off water."],
            "safety": [],
            "source": "test"
        }
    ]);
    let json_path = dir.path().join("extra.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    let report = kb.import_file(&json_path).await.unwrap();
    assert_eq!((report.added, report.replaced), (1, 1));
    assert_eq!(kb.len().await.unwrap(), before + 2);
    assert_eq!(kb.section("flux-capacitor-88").await.unwrap().unwrap().title, "Flux capacitor replaced");
    // The old part number is gone from both part indexes, the new one is found.
    let hits = kb.search(&SearchQuery::new("").part_number("FX-1955")).await.unwrap();
    assert!(hits.iter().all(|h| h.id != "flux-capacitor-88"), "{hits:#?}");
    let hits = kb.search(&SearchQuery::new("").part_number("MRFUSION-2")).await.unwrap();
    assert_eq!(hits[0].id, "flux-capacitor-88");
    let hits = kb.search(&SearchQuery::new("pad hot over water")).await.unwrap();
    assert_eq!(hits[0].id, "hoverboard-pad");

    // import_paths: a directory and a missing file; the good files still count.
    let report = kb.import_paths(&[dir.path().to_path_buf(), dir.path().join("missing.md")]).await;
    assert_eq!(report.added, 0);
    assert_eq!(report.replaced, 3);
    assert_eq!(report.errors.len(), 1);
    assert!(matches!(report.errors[0], Error::Io { .. }));
}

#[tokio::test]
async fn malformed_file_error_names_the_line() {
    let kb = KnowledgeBase::in_memory().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.md");
    std::fs::write(&bad, EXTRA_MD.replace("2. Image", "5. Image")).unwrap();
    let err = kb.import_file(&bad).await.unwrap_err();
    match &err {
        Error::Parse { path, line, message } => {
            assert_eq!(path, &bad);
            assert_eq!(*line, 13);
            assert!(message.contains("expected 2"), "{message}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
    assert!(err.to_string().contains("bad.md:13:"), "{err}");
    assert!(kb.is_empty().await.unwrap(), "nothing from a bad file is stored");

    let bad_json = dir.path().join("bad.json");
    std::fs::write(&bad_json, "[\n  {\"id\": \"x\",\n  \"title\": }\n]").unwrap();
    let err = kb.import_file(&bad_json).await.unwrap_err();
    assert!(matches!(err, Error::Json { line: 3, .. }), "{err:?}");

    // A directory import reports the bad file and keeps the good one.
    std::fs::write(dir.path().join("good.md"), EXTRA_MD).unwrap();
    let report = kb.import_dir(dir.path()).await.unwrap();
    assert_eq!(report.added, 1);
    assert_eq!(report.errors.len(), 2);
    let txt = dir.path().join("notes.txt");
    std::fs::write(&txt, "x").unwrap();
    assert!(matches!(kb.import_file(&txt).await, Err(Error::UnsupportedFile { .. })));
}

#[tokio::test]
async fn file_database_persists() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.sqlite");
    {
        let kb = KnowledgeBase::open_path(&path).await.unwrap();
        let md = dir.path().join("flux.md");
        std::fs::write(&md, EXTRA_MD).unwrap();
        kb.import_file(&md).await.unwrap();
        kb.pool().close().await;
    }
    let kb = KnowledgeBase::open_path(&path).await.unwrap();
    let hits = kb.search(&SearchQuery::new("flux capacitor glowing")).await.unwrap();
    assert_eq!(hits[0].id, "flux-capacitor-88");
}

/// A structured query (component group and failure mode as fields, equipment as a filter) returns sections of
/// that group about that mode, and each hit says why it matched.
#[tokio::test]
async fn structured_queries_stay_on_the_component_and_say_why() {
    let kb = KnowledgeBase::embedded().await.unwrap();
    let q = SearchQuery::new("termination loose-connection")
        .component_kind("termination")
        .component_group("termination")
        .failure_mode("loose-connection")
        .equipment("panel");
    let hits = kb.search(&q).await.unwrap();
    assert_eq!(hits.len(), 3);
    for h in &hits {
        assert_eq!(h.group, "termination", "{} is about {}", h.id, h.group);
        assert!(h.modes.iter().any(|m| m == "loose-connection"), "{} {:?}", h.id, h.modes);
        let why: Vec<String> = h.matched.iter().map(ToString::to_string).collect();
        assert!(why.iter().any(|w| w.starts_with("component group termination")), "{why:?}");
        assert!(why.iter().any(|w| w == "failure mode loose-connection"), "{why:?}");
    }
    // The old free-text query of the flow pulled battery, UPS and contactor sections in; the structure does not.
    assert!(!hits.iter().any(|h| h.id.starts_with("batt-") || h.id.starts_with("cont-")), "{hits:?}");

    // Equipment filters: nothing of a panel comes back for a PV module, even for a panel word.
    let q = SearchQuery::new("breaker lug hot").failure_mode("pv-hotspot").equipment("pv-module").top_k(5);
    let hits = kb.search(&q).await.unwrap();
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h.group == "pv-module" || h.group == "survey-method"), "{hits:?}");

    // No text at all is fine when the structure is given.
    let q = SearchQuery::default().component_group("bus").failure_mode("overload-imbalance");
    let hits = kb.search(&q).await.unwrap();
    assert_eq!(hits[0].group, "bus");
}

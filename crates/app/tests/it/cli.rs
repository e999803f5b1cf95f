//! `switchboard probe`, `serve` and `servers` as a user runs them.

use std::process::Command;
use std::time::Duration;

use crate::*;

const EVERYTHING_TOOLS: usize = 13;

#[test]
fn probe_prints_the_era_and_every_tool_of_server_everything() {
    let out = Command::new(switchboard())
        .args(["probe", "--", &node(), &everything_js(), "stdio"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("era           legacy (2025-11-25) via initialize"), "{stdout}");
    assert!(stdout.contains(&format!("tools ({EVERYTHING_TOOLS}):")), "{stdout}");
    for tool in
        ["echo", "get-sum", "get-tiny-image", "trigger-long-running-operation", "simulate-research-query"]
    {
        assert!(
            stdout.lines().any(|l| l.trim_start().starts_with(&format!("{tool} — "))),
            "{tool} missing:\n{stdout}"
        );
    }
    let json = Command::new(switchboard())
        .args(["probe", "--json", "--", &node(), &everything_js(), "stdio"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["handshake"]["era"], "legacy");
    assert_eq!(v["tools"].as_array().unwrap().len(), EVERYTHING_TOOLS);
}

#[test]
fn probe_of_a_dead_url_fails_with_one_line() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let out = Command::new(switchboard()).args(["probe", "--timeout", "3", &url]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with("probe failed: ") && err.contains(&url) && err.contains("refused"), "{err}");
}

#[test]
fn probe_of_a_command_that_dies_names_its_stderr() {
    let out = Command::new(switchboard())
        .args(["probe", "--timeout", "5", "--", "sh", "-c", "echo 'fatal: missing API key' >&2; exit 1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("fatal: missing API key"), "{err}");
}

#[test]
fn probe_rejects_a_non_url() {
    let out = Command::new(switchboard()).args(["probe", "localhost:3000"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an http(s):// or ws(s):// URL"));
}

/// `serve` registers the configured servers in the store; `servers` reads them back,
/// and the server id is the same after a restart.
#[test]
fn serve_then_servers_shows_state_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("switchboard.toml");
    let mcp_json = dir.path().join("mcp.json");
    std::fs::write(
        &cfg,
        format!(
            "[router]\nrefresh_interval_secs = 300\n[servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\n\
             [servers.crashy]\ncommand = \"sh\"\nargs = [\"-c\", \"echo 'boom: no config' >&2; exit 3\"]\n\
             [servers.crashy.restart]\ninitial_backoff_ms = 10\nmax_backoff_ms = 50\n",
            node(),
            everything_js()
        ),
    )
    .unwrap();
    std::fs::write(
        &mcp_json,
        r#"{"mcpServers": {"old-sse": {"url": "http://127.0.0.1:9/sse", "type": "sse"}}}"#,
    )
    .unwrap();
    let db = dir.path().join("sb.db");
    let run_serve = || {
        let mut child = Command::new(switchboard())
            .args([
                "--config",
                cfg.to_str().unwrap(),
                "--db",
                db.to_str().unwrap(),
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--mcp-json",
                mcp_json.to_str().unwrap(),
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until both servers settled, as `servers` shows it.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let rows = loop {
            std::thread::sleep(Duration::from_millis(300));
            let out = Command::new(switchboard())
                .args(["--config", cfg.to_str().unwrap(), "--db", db.to_str().unwrap(), "servers", "--json"])
                .output()
                .unwrap();
            let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            let settled = rows.as_array().is_some_and(|a| {
                a.len() == 2
                    && a.iter().any(|r| r["state"] == "ready")
                    && a.iter().any(|r| {
                        r["state"] == "unavailable" && r["reason"].as_str().unwrap_or("").contains("5 times")
                    })
            });
            if settled || std::time::Instant::now() > deadline {
                break rows;
            }
        };
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        let status = child.wait().unwrap();
        let mut log = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut log).unwrap();
        (rows, status, log)
    };
    let (rows, status, log) = run_serve();
    assert!(status.success(), "serve exits cleanly on SIGTERM: {log}");
    assert!(log.contains("skipped") && log.contains("HTTP+SSE"), "bad mcp.json entry is a warning: {log}");
    let rows = rows.as_array().unwrap().clone();
    let ev = rows.iter().find(|r| r["name"] == "everything").unwrap();
    assert_eq!(ev["state"], "ready", "{rows:?}");
    assert_eq!(ev["era"], "legacy");
    // The router declares sampling, elicitation and roots (it relays those requests to its
    // callers), so server-everything also lists the 4 tools that need them; `probe`, which
    // declares nothing, sees 13.
    assert_eq!(ev["tools"], EVERYTHING_TOOLS + 4);
    let crashy = rows.iter().find(|r| r["name"] == "crashy").unwrap();
    assert!(crashy["reason"].as_str().unwrap().contains("boom: no config"), "{crashy}");
    let table = Command::new(switchboard())
        .args(["--config", cfg.to_str().unwrap(), "--db", db.to_str().unwrap(), "servers"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("everything") && table.contains("ready") && table.contains("unavailable"),
        "{table}"
    );
    let (rows2, _, _) = run_serve();
    assert_eq!(
        rows2.as_array().unwrap().iter().find(|r| r["name"] == "everything").unwrap()["server_id"],
        ev["server_id"]
    );
}

#[test]
fn a_corrupt_database_is_a_clear_startup_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bad.db");
    std::fs::write(&db, vec![0x5a; 8192]).unwrap();
    let out = Command::new(switchboard()).args(["--db", db.to_str().unwrap(), "servers"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a usable sqlite database") && err.contains("bad.db"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_config_typo_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, "[servers.x]\ncomand = \"npx\"\n").unwrap();
    let out = Command::new(switchboard())
        .args(["--config", cfg.to_str().unwrap(), "--db", dir.path().join("d.db").to_str().unwrap(), "serve"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("comand") && err.contains("c.toml"), "{err}");
}

/// The built-in servers are real MCP servers: probed over stdio like any other.
#[test]
fn builtin_servers_run_standalone_over_stdio() {
    for (name, tool) in [
        ("vision", "analyze_thermal_image"),
        ("knowledge", "search_manual"),
        ("reasoning", "generate_repair_steps"),
    ] {
        let out = Command::new(switchboard())
            .args(["probe", "--json", "--", switchboard(), "server", name, "--stdio"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["handshake"]["era"], "modern", "{name}");
        let tools: Vec<&str> =
            v["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(tools, [tool], "{name}");
        assert!(v["tools"][0]["outputSchema"].is_object(), "{name} declares an output schema");
        assert!(v["quarantined"].as_array().unwrap().is_empty(), "{name}: {}", v["quarantined"]);
    }
}

/// Imported procedures persist in the knowledge base and are found by search; a bad
/// file is reported with its line and does not stop the others.
#[test]
fn knowledge_import_persists_and_reports_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sb.db");
    let good = dir.path().join("busway.md");
    std::fs::write(
        &good,
        "# Busway\n\n## Busway plug-in unit stab overheating\nid: busway-plug-stab-hot\nkind: busway\nparts: XJL-PLUG-400\nsymptoms: hot plug-in unit, discoloured stabs\n\nPlug-in units clamp onto the busway with spring stabs; a weak stab heats at the contact line.\n\nSteps:\n1. Compare the plug-in unit with its neighbours under similar load.\n2. De-energise the busway run, remove the plug-in unit and inspect the stabs.\n3. Replace stabs or the unit when discoloured; re-image under load.\n4. Record ΔT and load.\n\nSafety:\n- Busway plug-ins are removed only with the run de-energised and locked out.\n\nSource: Switchboard field guide (team-written), test fixture\n",
    )
    .unwrap();
    let bad = dir.path().join("bad.md");
    std::fs::write(&bad, "# Bad\n\n## No id here\nkind: fuse\n").unwrap();
    let run = |args: &[&str]| Command::new(switchboard()).arg("--db").arg(&db).args(args).output().unwrap();
    let out = run(&["knowledge", "import", good.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("added 1"), "{stdout}");
    assert!(stderr.contains("bad.md"), "{stderr}");
    let found = run(&["knowledge", "search", "plug-in unit stab hot on busway"]);
    assert!(
        String::from_utf8_lossy(&found.stdout).lines().next().unwrap_or("").contains("busway-plug-stab-hot")
    );
    let part = run(&["knowledge", "search", "hot", "--part", "XJL-PLUG-400"]);
    assert!(
        String::from_utf8_lossy(&part.stdout).lines().next().unwrap_or("").contains("busway-plug-stab-hot")
    );
    // The shipped corpus is there too.
    let shipped = run(&["knowledge", "search", "bulging electrolytic capacitor"]);
    assert_eq!(String::from_utf8_lossy(&shipped.stdout).lines().count(), 3);
}

/// With no config file, `serve` runs the embedded defaults: the three built-in servers,
/// handshaken in-process like any other server.
#[test]
fn serve_on_embedded_defaults_has_the_builtin_servers_ready() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sb.db");
    let mut child = Command::new(switchboard())
        .current_dir(dir.path())
        .env_remove("SWITCHBOARD_CONFIG")
        .args(["--db", db.to_str().unwrap(), "serve", "--listen", "127.0.0.1:0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let rows = loop {
        std::thread::sleep(Duration::from_millis(300));
        let out = Command::new(switchboard())
            .current_dir(dir.path())
            .args(["--db", db.to_str().unwrap(), "servers", "--json"])
            .output()
            .unwrap();
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let ready = rows.as_array().is_some_and(|a| a.len() == 3 && a.iter().all(|r| r["state"] == "ready"));
        if ready || std::time::Instant::now() > deadline {
            break rows;
        }
    };
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    assert!(child.wait().unwrap().success());
    let names: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["knowledge", "reasoning", "vision"], "{rows}");
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .all(|r| r["state"] == "ready" && r["transport"] == "in-process" && r["era"] == "modern"),
        "{rows}"
    );
}

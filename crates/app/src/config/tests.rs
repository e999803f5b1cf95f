//! Tests of the config file: every section, the merge with `serve` flags, the embedded default.

use super::*;

#[test]
fn vision_image_allowlist_is_read_and_checked() {
    let c = parse("[vision]\nimage_allow = [\"cams.example.com\", \"10.0.0.0/8\"]\n", "v.toml", &[], None)
        .unwrap();
    assert_eq!(c.image_allow, ["cams.example.com", "10.0.0.0/8"]);
    assert!(parse("", "v.toml", &[], None).unwrap().image_allow.is_empty(), "nothing by default");
    let e = parse("[vision]\nimage_allow = [\"http://x/\"]\n", "v.toml", &[], None).unwrap_err().to_string();
    assert!(e.contains("[vision] image_allow"), "{e}");
}

#[test]
fn router_stats_and_call_connection_keys() {
    let c = parse(
        "[router]\nstats_interval_secs = 0.5\nmax_call_connections = 3\ncall_connection_idle_secs = 7\ncall_connection_wait_secs = 9\n",
        "r.toml",
        &[],
        None,
    )
    .unwrap();
    let r = &c.registry;
    assert_eq!(r.stats_interval, Duration::from_millis(500));
    assert_eq!(
        (r.max_call_connections, r.call_connection_idle, r.call_connection_wait),
        (3, Duration::from_secs(7), Duration::from_secs(9))
    );
    let d = parse("", "r.toml", &[], None).unwrap().registry;
    assert_eq!(d.max_call_connections, RegistryConfig::default().max_call_connections);
    let e = parse("[router]\nmax_call_connections = 0\n", "r.toml", &[], None).unwrap_err().to_string();
    assert!(e.contains("[router].max_call_connections"), "{e}");
    let e = parse("[router]\nstats_interval_secs = 0\n", "r.toml", &[], None).unwrap_err().to_string();
    assert!(e.contains("stats_interval_secs"), "{e}");
}

#[test]
fn embedded_default_parses() {
    let c = parse(EMBEDDED_DEFAULT, "embedded", &[], None).unwrap();
    let names: Vec<_> = c.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["knowledge", "reasoning", "vision"]);
    assert_eq!(c.registry.refresh_interval, Duration::from_secs(300));
    assert_eq!(c.call_timeout, Duration::from_secs(120));
    assert_eq!(c.traces_kept, 10_000);
}

#[test]
fn endpoint_section() {
    let c = parse(
        "[endpoint]\ncall_timeout_secs = 5\ntraces_kept = 50\ntoken_env = \"MY_TOKEN\"\n",
        "e.toml",
        &[],
        None,
    )
    .unwrap();
    assert_eq!(
        (c.call_timeout, c.traces_kept, c.token_env.as_deref()),
        (Duration::from_secs(5), 50, Some("MY_TOKEN"))
    );
    let e = parse("[endpoint]\ntraces_kept = 0\n", "e.toml", &[], None).unwrap_err().to_string();
    assert!(e.contains("traces_kept"), "{e}");
}

#[test]
fn endpoint_table_and_flags_merge() {
    let text = "[endpoint]\nlisten = \"127.0.0.1:7010\"\nprefix = \"never\"\nseparator = \".\"\n\
                allowed_origins = [\"https://app.example.com\"]\nbody_limit = 65536\n\
                [servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\n";
    let mut c = parse(text, "e.toml", &[], None).unwrap();
    assert_eq!(c.endpoint.listen, Some("127.0.0.1:7010".parse().unwrap()));
    assert_eq!(c.endpoint.federation, FederationConfig { mode: PrefixMode::Never, separator: ".".into() });
    assert_eq!(c.endpoint.allowed_origins, ["https://app.example.com"]);
    assert_eq!(c.endpoint.body_limit, 65536);
    c.apply_serve_flags(ServeFlags {
        listen: Some("127.0.0.1:0".parse().unwrap()),
        prefix: Some(PrefixMode::Always),
        separator: Some("_".into()),
        upstreams: vec![upstreams::parse_url_flag("http://127.0.0.1:2/mcp").unwrap()],
    })
    .unwrap();
    assert_eq!(c.endpoint.listen, Some("127.0.0.1:0".parse().unwrap()));
    assert_eq!(c.endpoint.federation, FederationConfig { mode: PrefixMode::Always, separator: "_".into() });
    let names: Vec<_> = c.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a", "127-0-0-1-2"], "a file's servers stay");
    let bad = parse("[endpoint]\nprefix = \"sometimes\"\n", "e.toml", &[], None).unwrap_err().to_string();
    assert!(bad.contains("e.toml") && bad.contains("sometimes"), "{bad}");
    let bad = parse("[endpoint]\nseparator = \"\"\n", "e.toml", &[], None).unwrap_err().to_string();
    assert!(bad.contains("endpoint.separator"), "{bad}");
}

#[test]
fn listener_and_session_settings() {
    let c = parse(
        "[endpoint]\nheader_read_timeout_secs = 3\nidle_timeout_secs = 7\nmax_connections = 9\n\
         answer_timeout_secs = 30\nsession_key_file = \"/etc/sb.key\"\n",
        "e.toml",
        &[],
        None,
    )
    .unwrap();
    let l = &c.endpoint.listener;
    assert_eq!(
        (l.header_read_timeout, l.idle_timeout, l.max_connections),
        (Duration::from_secs(3), Duration::from_secs(7), 9)
    );
    assert_eq!(c.endpoint.answer_timeout, Duration::from_secs(30));
    assert_eq!(c.endpoint.session_key_file.as_deref(), Some(Path::new("/etc/sb.key")));
    let d = parse("", "e.toml", &[], None).unwrap();
    assert_eq!(d.endpoint.listener, crate::http::ListenerConfig::default());
    let e = parse("[endpoint]\nidle_timeout_secs = 0\n", "e.toml", &[], None).unwrap_err().to_string();
    assert!(e.contains("endpoint.idle_timeout_secs"), "{e}");
    let e = parse("[endpoint]\nmax_connections = 0\n", "e.toml", &[], None).unwrap_err().to_string();
    assert!(e.contains("endpoint.max_connections"), "{e}");
}

#[test]
fn list_page_size_and_answer_limit() {
    let c = parse("[endpoint]\npage_size = 3\nanswer_limit_bytes = 4096\n", "e.toml", &[], None).unwrap();
    assert_eq!((c.endpoint.page_size, c.endpoint.answer_limit), (3, 4096));
    let d = parse("", "e.toml", &[], None).unwrap();
    assert_eq!(
        (d.endpoint.page_size, d.endpoint.answer_limit),
        (crate::endpoint::DEFAULT_PAGE_SIZE, crate::edge::MAX_ANSWER_BYTES)
    );
    let e = parse("[endpoint]\npage_size = 0\n", "e.toml", &[], None).unwrap_err().to_string();
    assert!(e.contains("endpoint.page_size"), "{e}");
    let e = parse("[endpoint]\nanswer_limit_bytes = 10\n", "e.toml", &[], None).unwrap_err().to_string();
    assert!(e.contains("endpoint.answer_limit_bytes"), "{e}");
}

#[test]
fn upstream_flags_replace_the_embedded_builtins() {
    let mut c = parse(EMBEDDED_DEFAULT, "embedded", &[], None).unwrap();
    c.embedded_default = true;
    c.apply_serve_flags(ServeFlags {
        upstreams: vec![upstreams::parse_cmd_flag("vision=mcp-fixture --transport stdio").unwrap()],
        ..Default::default()
    })
    .unwrap();
    let names: Vec<_> = c.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["vision"]);
    assert_eq!(c.servers[0].source, upstreams::SOURCE);
    let mut c = parse(EMBEDDED_DEFAULT, "embedded", &[], None).unwrap();
    c.embedded_default = true;
    c.apply_serve_flags(ServeFlags { separator: Some("a b".into()), ..Default::default() }).unwrap_err();
    c.apply_serve_flags(ServeFlags::default()).unwrap();
    assert_eq!(c.servers.len(), 3, "without --upstream* the built-ins stay");
}

#[test]
fn unknown_keys_are_named() {
    let e = parse("[router]\nrefresh_intervl_secs = 3\n", "x.toml", &[], None).unwrap_err().to_string();
    assert!(e.contains("x.toml") && e.contains("refresh_intervl_secs"), "{e}");
}

#[test]
fn unknown_server_labels_are_refused_with_a_suggestion() {
    let e = parse("[servers.x]\nbuiltin = \"vision\"\nlabels = [\"visoin\"]\n", "l.toml", &[], None)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "l.toml: unknown capability label \"visoin\" for server \"x\": did you mean \"vision\"? (known: tools, resources, prompts, completions, logging, knowledge, rag, reasoning, thermal-analysis, vision)"
    );
    let ok = "[router]\nlabels = [\"camera\"]\n[servers.x]\nbuiltin = \"vision\"\nlabels = [\"camera\", \"tools\", \"rag\"]\n";
    assert_eq!(parse(ok, "l.toml", &[], None).unwrap().servers[0].labels, ["camera", "tools", "rag"]);
    let e = parse("[router]\nlabels = [\"no spaces\"]\n", "l.toml", &[], None).unwrap_err().to_string();
    assert!(e.contains("[router].labels"), "{e}");
}

#[test]
fn per_server_timeouts_write_below_read() {
    let e = parse(
        "[servers.x]\nurl = \"http://127.0.0.1:1/mcp\"\nread_timeout_ms = 1000\nwrite_timeout_ms = 2000\n",
        "t.toml",
        &[],
        None,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "t.toml: servers.x: write_timeout_ms (2000) must be below read_timeout_ms (1000): a write has to finish within a read"
    );
    let c = parse("[servers.x]\ncommand = \"a\"\npool = 2\n", "t.toml", &[], None).unwrap();
    assert_eq!(c.servers[0].limits.pool, Some(2));
}

#[test]
fn router_table_registration_and_scheduler_keys() {
    let text = "[router]\nrouter_id = \"edge-1\"\nmcp_version = [\"2026-07-28\"]\nregistration_path = \"/reg\"\n\
                confirm_path = \"/reg-confirm\"\nstatus_path = \"/reg-status\"\nregistration_allow = [\"10.0.0.0/8\"]\n\
                max_registered_servers = 5\nload_sampling_interval_ms = 1000\nmax_fallback_retries = 1\n\
                session_affinity_window_secs = 60\noverload_threshold = 90.5\nprefix = \"always\"\n";
    let c = parse(text, "r.toml", &[], None).unwrap();
    let r = &c.router;
    assert_eq!(r.registration.router_id, "edge-1");
    assert_eq!(r.registration.mcp_versions, ["2026-07-28"]);
    assert_eq!(
        (
            r.registration_paths.registration.as_str(),
            r.registration_paths.confirm.as_str(),
            r.registration_paths.status.as_str()
        ),
        ("/reg", "/reg-confirm", "/reg-status")
    );
    assert!(r.registration.allow.check("http://10.1.1.1/mcp").is_ok());
    assert!(r.registration.allow.check("http://127.0.0.1/mcp").is_err());
    assert_eq!(r.registration.max_servers, 5);
    assert_eq!(r.registration.load_sampling_interval, Duration::from_secs(1));
    let s = &r.scheduler;
    assert_eq!(
        (s.max_fallback_retries, s.affinity_window, s.overload_threshold, s.load_sampling_interval),
        (1, Duration::from_secs(60), 90.5, Duration::from_secs(1))
    );
    assert_eq!(c.endpoint.federation.mode, PrefixMode::Always, "[router] prefix sets the federation's mode");

    let d = parse("", "r.toml", &[], None).unwrap().router;
    assert_eq!(d.scheduler, switchboard_router::SchedulerConfig::default());
    assert_eq!(d.registration.mcp_versions, ["2025-11-25", "2026-07-28"]);
    assert_eq!(d.registration_paths.registration, "/register");
    assert!(d.registration.allow.check("http://127.0.0.1:9/mcp").is_ok());
    assert!(d.registration.allow.check("http://192.168.1.2:9/mcp").is_err());
    assert_eq!(d.registration.router_id, process_router_id(), "a random id, stable for the process");
    assert_eq!(parse("", "r.toml", &[], None).unwrap().router.registration.router_id, process_router_id());

    for (text, key) in [
        ("[router]\nmcp_version = [\"2024-11-05\"]\n", "[router].mcp_version"),
        ("[router]\nregistration_path = \"/mcp\"\n", "[router].registration_path"),
        ("[router]\nconfirm_path = \"/register\"\n", "must differ"),
        ("[router]\nregistration_allow = [\"http://x\"]\n", "[router].registration_allow"),
        ("[router]\nload_sampling_interval_ms = 5\n", "[router].load_sampling_interval_ms"),
        ("[router]\noverload_threshold = 0.0\n", "[router].overload_threshold"),
        ("[router]\nsession_affinity_window_secs = 0\n", "[router].session_affinity_window_secs"),
        ("[router]\nprefix = \"always\"\n[endpoint]\nprefix = \"never\"\n", "disagree"),
    ] {
        let e = parse(text, "r.toml", &[], None).unwrap_err().to_string();
        assert!(e.contains(key), "{text}: {e}");
    }
}

#[test]
fn the_commented_example_parses() {
    let text = include_str!("../../../../docs/switchboard.example.toml");
    let c = parse(text, "docs/switchboard.example.toml", &[], None).unwrap();
    assert_eq!(c.servers.len(), 4);
    assert_eq!(c.router.scheduler, switchboard_router::SchedulerConfig::default());
    let kv: Vec<_> =
        c.servers.iter().filter(|s| s.group.as_deref() == Some("kv")).map(|s| s.name.as_str()).collect();
    assert_eq!(kv, ["kv-1", "kv-2"], "replicas declared with group = \"kv\"");
    let remote = c.servers.iter().find(|s| s.name == "remote").unwrap();
    assert_eq!(remote.limits.read_timeout, Some(Duration::from_secs(60)));
}

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

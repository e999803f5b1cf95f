//! Server definitions from TOML and `mcp.json`: the normalisation rules.

use super::*;

#[test]
fn toml_servers_are_normalised() {
    let specs = servers_from_toml(
        r#"
        [servers.everything]
        command = "npx"
        args = ["-y", "@modelcontextprotocol/server-everything"]
        labels = ["demo"]
        [servers.remote]
        url = "HTTP://Example.COM/mcp/"
        headers = { Authorization = "Bearer a" }
        [servers.sock]
        url = "ws://127.0.0.1:9/mcp"
        "#,
        "switchboard.toml",
    )
    .unwrap();
    assert_eq!(specs.len(), 3);
    assert_eq!(specs[0].transport.kind(), TransportKind::Stdio);
    assert_eq!(specs[1].transport.kind(), TransportKind::Http);
    assert_eq!(specs[2].transport.kind(), TransportKind::Ws);
    let mut rotated = specs[1].clone();
    if let TransportSpec::Http { headers, url } = &mut rotated.transport {
        headers.insert("Authorization".into(), "Bearer b".into());
        *url = "http://example.com/mcp".into();
    }
    assert_eq!(rotated.server_id(), specs[1].server_id(), "headers and URL case do not change the id");
    let mut renamed = specs[1].clone();
    renamed.name = "other".into();
    assert_ne!(renamed.server_id(), specs[1].server_id());
}

#[test]
fn config_errors_name_the_field() {
    let e = servers_from_toml("[servers.x]\nargs=[]\n", "a.toml").unwrap_err().to_string();
    assert!(e.contains("a.toml") && e.contains("servers.x") && e.contains("command"), "{e}");
    let e =
        servers_from_toml("[servers.x]\ncommand='a'\nurl='http://b'\n", "a.toml").unwrap_err().to_string();
    assert!(e.contains("not both"), "{e}");
    let e = servers_from_toml("[servers.x]\ncommand='a'\ncomand='b'\n", "a.toml").unwrap_err().to_string();
    assert!(e.contains("comand"), "{e}");
    let e = servers_from_toml("[servers.x]\nurl='ftp://b'\n", "a.toml").unwrap_err().to_string();
    assert!(e.contains("http://"), "{e}");
    let e = servers_from_toml(
        "[servers.x]\ncommand='a'\n[servers.x.restart]\ninitial_backoff_ms=500\nmax_backoff_ms=100\n",
        "a.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("max_backoff_ms"), "{e}");
}

#[test]
fn mcp_json_is_read_like_desktop_clients_write_it() {
    let (specs, errors) = servers_from_mcp_json(
        r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"A": "1"}},
            "remote": {"url": "http://127.0.0.1:3000/mcp", "type": "http", "autoApprove": []},
            "old": {"url": "http://127.0.0.1:3001/sse", "type": "sse"},
            "broken": {"command": 5}
        }}"#,
        "claude_desktop_config.json",
    )
    .unwrap();
    assert_eq!(specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), vec!["fs", "remote"]);
    assert_eq!(errors.len(), 2);
    let all = errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    assert!(all.contains("HTTP+SSE") && all.contains("mcpServers.broken.command"), "{all}");
}

#[test]
fn duplicate_names_are_refused() {
    let a = servers_from_toml("[servers.x]\ncommand='a'\n", "a.toml").unwrap();
    let (b, _) = servers_from_mcp_json(r#"{"mcpServers":{"x":{"command":"b"}}}"#, "mcp.json").unwrap();
    let all: Vec<_> = a.into_iter().chain(b).collect();
    let e = check_unique(&all).unwrap_err().to_string();
    assert!(e.contains("a.toml") && e.contains("mcp.json"), "{e}");
}

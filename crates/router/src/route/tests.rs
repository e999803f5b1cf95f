//! The routing seam's unit tests.

use super::*;
use crate::federation::PrefixMode;
use crate::schema::{Quarantined, compile_tools};
use serde_json::json;

fn catalog(tools: &[&str]) -> Arc<Catalog> {
    let raw: Vec<Value> =
        tools.iter().map(|t| json!({"name": t, "inputSchema": {"type": "object"}})).collect();
    let (tools, quarantined) = compile_tools(&raw);
    Arc::new(Catalog {
        tools,
        quarantined,
        prompts: vec![json!({"name": "greet"})],
        resources: vec![json!({"uri": "file:///a.txt"})],
        resource_templates: vec![json!({"uriTemplate": "db://{table}/rows"})],
        ..Catalog::default()
    })
}

pub(crate) fn seen(server: &str, info: &str, state: ServerState, labels: &[&str], cat: Arc<Catalog>) -> Seen {
    Seen {
        signature: groups::signature(&json!({"name": info}), None, &cat),
        member: Member {
            server: server.into(),
            state,
            reason: if state == ServerState::Ready {
                String::new()
            } else {
                "process exited (status 1)".into()
            },
            labels: labels.iter().map(|l| l.to_string()).collect(),
            catalog: cat,
            load: Arc::default(),
        },
        declared: None,
    }
}

fn table(mode: PrefixMode) -> RouteTable {
    let config = FederationConfig { mode, separator: "__".into() };
    let mut broken = (*catalog(&["scan"])).clone();
    broken.quarantined.push(Quarantined { name: "bad".into(), error: "inputSchema: oops".into() });
    let servers = vec![
        seen("alpha", "alpha", ServerState::Ready, &["math"], catalog(&["echo", "add"])),
        seen("beta", "beta", ServerState::Ready, &["math"], catalog(&["echo", "mul"])),
        seen("gamma", "gamma", ServerState::Ready, &["vision"], Arc::new(broken)),
        seen("delta", "delta", ServerState::Degraded, &["math"], catalog(&["divide"])),
    ];
    let scheduler = Arc::new(Scheduler::new(SchedulerConfig::default(), crate::EventBus::new(16)));
    RouteTable::from_servers(1, &config, servers, scheduler)
}

#[test]
fn routes_exposed_and_qualified_names_under_every_prefix_mode() {
    for mode in [PrefixMode::Always, PrefixMode::OnCollision, PrefixMode::Never] {
        let t = table(mode);
        let r = t.route(Target::Tool("alpha__add"), None).expect("qualified name routes");
        assert_eq!((r.server.as_str(), r.upstream_name.as_str()), ("alpha", "add"), "{mode:?}");
        let r = t.route(Target::Tool("beta__echo"), Some("")).expect("qualified name routes");
        assert_eq!(r.server, "beta");
    }
    let t = table(PrefixMode::OnCollision);
    assert_eq!(t.route(Target::Tool("mul"), None).expect("mul").server, "beta");
    assert!(matches!(t.route(Target::Tool("echo"), None), Err(RouteError::Unknown { .. })));
}

#[test]
fn a_tool_of_a_server_that_is_down_names_the_server_and_why() {
    let t = table(PrefixMode::OnCollision);
    let err = t.route(Target::Tool("divide"), None).expect_err("delta is down");
    assert_eq!(
        err.to_string(),
        "tool \"divide\" is offered by server \"delta\", which is degraded: process exited (status 1)"
    );
    let err = t.route(Target::Tool("delta__divide"), None).expect_err("delta is down");
    assert!(matches!(err, RouteError::Unavailable { ref server, .. } if server == "delta"));
    let err = t.route(Target::Tool("bad"), None).expect_err("quarantined");
    assert!(err.to_string().contains("quarantined: inputSchema: oops"), "{err}");
    assert_eq!(
        t.route(Target::Tool("nope"), None).expect_err("unknown").to_string(),
        "unknown tool \"nope\""
    );
}

#[test]
fn resources_by_listing_then_template() {
    let t = table(PrefixMode::OnCollision);
    assert_eq!(t.route(Target::Resource("file:///a.txt"), None).expect("listed").server, "alpha");
    let r = t.route(Target::Resource("db://users/rows"), None).expect("template");
    assert!(r.reason.contains("template"), "{}", r.reason);
    assert!(matches!(
        t.route(Target::Resource("db://a/b/rows"), None),
        Err(RouteError::Unknown { what: "resource", .. })
    ));
}

#[test]
fn capabilities_name_the_tool_and_honour_the_separator() {
    let t = table(PrefixMode::OnCollision);
    let r = t.route(Target::Capability { label: "vision", tool: None }, None).expect("one tool");
    assert_eq!(r.exposed_name, "gamma__scan");
    let err = t.route(Target::Capability { label: "math", tool: Some("echo") }, None).expect_err("two");
    assert!(matches!(err, RouteError::Ambiguous { ref candidates, .. } if candidates.len() == 2));
    let err = t.route(Target::Capability { label: "math", tool: Some("divide") }, None).expect_err("down");
    assert!(err.to_string().contains("delta is degraded"), "{err}");
    let t = RouteTable { config: FederationConfig { separator: "::".into(), ..t.config.clone() }, ..t };
    let r = t.route(Target::Capability { label: "math", tool: Some("add") }, None).expect("add");
    assert_eq!(r.exposed_name, "alpha::add");
    assert_eq!(t.route(Target::Tool("alpha::add"), None).expect("qualified").upstream_name, "add");
}

#[test]
fn templates_match_like_rfc6570_expansions() {
    assert!(template_matches("db://{table}/rows", "db://users/rows"));
    assert!(!template_matches("db://{table}/rows", "db://a/b/rows"));
    assert!(template_matches("file://{+path}", "file:///etc/hosts"));
}

//! Loading: the default flow binds to the tools, and each load-time check refuses a broken flow with a
//! message naming the file, the node and the field.

use std::time::Duration;

use serde_json::json;
use switchboard_flow::{Flow, FlowError, FlowFile, When};

use crate::common::{Fake, KNOWLEDGE, REASONING, VISION, default_flow, default_flow_path, refused};

/// A valid two-node flow (vision → knowledge); tests break one part of it.
const BASE: &str = r#"
name = "t"
[input]
type = "object"
required = ["image"]
properties = { image = { type = "string" } }

[[nodes]]
id = "vision"
capability = "vision"
tool = "analyze_thermal_image"
arguments = { image = "$input.image" }

[[nodes]]
id = "knowledge"
capability = "rag"
tool = "search_manual"
arguments = { query = "{nodes.vision.output.failure_mode.kind}", top_k = 3 }

[[edges]]
from = "vision"
to = "knowledge"
"#;

#[test]
fn the_default_flow_loads_and_binds_every_node() {
    let fake = Fake::new();
    let flow = default_flow(&fake);
    assert_eq!(flow.name(), "thermal-diagnosis");
    let bound: Vec<(&str, &str)> =
        flow.nodes().iter().map(|n| (n.id.as_str(), n.tool.name.as_str())).collect();
    assert_eq!(bound, [("vision", VISION), ("knowledge", KNOWLEDGE), ("reasoning", REASONING)]);
    assert_eq!(flow.nodes()[1].retry.max_attempts, 3);
    assert_eq!(flow.nodes()[1].timeout, Duration::from_secs(30));
    assert!(flow.edges().iter().all(|e| e.when == When::Ok));
    assert!(flow.check_input(&json!({"image": "http://127.0.0.1:1/blobs/ab"})).is_ok());
}

#[test]
fn the_same_flow_as_json_loads_identically() {
    let fake = Fake::new();
    let text = std::fs::read_to_string(default_flow_path()).unwrap();
    let file: FlowFile = toml::from_str(&text).unwrap();
    let json = serde_json::to_string_pretty(&file).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("thermal.json");
    std::fs::write(&path, json).unwrap();
    let from_json = Flow::load(&path, fake.as_ref()).unwrap();
    let from_toml = default_flow(&fake);
    assert_eq!(
        format!("{from_json:?}").replace(&path.display().to_string(), "_"),
        format!("{from_toml:?}").replace(&default_flow_path().display().to_string(), "_")
    );
}

#[test]
fn an_unknown_field_is_a_parse_error_naming_file_and_field() {
    let (err, msg) =
        refused(&BASE.replace("tool = \"search_manual\"", "tool = \"search_manual\"\ncolour = \"red\""));
    assert!(matches!(err, FlowError::Parse { format: "toml", .. }), "{err:?}");
    assert!(msg.contains("flows/test.toml") && msg.contains("unknown field `colour`"), "{msg}");

    let fake = Fake::new();
    let err =
        Flow::from_json("x.json", r#"{"name": "x", "nodes": [], "extra": 1}"#, fake.as_ref()).unwrap_err();
    assert!(err.to_string().contains("x.json") && err.to_string().contains("unknown field `extra`"), "{err}");
}

#[test]
fn an_edge_to_an_unknown_node_is_named() {
    let (err, msg) = refused(&BASE.replace("to = \"knowledge\"", "to = \"knowlege\""));
    assert!(msg.starts_with("flow file flows/test.toml is not a usable flow"), "{msg}");
    assert!(msg.contains("field `edges[0].to`: no node `knowlege`"), "{msg}");
    assert!(msg.contains("`vision`, `knowledge`"), "lists the known nodes: {msg}");
    assert!(!err.issues().is_empty());
}

#[test]
fn a_cycle_is_refused_with_its_nodes() {
    let (_, msg) = refused(&format!("{BASE}\n[[edges]]\nfrom = \"knowledge\"\nto = \"vision\"\n"));
    assert!(
        msg.contains("field `edges`: the edges form a cycle through nodes `vision`, `knowledge`"),
        "{msg}"
    );
    let (_, msg) = refused(&format!("{BASE}\n[[edges]]\nfrom = \"knowledge\"\nto = \"knowledge\"\n"));
    assert!(msg.contains("field `edges[1]`: edge from `knowledge` to itself"), "{msg}");
}

#[test]
fn an_unresolvable_tool_or_capability_is_named() {
    let (_, msg) = refused(&BASE.replace("capability = \"rag\"", "capability = \"manuals\""));
    assert!(
        msg.contains("node `knowledge`, field `capability`: cannot resolve tool `search_manual` of capability `manuals`: no server has capability `manuals`"),
        "{msg}"
    );
    let (_, msg) =
        refused(&BASE.replace(
            "capability = \"vision\"\ntool = \"analyze_thermal_image\"",
            "tool = \"vision__analyse\"",
        ));
    assert!(msg.contains("node `vision`, field `tool`: cannot resolve tool `vision__analyse`"), "{msg}");
    let (_, msg) = refused(&BASE.replace("capability = \"vision\"\ntool = \"analyze_thermal_image\"", ""));
    assert!(msg.contains("node `vision`, field `tool`: no tool"), "{msg}");
}

#[test]
fn a_reference_to_a_node_that_does_not_run_first_is_refused() {
    // No edge: knowledge may run before vision.
    let no_edge = BASE.replace("[[edges]]\nfrom = \"vision\"\nto = \"knowledge\"\n", "");
    let (_, msg) = refused(&no_edge);
    assert!(
        msg.contains("node `knowledge`, field `arguments.query`: `$nodes.vision.output.failure_mode.kind`: node `vision` does not precede node `knowledge`"),
        "{msg}"
    );
    // Reading downstream, itself, or a node that does not exist.
    let (_, msg) = refused(
        &BASE.replace("image = \"$input.image\"", "image = \"$nodes.knowledge.output.results[0].id\""),
    );
    assert!(
        msg.contains("node `vision`, field `arguments.image`") && msg.contains("does not precede"),
        "{msg}"
    );
    let (_, msg) = refused(&BASE.replace("top_k = 3", "top_k = \"$nodes.knowledge.output\""));
    assert!(msg.contains("a node cannot read its own output"), "{msg}");
    let (_, msg) = refused(&BASE.replace("top_k = 3", "top_k = \"$nodes.ghost.output\""));
    assert!(msg.contains("field `arguments.top_k`: `$nodes.ghost.output`: no node `ghost`"), "{msg}");
}

#[test]
fn a_missing_required_argument_is_refused() {
    let (_, msg) = refused(&BASE.replace("query = \"{nodes.vision.output.failure_mode.kind}\", ", ""));
    assert!(
        msg.contains("node `knowledge`, field `arguments`: required argument `query` of tool `knowledge__search_manual` is missing"),
        "{msg}"
    );
}

#[test]
fn a_constant_that_violates_the_tool_schema_is_refused() {
    let (_, msg) = refused(&BASE.replace("top_k = 3", "top_k = 50"));
    assert!(msg.contains("node `knowledge`, field `arguments.top_k`: constant does not match the input schema of tool `knowledge__search_manual`: /top_k: 50 is greater than the maximum of 10"), "{msg}");
    let (_, msg) = refused(&BASE.replace("top_k = 3", "top_k = \"three\""));
    assert!(
        msg.contains("field `arguments.top_k`") && msg.contains("\"three\" is not of type \"integer\""),
        "{msg}"
    );
    // Constants behind a `$ref` are checked too.
    let (_, msg) = refused(
        &BASE.replace("image = \"$input.image\"", "image = \"$input.image\", reference_region = { x = -1 }"),
    );
    assert!(msg.contains("field `arguments.reference_region`") && msg.contains("minimum of 0"), "{msg}");
}

#[test]
fn an_argument_the_tool_does_not_take_is_refused() {
    let (_, msg) = refused(&BASE.replace("top_k = 3", "top_k = 3, colour = \"red\""));
    assert!(msg.contains("node `knowledge`, field `arguments.colour`: tool `knowledge__search_manual` takes no argument `colour` (it takes: query, part_number, component_kind, component_group, failure_mode, equipment, top_k)"), "{msg}");
}

#[test]
fn a_reference_to_an_undeclared_output_property_is_refused() {
    let (_, msg) = refused(&BASE.replace("failure_mode.kind}", "failure_mode.kinds}"));
    assert!(msg.contains("node `knowledge`, field `arguments.query`: `$nodes.vision.output.failure_mode.kinds`: `kinds` is not declared (declared: kind, hypothesis, evidence) in the output schema of tool `vision__analyze_thermal_image`"), "{msg}");
    let (_, msg) = refused(&BASE.replace("failure_mode.kind}", "hotspots.max_c}"));
    assert!(msg.contains("`max_c` is read from a value of type array, not an object"), "{msg}");
}

#[test]
fn a_reference_of_the_wrong_type_is_refused() {
    let (_, msg) = refused(&BASE.replace("top_k = 3", "top_k = \"$nodes.vision.output.failure_mode\""));
    assert!(msg.contains("node `knowledge`, field `arguments.top_k`: gives a value of type object but tool `knowledge__search_manual` expects integer"), "{msg}");
}

#[test]
fn an_undeclared_input_is_refused() {
    let (_, msg) = refused(&BASE.replace("image = \"$input.image\"", "image = \"$input.imgae\""));
    assert!(msg.contains("node `vision`, field `arguments.image`: `$input.imgae`: `imgae` is not declared (declared: image) in the flow's input schema"), "{msg}");
}

#[test]
fn edge_conditions_are_parsed_and_checked() {
    let (_, msg) = refused(&BASE.replace(
        "to = \"knowledge\"",
        "to = \"knowledge\"\nwhen = '$nodes.vision.output.severity.level != \"none\"'",
    ));
    assert!(
        msg.contains("field `edges[0].when`: `$nodes.vision.output.severity.level`: `level` is not declared"),
        "{msg}"
    );
    let (_, msg) = refused(&BASE.replace("to = \"knowledge\"", "to = \"knowledge\"\nwhen = 'sometimes'"));
    assert!(msg.contains("field `edges[0].when`: `sometimes` is not a condition"), "{msg}");
    let fake = Fake::new();
    let ok = BASE.replace(
        "to = \"knowledge\"",
        "to = \"knowledge\"\nwhen = '$nodes.vision.output.severity.band != \"none\"'",
    );
    let flow = Flow::from_toml("ok.toml", &ok, fake.as_ref()).unwrap();
    assert_eq!(flow.edges()[0].when.to_string(), "$nodes.vision.output.severity.band != \"none\"");
}

#[test]
fn every_problem_is_reported_at_once() {
    let broken = BASE.replace("top_k = 3", "top_k = 0").replace("to = \"knowledge\"", "to = \"nowhere\"");
    let (err, _) = refused(&broken);
    let fields: Vec<&str> = err.issues().iter().map(|i| i.field.as_str()).collect();
    assert!(fields.contains(&"edges[0].to") && fields.contains(&"arguments.top_k"), "{fields:?}");
}

#[test]
fn bad_node_settings_are_refused() {
    let (_, msg) = refused(&BASE.replace(
        "tool = \"search_manual\"",
        "tool = \"search_manual\"\ntimeout_ms = 0\nretry = { max_attempts = 0 }",
    ));
    assert!(msg.contains("node `knowledge`, field `timeout_ms`: must be greater than 0"), "{msg}");
    assert!(msg.contains("node `knowledge`, field `retry.max_attempts`: must be at least 1"), "{msg}");
    let (_, msg) = refused(&BASE.replace("id = \"knowledge\"", "id = \"vision\""));
    assert!(msg.contains("node `vision`, field `id`: duplicate node id"), "{msg}");
    let (_, msg) = refused(
        &BASE.replace("tool = \"search_manual\"", "tool = \"search_manual\"\nretry = { on = [\"tool\"] }"),
    );
    assert!(msg.contains("unknown variant `tool`"), "{msg}");
}

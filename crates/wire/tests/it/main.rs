//! Property tests of the wire model: any valid message survives a parse/serialise round
//! trip with no field lost or reordered.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use switchboard_wire::{Kind, Message};

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1.0e9f64..1.0e9).prop_map(|f| json!(f)),
        "\\PC{0,12}".prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-zA-Z_/.-]{1,10}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec(("[a-zA-Z_/.-]{1,10}", value()), 0..5).prop_map(|kv| kv.into_iter().collect())
}

fn id() -> impl Strategy<Value = Value> {
    prop_oneof![any::<i64>().prop_map(|n| json!(n)), "[a-z0-9-]{1,12}".prop_map(Value::String)]
}

/// Extra top-level fields a sender may add; the router must keep them.
fn extras() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec(("x-[a-z]{1,8}", value()), 0..3).prop_map(|kv| kv.into_iter().collect())
}

fn message() -> impl Strategy<Value = Value> {
    let method = "[a-z]{1,8}(/[a-zA-Z_]{1,8})?";
    prop_oneof![
        (id(), method, proptest::option::of(object()), extras()).prop_map(|(id, m, p, x)| {
            let mut o = Map::new();
            o.insert("jsonrpc".into(), "2.0".into());
            o.insert("id".into(), id);
            o.insert("method".into(), Value::String(m));
            if let Some(p) = p {
                o.insert("params".into(), Value::Object(p));
            }
            o.extend(x);
            Value::Object(o)
        }),
        (method, proptest::option::of(object()), extras()).prop_map(|(m, p, x)| {
            let mut o = Map::new();
            o.insert("method".into(), Value::String(m));
            o.insert("jsonrpc".into(), "2.0".into());
            if let Some(p) = p {
                o.insert("params".into(), Value::Object(p));
            }
            o.extend(x);
            Value::Object(o)
        }),
        (id(), value(), extras()).prop_map(|(id, r, x)| {
            let mut o = Map::new();
            o.insert("jsonrpc".into(), "2.0".into());
            o.insert("result".into(), r);
            o.insert("id".into(), id);
            o.extend(x);
            Value::Object(o)
        }),
        (id(), any::<i32>(), "\\PC{0,20}", proptest::option::of(value())).prop_map(|(id, c, m, d)| {
            let mut e = Map::new();
            e.insert("code".into(), json!(c));
            e.insert("message".into(), Value::String(m));
            if let Some(d) = d {
                e.insert("data".into(), d);
            }
            json!({"jsonrpc":"2.0","id":id,"error":Value::Object(e)})
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn round_trip_keeps_every_field(v in message()) {
        let text = serde_json::to_string(&v).unwrap();
        let msg = Message::parse(text.as_bytes()).unwrap();
        let back: Value = serde_json::from_slice(&msg.to_bytes()).unwrap();
        prop_assert_eq!(&back, &v);
        // Field order is kept too (the map preserves insertion order).
        prop_assert_eq!(msg.to_json(), text);
    }

    #[test]
    fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Err(e) = Message::parse(&bytes) {
            prop_assert!(e.code == -32700 || e.code == -32600);
        }
    }
}

#[test]
fn kinds_and_routing_fields() {
    let m = Message::parse(
        br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"t","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":5},"extra":[1,2]},"x-vendor":true}"#,
    )
    .unwrap();
    assert_eq!(m.kind(), Kind::Request);
    assert_eq!(m.protocol_version(), Some("2026-07-28"));
    assert_eq!(m.progress_token(), Some(&json!(5)));
    assert_eq!(switchboard_wire::Era::of_message(&m), switchboard_wire::Era::Modern);
    let mut renamed = m.clone();
    renamed.set_name("srv__t");
    let v = renamed.into_value();
    assert_eq!(v["params"]["name"], "srv__t");
    assert_eq!(v["params"]["extra"], json!([1, 2]));
    assert_eq!(v["x-vendor"], true);
}

//! What the scheduler costs a call, measured in the router the run just measured: the routing
//! step of a `tools/call` with the scheduler (`RouteTable::route_with`: group lookup, the three
//! layers, the decision built, kept in the ring and published) against the name lookup that was
//! all routing did before it (`Federation::tool`), on the same route table, in the same run.

use std::time::Instant;

use serde::Serialize;
use switchboard_router::federation::FederationConfig;
use switchboard_router::schedule::{Ask, KeySource};
use switchboard_router::{Registry, RouteTable, Target};

/// The scheduler's share of a call.
#[derive(Debug, Clone, Serialize)]
pub struct SchedulingCost {
    /// Calls of each kind timed.
    pub iterations: usize,
    /// The name lookup alone, per call (ns).
    pub lookup_ns: f64,
    /// The scheduled route of a call without an affinity key, per call (ns).
    pub scheduled_ns: f64,
    /// The scheduled route of a call with a session's key (affinity table read and written).
    pub scheduled_with_key_ns: f64,
    /// What scheduling adds to a keyed call (`scheduled_with_key_ns - lookup_ns`), in µs.
    pub added_us: f64,
}

/// Times `iterations` routes of `tool` each way through the registry's current table.
pub fn measure(registry: &Registry, tool: &str, iterations: usize) -> SchedulingCost {
    let table = RouteTable::build(registry, &FederationConfig::default());
    let per = |start: Instant| start.elapsed().as_nanos() as f64 / iterations.max(1) as f64;
    // Warm up both paths (and the affinity binding of the key).
    let key = "bench-session-0123456789abcdef";
    let keyed = Ask { key: Some(key), key_source: Some(KeySource::Session), ..Ask::default() };
    for _ in 0..1000 {
        std::hint::black_box(table.federation.tool(tool));
        let _ = std::hint::black_box(table.route_with(Target::Tool(tool), &keyed));
    }
    let t = Instant::now();
    for _ in 0..iterations {
        std::hint::black_box(table.federation.tool(std::hint::black_box(tool)));
    }
    let lookup_ns = per(t);
    let t = Instant::now();
    for _ in 0..iterations {
        let _ = std::hint::black_box(table.route(Target::Tool(std::hint::black_box(tool)), None));
    }
    let scheduled_ns = per(t);
    let t = Instant::now();
    for _ in 0..iterations {
        let _ = std::hint::black_box(table.route_with(Target::Tool(std::hint::black_box(tool)), &keyed));
    }
    let scheduled_with_key_ns = per(t);
    SchedulingCost {
        iterations,
        lookup_ns,
        scheduled_ns,
        scheduled_with_key_ns,
        added_us: (scheduled_with_key_ns - lookup_ns) / 1000.0,
    }
}

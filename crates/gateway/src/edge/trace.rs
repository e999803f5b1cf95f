//! A trace being built while its request runs ([`Pending`]).

use std::time::{Duration, Instant};

use switchboard_store::TraceRecord;
use switchboard_store::traces::outcome;
use switchboard_wire::{ErrorObject, error_code};

use crate::endpoint::{Decided, RequestContext};
use crate::traces::TraceSink;

/// JSON-RPC code of a request the client cancelled.
const REQUEST_CANCELLED: i64 = -32800;

pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A trace being built while its request runs. What the endpoint decided (client, version,
/// upstream) is read when the trace ends. Dropped unfinished (the client went away, or the
/// connection closed before the response), it is recorded as cancelled.
pub(super) struct Pending {
    sink: TraceSink,
    started: Instant,
    decided: Decided,
    record: Option<TraceRecord>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.end(outcome::CANCELLED, None, None);
    }
}

impl Pending {
    /// A trace of `method` (`name`) from the client `ctx` describes.
    pub(super) fn start(
        sink: TraceSink,
        ctx: &RequestContext,
        method: &str,
        name: Option<&str>,
        started: Instant,
    ) -> Pending {
        Pending {
            sink,
            started,
            decided: ctx.decided.clone(),
            record: Some(TraceRecord {
                id: None,
                at_ms: switchboard_router::events::now_ms(),
                transport: ctx.transport.as_str().to_owned(),
                peer: ctx.peer.clone(),
                client_name: None,
                client_version: None,
                era: None,
                method: method.to_owned(),
                name: name.map(str::to_owned),
                upstream: None,
                latency_ms: 0.0,
                first_byte_ms: None,
                streamed: false,
                http_status: None,
                outcome: String::new(),
                error_code: None,
                error: None,
                route: None,
                retries: 0,
            }),
        }
    }

    /// The first answer is ready: its HTTP status, and whether it is a stream.
    pub(super) fn answered(&mut self, status: u16, streamed: bool) {
        let elapsed = ms(self.started.elapsed());
        if let Some(r) = self.record.as_mut() {
            r.http_status = Some(i64::from(status));
            r.first_byte_ms = Some(elapsed);
            r.streamed = streamed;
        }
    }

    fn end(&mut self, outcome: &str, code: Option<i64>, message: Option<String>) {
        let Some(mut record) = self.record.take() else { return };
        let decided = self.decided.get();
        let info_str = |k: &str| {
            decided.client_info.as_ref().and_then(|i| i.get(k)).and_then(|v| v.as_str()).map(str::to_owned)
        };
        record.client_name = info_str("name");
        record.client_version = info_str("version");
        record.era = decided.version.clone();
        record.upstream = decided.upstream.clone();
        record.route = decided.route.as_ref().and_then(|d| serde_json::to_value(&**d).ok());
        record.retries = decided.retries;
        record.latency_ms = ms(self.started.elapsed());
        record.outcome = outcome.to_owned();
        record.error_code = code;
        record.error = message;
        self.sink.record(record);
    }

    /// Ends the trace with `outcome` and the error, if any.
    pub(super) fn end_error(&mut self, outcome: &str, e: Option<ErrorObject>) {
        match e {
            Some(e) => self.end(outcome, Some(e.code), Some(e.message)),
            None => self.end(outcome, None, None),
        }
    }

    /// Ends the trace from the final message's error (or its absence) and the HTTP status.
    pub(super) fn end_with(&mut self, error: Option<ErrorObject>, status: u16) {
        match error {
            Some(e) if e.code == REQUEST_CANCELLED => self.end_error(outcome::CANCELLED, Some(e)),
            Some(e) if e.code == error_code::UPSTREAM_TIMEOUT => self.end_error(outcome::TIMEOUT, Some(e)),
            Some(e) => self.end_error(outcome::ERROR, Some(e)),
            None if (200..300).contains(&status) => self.end(outcome::OK, None, None),
            None => self.end(outcome::ERROR, None, Some(format!("HTTP {status}"))),
        }
    }
}

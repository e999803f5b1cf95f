//! `GET /api/frames` and `GET /api/frames/export`: what the frame ring ([`crate::ring`]) keeps,
//! as a JSON array or as JSON lines (one `FrameEvent` per line).

use axum::Json;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use switchboard_router::Event;
use switchboard_transport::FrameEvent;
use ts_rs::TS;

use crate::AdminState;
use crate::ring::FrameQuery;

/// The query of `GET /api/frames` and its export.
#[derive(Debug, Clone, Default, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct FramesQuery {
    /// `upstream` or `downstream`.
    #[ts(optional)]
    pub leg: Option<String>,
    /// The server (upstream leg) or client label (downstream leg).
    #[ts(optional)]
    pub server: Option<String>,
    /// The JSON-RPC method.
    #[ts(optional)]
    pub method: Option<String>,
    /// At most this many, the newest (default: all kept).
    #[ts(optional)]
    pub limit: Option<u32>,
}

impl FramesQuery {
    fn ring_query(&self) -> FrameQuery {
        let some = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
        FrameQuery { leg: some(&self.leg), server: some(&self.server), method: some(&self.method) }
    }
}

/// The frames `q` asks for, oldest first.
pub fn frame_list(state: &AdminState, q: &FramesQuery) -> Vec<FrameEvent> {
    let limit = q.limit.map_or(usize::MAX, |l| l as usize);
    state
        .ring()
        .frames(&q.ring_query(), limit)
        .iter()
        .filter_map(|e| match e.as_ref() {
            Event::Frame { frame } => Some((**frame).clone()),
            _ => None,
        })
        .collect()
}

/// `GET /api/frames?leg=&server=&method=&limit=`.
pub async fn list(State(state): State<AdminState>, Query(q): Query<FramesQuery>) -> Response {
    Json(frame_list(&state, &q)).into_response()
}

/// `GET /api/frames/export?leg=&server=&method=`: JSON lines, oldest first.
pub async fn export(State(state): State<AdminState>, Query(q): Query<FramesQuery>) -> Response {
    let mut out = Vec::new();
    for f in frame_list(&state, &q) {
        if serde_json::to_writer(&mut out, &f).is_ok() {
            out.push(b'\n');
        }
    }
    (
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (header::CONTENT_DISPOSITION, "attachment; filename=\"switchboard-frames.jsonl\""),
        ],
        out,
    )
        .into_response()
}

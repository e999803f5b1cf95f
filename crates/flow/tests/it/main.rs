//! Integration tests for `switchboard-flow`: the default flow file against fake tools with the real tools'
//! schemas, every load-time check, runs (success, failure, retry, timeout, cancellation, refused input) and
//! runs persisted to a SQLite store in a temp dir.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod load;
mod persist;
mod run;

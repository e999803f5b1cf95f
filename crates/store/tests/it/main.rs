//! Integration tests for `switchboard-store`: real database files in temp dirs, opened the way the router
//! opens them.

mod common;
mod concurrency;
mod records;
mod retention;
mod runs;
mod startup;

//! Integration tests of the transports against real processes and sockets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http;
mod slow_caller;
mod stdio;

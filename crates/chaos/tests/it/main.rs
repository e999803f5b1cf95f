//! Integration tests of `switchboard-chaos`: replicas in-process and as the built binary, driven
//! by rmcp clients in both revisions, the control API over HTTP, and the registration client
//! against a stub registrar that checks every request body.

mod common;

mod binary;
mod control;
mod faults;
mod registration;
mod tools;

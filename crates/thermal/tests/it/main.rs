//! Integration tests for `switchboard-thermal`, run against the real sample images in
//! `shared/data/thermal` and their ground-truth JSON.

mod analysis;
mod common;
mod false_colour;
mod ground_truth;
mod robustness;
mod seq;

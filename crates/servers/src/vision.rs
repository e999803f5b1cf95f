//! The vision server behind the `analyze_thermal_image` MCP tool: the first node of the diagnosis flow.
//!
//! [`source`] resolves the `image` argument (base64, `data:`, `http(s)://` from the router's blob store, `file://`
//! inside an allowed directory) under a size limit. [`analysis`] turns the bytes into a report with
//! `switchboard-thermal` (decode, statistics, hotspots), grades it with [`severity`] (NETA Table 100.18), names the
//! part under the hotspot from a pick-and-place [`components`] map and states a failure-mode hypothesis.
//! [`server`] wraps it as an MCP server with hand-written schemas. The split keeps the analysis pure and testable
//! without a transport, and lets the router substitute its own [`ImageSource`].

pub mod analysis;
pub mod components;
pub mod server;
pub mod severity;
pub mod source;

pub use analysis::{AnalyzeOptions, Equipment, ReferenceMethod, VisionReport, analyze};
pub use server::{AnalyzeArgs, VisionConfig, VisionServer};
pub use severity::{Band, Severity};
pub use source::{DefaultImageSource, ImageSource, ImageSourceConfig};

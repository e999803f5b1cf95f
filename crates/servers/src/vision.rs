//! The vision server behind the `analyze_thermal_image` MCP tool: the first node of the diagnosis flow.
//!
//! [`source`] resolves the `image` argument (base64, `data:`, blob references read from the router's blob directory,
//! allowlisted `http(s)://`) under a size limit. [`analysis`] turns the bytes into a report with
//! `switchboard-thermal` (decode, statistics, hotspots), takes the [`equipment`] from the operator (or a component
//! map or the context; else `unknown`), grades it with [`severity`] by the criteria for that equipment (NETA
//! Table 100.18, IEC TS 62446-3, or none), names the part under the hotspot from a pick-and-place [`components`]
//! map and states a failure-mode hypothesis.
//! [`server`] wraps it as an MCP server with hand-written schemas. The split keeps the analysis pure and testable
//! without a transport, and lets the router substitute its own [`ImageSource`].

pub mod analysis;
pub mod components;
pub mod equipment;
pub mod server;
pub mod severity;
pub mod source;

pub use analysis::{AnalyzeOptions, ReferenceMethod, VisionReport, analyze};
pub use equipment::{ComponentOut, Equipment, EquipmentSource};
pub use server::{AnalyzeArgs, VisionConfig, VisionServer};
pub use severity::{Band, Severity};
pub use source::{DefaultImageSource, ImageSource, ImageSourceConfig};

//! The scheduler behind [`crate::RouteTable::route`]: replica groups, the three layers
//! (capability match, load score, session affinity), fallback and the record of every decision.

pub mod config;

pub use config::SchedulerConfig;

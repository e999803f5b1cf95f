//! The federated `/mcp` endpoint in front of in-process fixtures — mostly `alpha` (both eras,
//! reached as modern) and `beta` (legacy only), whose shared tools are prefixed.
//!
//! - [`federation`]: discovery, federated lists and pages, calls reaching their own upstream,
//!   progress, cancellation, headers passed on, stale lists;
//! - [`failures`]: upstreams that die or are down, and requests the endpoint refuses;
//! - [`legacy`]: 2025-11-25 sessions on the same endpoint (lifecycle, shared keys,
//!   cancellation, the rmcp client);
//! - [`streams`]: change notifications and a legacy upstream's questions to a 2026-07-28 client;
//! - [`serve`]: the same endpoint from `switchboard serve --listen` (the binary).

mod failures;
mod federation;
mod legacy;
mod serve;
mod streams;

//! Shared pieces of the stephost fuzz targets.
//!
//! - [`fixture`]: the built-in plugins' specs (from the snapshot `catalog.json`: real
//!   names, verbs and schemas), the default limits and the MCP tools the server
//!   serves for them, built on first use and kept for the process. No host and no
//!   WebAssembly runtime: the crate depends on `stephost-batch` and
//!   `stephost-contract` only.
//! - [`json`] and [`schema`]: structured JSON from fuzz bytes, biased towards the
//!   batch vocabulary (`${STEP_N}` references, plugin and verb names, limit edges) and
//!   driven by the JSON Schemas the host itself publishes, so inputs get past the
//!   first "unknown field" check and reach the deeper code.
//! - [`report`]: batch reports built from fuzz bytes, for the dialects' `render`.
//! - [`check`]: the invariants every target asserts besides "does not panic".

pub mod check;
pub mod fixture;
pub mod json;
pub mod report;
pub mod schema;

pub use fixture::{Fixture, fixture};
/// The server's default tool name of a plugin verb.
pub use stephost_batch::dialects::single::tool_name;

/// Both reference policies; every target tries each.
pub const POLICIES: [stephost_batch::UnknownPolicy; 2] = [
    stephost_batch::UnknownPolicy::Reject,
    stephost_batch::UnknownPolicy::PassThrough,
];

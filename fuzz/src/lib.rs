//! Shared pieces of the stephost fuzz targets.
//!
//! - [`fixture`]: one real [`stephost::Host`] per fuzzing process (built-in plugins,
//!   real registry and schemas), built on first use and kept for the process.
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

/// Both reference policies; every target tries each.
pub const POLICIES: [stephost::batch::UnknownPolicy; 2] = [
    stephost::batch::UnknownPolicy::Reject,
    stephost::batch::UnknownPolicy::PassThrough,
];

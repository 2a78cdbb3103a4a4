//! stephost: a WebAssembly-plugin step host.
//!
//! A caller hands the host a whole batch of steps; the host validates all of it
//! before anything acts, runs the steps in order inside sandboxed WebAssembly
//! components, chains results between steps, holds every step and the batch to
//! a time budget, and answers with one report.
//!
//! The work is done by four crates, re-exported here under the names the
//! `stephost` command and its tests use (see `docs/architecture.md`):
//!
//! - [`contract`]: what a plugin is and says, in plain Rust types;
//! - [`batch`]: plan, run and report, with no WebAssembly in sight;
//! - [`runtime`]: the only user of wasmtime: loading, instances, capabilities;
//! - the server: [`config`], [`tenancy`], [`session`], [`mcp`] and [`Host`].

pub use stephost_batch as batch;
pub use stephost_batch::dialects;
pub use stephost_contract as contract;
pub use stephost_runtime as runtime;
pub use stephost_server::{BatchOptions, DrainOutcome, Host, check, config, mcp, session, tenancy};

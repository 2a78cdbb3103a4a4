//! stephost: a WebAssembly-plugin step host.
//!
//! A caller hands the host a whole batch of steps; the host validates all of it
//! before anything acts ([`batch::plan`]), runs the steps in order inside sandboxed
//! WebAssembly components ([`plugins`]), chains results between steps
//! ([`batch::vars`]), holds every step and the batch to a time budget
//! ([`engine`], [`plugins::instance`]), and answers with one [`batch::Report`].
//!
//! See `docs/architecture.md` for how the pieces fit.

pub mod batch;
pub mod capabilities;
pub mod config;
pub mod dialects;
pub mod engine;
mod host;
pub mod mcp;
pub mod plugins;
pub mod session;
pub mod tenancy;

pub use host::{BatchOptions, DrainOutcome, Host};

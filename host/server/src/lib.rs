//! The stephost fronts: the composition root ([`config`], [`Host`]), tenancy,
//! sessions, and the MCP server with its tools.
//!
//! The layers below: `stephost-batch` plans and runs batches and knows no
//! WebAssembly; `stephost-runtime` runs plugins; `stephost-contract` is what
//! both say about plugins. This crate wires them: a [`Host`] starts the
//! runtime, builds each tenant's view, and runs a batch in a session with the
//! session's instances as the engine's executor.

pub mod check;
pub mod config;
mod host;
pub mod mcp;
pub mod saved;
pub mod session;
pub mod tenancy;
pub mod traces;

pub use host::{BatchOptions, DrainOutcome, Host};

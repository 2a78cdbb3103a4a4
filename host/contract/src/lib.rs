//! The plugin contract as the host sees it, free of the engine that runs plugins.
//!
//! Everything a plugin tells the host (its verbs and their schemas, results,
//! failures and the recovery it proposes) and everything the host hands a call (its
//! budget) is a plain Rust value here. The runtime crate converts each supported
//! WIT version's generated bindings into these types, so the batch engine and the
//! fronts never see a WIT version or a wasmtime type, and a new contract version
//! changes one adapter, not every caller.

mod call;
mod failure;
mod plugin;
mod recovery;
pub mod review;
pub mod schema;
mod version;

pub use call::{CallBudget, CallOutcome, Content, Denial, Failure, Fault, LogLine, Output};
pub use failure::FailureCode;
pub use plugin::{PluginInfo, PluginSpec, RawDescription, RawVerb, SpecError, Verb, VerbInfo};
pub use recovery::{Action, Proposal, Strategy};
pub use version::{ContractVersion, PACKAGE};

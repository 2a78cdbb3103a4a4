//! The batch engine, without the WebAssembly runtime: a request is planned
//! (validated whole before anything acts), run (steps in order, results chained
//! through `${...}` references, each step and the batch held to a time budget,
//! retries and recovery rounds) and reported.
//!
//! The engine calls plugins through [`Executor`], which the runtime implements,
//! and knows plugins only as [`PluginSpec`](stephost_contract::PluginSpec)s in a
//! [`Catalog`]. Budgets are computed here ([`budget`]) and enforced there.
//! [`dialects`] map each seed product's batch tool onto this engine.

mod budget;
mod catalog;
mod check;
pub mod dialects;
mod dry_run;
mod limits;
mod plan;
mod recover;
mod report;
pub mod rf_output;
mod run;
pub mod saved;
mod session;
#[cfg(test)]
mod testing;
pub mod trace;
pub mod vars;

pub use budget::room_for_wait;
pub use catalog::Catalog;
pub use check::{Refusal, check};
pub use dry_run::{PlanView, PlannedStepView, RetryView, StepBudget, Unresolved, dry_run};
pub use limits::{LimitCaps, Limits};
pub use plan::{
    OnFailure, Plan, PlanContext, PlannedStep, Problem, RetryPolicy, plan, plan_with_var_sizes,
};
pub use recover::{ActionRecord, Round};
pub use report::{BatchStatus, ContentItem, Report, StepError, StepReport, StepStatus};
pub use run::{Executor, NoObserver, Observer, RunOptions, run};
pub use session::Vars;
pub use vars::UnknownPolicy;

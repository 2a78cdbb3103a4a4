//! The batch engine: plan (validate everything up front) -> run (sequence, chain,
//! time, retry) -> report.

pub mod plan;
pub mod recover;
pub mod report;
pub mod run;
pub mod vars;

pub use plan::{
    OnFailure, Plan, PlanContext, PlannedStep, Problem, RetryPolicy, plan, plan_with_var_sizes,
};
pub use report::{BatchStatus, ContentItem, Report, StepError, StepReport, StepStatus};
pub use run::{NoObserver, Observer, RunOptions, run};
pub use vars::UnknownPolicy;

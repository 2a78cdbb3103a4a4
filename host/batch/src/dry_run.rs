//! A dry run: the batch validated and checked as for a real run, and its plan
//! returned instead of run. Each step's input is resolved as far as it can be
//! without running anything (session variables are known, results of this
//! batch's steps are not), with what stays unresolved named.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::limits::Limits;
use crate::plan::{OnFailure, Plan};
use crate::vars::{self, Lookup, Scope};

/// What a dry run answers: the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanView {
    /// `stop` or `continue` after a failed step.
    pub on_failure: &'static str,
    /// The batch's time budget.
    pub timeout_ms: u64,
    /// Each step as it would run.
    pub steps: Vec<PlannedStepView>,
}

/// One step of a dry run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedStepView {
    /// 0-based position.
    pub index: usize,
    /// The caller's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The plugin.
    pub plugin: String,
    /// The verb.
    pub verb: String,
    /// Always `planned`.
    pub status: &'static str,
    /// The input, resolved as far as a dry run can: references that need a
    /// result of this batch are left as written.
    pub input: Value,
    /// The references left as written, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<Unresolved>,
    /// What the step would be given.
    pub budget: StepBudget,
    /// How often it would run, and on which failures again.
    pub retry: RetryView,
    /// Whether the verb acts on the outside world (never re-run blindly).
    pub acts_on_world: bool,
    /// The variable its value would be stored under.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assign_to: Option<String>,
    /// Whether it would run even after the batch stopped on a failure.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub always: bool,
}

/// A reference a dry run cannot resolve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unresolved {
    /// Where in the input (`input.text`).
    pub field: String,
    /// Why.
    pub reason: String,
}

/// A step's budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepBudget {
    /// Its deadline, at most what the batch's budget leaves.
    pub timeout_ms: u64,
    /// Its fuel (instructions, roughly) per run.
    pub fuel: u64,
    /// Its instance's memory limit.
    pub memory_mib: u64,
}

/// A step's retry and recovery policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetryView {
    /// Runs in all.
    pub attempts: u32,
    /// Failure codes that would run it again.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub on: Vec<String>,
    /// Whether the plugin's recovery strategies run between runs.
    pub recover: bool,
}

/// The plan of `plan` against the session's `vars` and the tenant's `limits`.
pub fn dry_run(plan: &Plan, vars: &BTreeMap<String, Value>, limits: &Limits) -> PlanView {
    let batch_ms = millis(plan.timeout());
    let mut assigned: BTreeMap<String, usize> = BTreeMap::new();
    let mut steps = Vec::with_capacity(plan.steps().len());
    for step in plan.steps() {
        let scope = DryScope {
            vars,
            assigned: &assigned,
        };
        let mut unresolved = Vec::new();
        let input = partial(step.input(), &scope, plan, "input", &mut unresolved);
        steps.push(PlannedStepView {
            index: step.index(),
            label: step.label().map(str::to_owned),
            plugin: step.plugin().name().to_owned(),
            verb: step.verb().to_owned(),
            status: "planned",
            input,
            unresolved,
            budget: StepBudget {
                timeout_ms: millis(step.timeout()).min(batch_ms),
                fuel: limits.fuel_per_step,
                memory_mib: limits.memory_mib,
            },
            retry: RetryView {
                attempts: step.retry().attempts,
                on: if step.retry().attempts > 1 {
                    step.retry().on.clone()
                } else {
                    Vec::new()
                },
                recover: step.retry().recover,
            },
            acts_on_world: step.acts_on_world(),
            assign_to: step.assign_to().map(str::to_owned),
            always: step.always(),
        });
        if let Some(name) = step.assign_to() {
            assigned.insert(name.to_owned(), step.index());
        }
    }
    PlanView {
        on_failure: match plan.on_failure() {
            OnFailure::Stop => "stop",
            OnFailure::Continue => "continue",
        },
        timeout_ms: batch_ms,
        steps,
    }
}

/// What a dry run can look up: the session's variables, minus those a step
/// of this batch would set first; no step results.
struct DryScope<'a> {
    vars: &'a BTreeMap<String, Value>,
    assigned: &'a BTreeMap<String, usize>,
}

impl Scope for DryScope<'_> {
    fn step(&self, index: usize) -> Lookup<'_> {
        Lookup::Unavailable(format!(
            "step {} runs first; a dry run runs no step",
            index + 1
        ))
    }

    fn name(&self, name: &str) -> Lookup<'_> {
        if let Some(index) = self.assigned.get(name) {
            return Lookup::Unavailable(format!(
                "set by step {} of this batch, which a dry run does not run",
                index + 1
            ));
        }
        self.vars.get(name).map_or(Lookup::Unknown, Lookup::Value)
    }
}

/// `value` with each string resolved on its own, so one reference that needs
/// a result leaves only its own string as written.
fn partial(
    value: &Value,
    scope: &DryScope<'_>,
    plan: &Plan,
    field: &str,
    unresolved: &mut Vec<Unresolved>,
) -> Value {
    match value {
        Value::String(_) => match vars::resolve(value, scope, plan.policy()) {
            Ok(resolved) => resolved,
            Err(e) => {
                unresolved.push(Unresolved {
                    field: field.to_owned(),
                    reason: e.to_string(),
                });
                value.clone()
            }
        },
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| partial(item, scope, plan, &format!("{field}[{i}]"), unresolved))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| {
                    let path = vars::join_path(field, key);
                    (key.clone(), partial(item, scope, plan, &path, unresolved))
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

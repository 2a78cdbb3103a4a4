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
    // A plan is an answer like a report: what its resolved inputs add up to
    // is charged against `limits.max_report_bytes` before each is built, so
    // a session variable referred to by every step is written out only as
    // often as one report may hold.
    let mut charge = Charge {
        left: limits.max_report_bytes,
        limits,
    };
    for step in plan.steps() {
        let scope = DryScope {
            vars,
            assigned: &assigned,
        };
        let mut unresolved = Vec::new();
        let input = partial(
            step.input(),
            &scope,
            plan,
            "input",
            &mut unresolved,
            &mut charge,
        );
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

/// What is left of the plan's size budget (`limits.max_report_bytes`).
struct Charge<'a> {
    left: u64,
    limits: &'a Limits,
}

/// `value` with each string resolved on its own, so one reference that needs
/// a result leaves only its own string as written. Each resolved string is
/// measured before it is built and charged to `charge`; one that would pass
/// what is left stays as written, with the reason.
fn partial(
    value: &Value,
    scope: &DryScope<'_>,
    plan: &Plan,
    field: &str,
    unresolved: &mut Vec<Unresolved>,
    charge: &mut Charge<'_>,
) -> Value {
    match value {
        Value::String(_) => {
            let bounds = vars::InputLimits {
                max_bytes: charge.left.min(charge.limits.max_input_bytes),
                max_depth: charge.limits.max_input_depth,
            };
            match vars::resolve_within(value, scope, plan.policy(), bounds) {
                Ok(resolved) => {
                    // Within `bounds`, so measuring it again cannot fail.
                    let bytes = vars::check_limits(
                        &resolved,
                        vars::InputLimits {
                            max_bytes: u64::MAX,
                            max_depth: usize::MAX,
                        },
                    )
                    .unwrap_or(bounds.max_bytes);
                    charge.left = charge.left.saturating_sub(bytes);
                    resolved
                }
                Err(vars::ResolveError::Var(e)) => {
                    unresolved.push(Unresolved {
                        field: field.to_owned(),
                        reason: e.to_string(),
                    });
                    value.clone()
                }
                Err(vars::ResolveError::Limit(e)) => {
                    let reason = match e.exceeded {
                        vars::Exceeded::Depth { max } => format!(
                            "{e}; past limits.max_input_depth = {max}, so the step would fail"
                        ),
                        vars::Exceeded::Bytes { .. }
                            if bounds.max_bytes == charge.limits.max_input_bytes
                                && charge.left > charge.limits.max_input_bytes =>
                        {
                            format!(
                                "{e}; past limits.max_input_bytes = {}, so the step would fail",
                                charge.limits.max_input_bytes
                            )
                        }
                        vars::Exceeded::Bytes { .. } => format!(
                            "not written out: with the inputs above it, this plan would pass \
                             limits.max_report_bytes = {} (a plan holds what one report may)",
                            charge.limits.max_report_bytes
                        ),
                    };
                    unresolved.push(Unresolved {
                        field: field.to_owned(),
                        reason,
                    });
                    value.clone()
                }
            }
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    partial(
                        item,
                        scope,
                        plan,
                        &format!("{field}[{i}]"),
                        unresolved,
                        charge,
                    )
                })
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| {
                    let path = vars::join_path(field, key);
                    (
                        key.clone(),
                        partial(item, scope, plan, &path, unresolved, charge),
                    )
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PlanContext, UnknownPolicy};
    use serde_json::json;

    #[test]
    fn a_plan_holds_at_most_what_a_report_may() {
        let steps: Vec<Value> = (0..100)
            .map(|_| json!({"plugin": "testkit", "verb": "echo", "input": {"value": "${big}"}}))
            .collect();
        let request = json!({"steps": steps, "dry_run": true});
        let limits = Limits {
            max_report_bytes: 5_000,
            ..Limits::default()
        };
        let catalog = crate::testing::catalog();
        let ctx = PlanContext {
            catalog: &catalog,
            limits: &limits,
            session_vars: &|name| name == "big",
            policy: UnknownPolicy::Reject,
        };
        let plan = crate::plan(&request, &ctx).expect("plans");
        let vars = BTreeMap::from([("big".to_owned(), json!("b".repeat(998)))]);
        let view = dry_run(&plan, &vars, &limits);
        assert_eq!(view.steps.len(), 100);
        let written = view
            .steps
            .iter()
            .filter(|s| s.input["value"] != json!("${big}"))
            .count();
        // 1,000 bytes each (the quotes too) within 5,000.
        assert_eq!(written, 5);
        let kept = &view.steps[5];
        assert_eq!(kept.input["value"], json!("${big}"));
        assert!(
            kept.unresolved[0]
                .reason
                .contains("limits.max_report_bytes = 5000"),
            "{:?}",
            kept.unresolved
        );
        // What was written out stays within the limit; the rest is the
        // request's own text.
        let total: usize = view.steps.iter().map(|s| s.input.to_string().len()).sum();
        assert!(
            total <= 5_000 + 100 * "{\"value\":\"${big}\"}".len(),
            "{total}"
        );
    }
}

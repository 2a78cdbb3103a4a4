//! Checks before anything acts: every step whose verb the plugin checks
//! (`checked` in its description, contract 0.3.0 on) is put to the plugin's
//! `check` with its input before the batch's first step runs. A desktop step
//! with an unknown key name or a blocked combo, or an accessibility verb on a
//! desktop without an accessibility bus, then refuses the whole batch, where
//! it used to fail only when its turn came, after earlier steps had typed.
//!
//! A step whose input refers to an earlier step's result cannot be checked up
//! front; `run` checks it once its input is resolved, before it runs.

use std::time::Duration;

use serde_json::Value;
use stephost_contract::{Failure, Fault};

use crate::budget::BatchClock;
use crate::plan::{Plan, PlannedStep, join_field, key_field};
use crate::run::{Executor, RunOptions};
use crate::{Problem, StepError};

/// Longest one check may take: checks must not wait, so this only bounds a
/// plugin that does.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Checks every checked step whose input is known now. All problems at once.
pub async fn check<E: Executor>(
    plan: &Plan,
    exec: &mut E,
    opts: &RunOptions<'_>,
) -> Result<(), Vec<Problem>> {
    let clock = BatchClock::start(CHECK_TIMEOUT);
    let mut problems = Vec::new();
    for step in plan.steps.iter().filter(|s| s.checked && !s.has_refs) {
        let input = step.input.to_string();
        let budget = clock.call(CHECK_TIMEOUT, opts.limits, &opts.cancel);
        if let Err(why) = exec.check(&step.plugin, &step.verb, &input, &budget).await {
            problems.push(problem(step, why));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Checks one step's resolved input, right before it runs (a step that
/// refers to earlier results). A refusal reads as invalid input: nothing of
/// the step ran.
pub(crate) async fn check_resolved<E: Executor>(
    step: &PlannedStep,
    input: &str,
    exec: &mut E,
    opts: &RunOptions<'_>,
    clock: BatchClock,
) -> Result<(), StepError> {
    let budget = clock.call(CHECK_TIMEOUT.min(step.timeout), opts.limits, &opts.cancel);
    exec.check(&step.plugin, &step.verb, input, &budget)
        .await
        .map_err(|why| {
            let failure = why.into_failure();
            StepError {
                code: failure.code,
                message: failure.message,
                input_fired: false,
                details: failure.details,
            }
        })
}

/// Why a check did not pass: the plugin refused the input, or the call
/// itself went wrong.
#[derive(Debug)]
pub enum Refusal {
    /// The plugin's answer.
    Failure(Failure),
    /// No answer: a trap, a timeout, a cancellation.
    Fault(Fault),
}

impl Refusal {
    /// The refusal as a failure: the plugin's own, or `failed` saying the
    /// check itself went wrong.
    fn into_failure(self) -> Failure {
        match self {
            Refusal::Failure(failure) => failure,
            Refusal::Fault(fault) => Failure {
                code: stephost_contract::FailureCode::Failed,
                message: format!("the plugin's check of this input failed: {fault}"),
                input_fired: false,
                details: None,
                proposal: Default::default(),
            },
        }
    }
}

fn problem(step: &PlannedStep, why: Refusal) -> Problem {
    let failure = why.into_failure();
    // A plugin names the input field it refused in its details.
    let field = failure
        .details
        .as_ref()
        .and_then(|d| d.get("field"))
        .and_then(Value::as_str)
        .map(key_field);
    let base = format!("steps[{}].input", step.index);
    Problem {
        step: Some(step.index),
        label: step.label.clone(),
        field: match field {
            Some(field) => join_field(&base, &field),
            None => base,
        },
        message: failure.message,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use stephost_contract::{
        CallBudget, CallOutcome, ContractVersion, FailureCode, PluginSpec, RawDescription, RawVerb,
    };
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::{Catalog, Limits, NoObserver, PlanContext, UnknownPolicy, Vars};

    /// `kb` with a checked `key {combo}` and an unchecked `type {text}`.
    fn catalog() -> Catalog {
        let verb = |name: &str, field: &str, checked| RawVerb {
            name: name.into(),
            description: String::new(),
            input_schema: json!({"type": "object", "properties": {field: {"type": "string"}},
                                 "additionalProperties": false})
            .to_string(),
            output_schema: String::new(),
            acts_on_world: true,
            checked,
        };
        let raw = RawDescription {
            name: "kb".into(),
            version: "1.0.0".into(),
            description: String::new(),
            bare_tool_names: false,
            verbs: vec![verb("key", "combo", true), verb("type", "text", false)],
        };
        match PluginSpec::new(raw, "builtin:kb", "00", ContractVersion::LATEST) {
            Ok(spec) => Catalog::new([Arc::new(spec)], []),
            Err(e) => panic!("valid: {e}"),
        }
    }

    /// Refuses combos with `Nope` in them; records what it was asked and run.
    #[derive(Default)]
    struct Keyboard {
        checked: Vec<String>,
        ran: Vec<String>,
    }

    impl Executor for Keyboard {
        fn call(
            &mut self,
            _: &Arc<PluginSpec>,
            verb: &str,
            input: &str,
            _: &CallBudget,
        ) -> impl Future<Output = CallOutcome> + Send {
            self.ran.push(format!("{verb} {input}"));
            std::future::ready(CallOutcome {
                result: Ok(Ok(stephost_contract::Output {
                    value: json!({"combo": "ok"}).to_string(),
                    content: Vec::new(),
                })),
                logs: Vec::new(),
                logs_dropped: 0,
                denied: Vec::new(),
                instance_dropped: false,
                time_ran_out: false,
            })
        }

        fn check(
            &mut self,
            _: &Arc<PluginSpec>,
            verb: &str,
            input: &str,
            _: &CallBudget,
        ) -> impl Future<Output = Result<(), Refusal>> + Send {
            self.checked.push(format!("{verb} {input}"));
            let refused = input.contains("Nope").then(|| {
                Refusal::Failure(Failure {
                    code: FailureCode::InvalidInput,
                    message: "unknown key `Nope`".into(),
                    input_fired: false,
                    details: Some(json!({"field": "combo"})),
                    proposal: Default::default(),
                })
            });
            std::future::ready(refused.map_or(Ok(()), Err))
        }
    }

    fn plan(request: serde_json::Value, catalog: &Catalog, limits: &Limits) -> Plan {
        let ctx = PlanContext {
            catalog,
            limits,
            session_vars: &|_| false,
            policy: UnknownPolicy::Reject,
        };
        match crate::plan(&request, &ctx) {
            Ok(plan) => plan,
            Err(p) => panic!("plans: {p:?}"),
        }
    }

    fn opts(limits: &Limits) -> RunOptions<'_> {
        RunOptions {
            limits,
            observer: &NoObserver,
            cancel: CancellationToken::new(),
            batch_id: "b".into(),
            session_id: None,
        }
    }

    #[tokio::test]
    async fn a_bad_key_in_step_two_is_found_before_step_one_runs() {
        let (catalog, limits) = (catalog(), Limits::default());
        let plan = plan(
            json!({"steps": [
                {"plugin": "kb", "verb": "type", "input": {"text": "hello"}},
                {"plugin": "kb", "verb": "key", "input": {"combo": "ctrl+Nope"}},
                {"plugin": "kb", "verb": "key", "input": {"combo": "Return"}}
            ]}),
            &catalog,
            &limits,
        );
        let mut kb = Keyboard::default();
        let problems = check(&plan, &mut kb, &opts(&limits))
            .await
            .expect_err("refused");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].step, Some(1));
        assert_eq!(problems[0].field, "steps[1].input.combo");
        assert!(problems[0].message.contains("Nope"));
        // Only checked verbs are asked, and nothing ran.
        assert_eq!(kb.checked.len(), 2, "{:?}", kb.checked);
        assert!(kb.ran.is_empty());
    }

    #[tokio::test]
    async fn a_step_that_refers_to_a_result_is_checked_when_it_is_known() {
        let (catalog, limits) = (catalog(), Limits::default());
        let plan = plan(
            json!({"steps": [
                {"plugin": "kb", "verb": "type", "input": {"text": "hello"}},
                {"plugin": "kb", "verb": "key", "input": {"combo": "ctrl+${STEP_1.combo}Nope"}}
            ]}),
            &catalog,
            &limits,
        );
        let mut kb = Keyboard::default();
        assert!(check(&plan, &mut kb, &opts(&limits)).await.is_ok());
        assert!(kb.checked.is_empty(), "not known up front");
        let report = crate::run(&plan, &mut Vars::default(), &mut kb, &opts(&limits)).await;
        assert_eq!(
            kb.ran.len(),
            1,
            "step 2 was refused before it ran: {:?}",
            kb.ran
        );
        let error = report.steps[1].error.as_ref().expect("refused");
        assert_eq!(error.code, FailureCode::InvalidInput);
        assert!(!error.input_fired);
        assert_eq!(kb.checked, ["key {\"combo\":\"ctrl+okNope\"}"]);
    }
}

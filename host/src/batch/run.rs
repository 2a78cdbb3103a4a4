//! Run: steps in order, each under `min(step timeout, what is left of the batch
//! budget)`, results chained into later steps, retries, and the report.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::plan::{OnFailure, Plan, PlannedStep};
use super::recover::{ActionRecord, Proposal, Round};
use super::report::{BatchStatus, ContentItem, Report, StepError, StepReport, StepStatus};
use super::vars::{self, Exceeded, InputLimits, LimitError, Lookup, ResolveError, Scope};
use crate::config::Limits;
use crate::plugins::bindings::exports::stephost::plugin::tool;
use crate::plugins::bindings::stephost::plugin::types::Content;
use crate::plugins::instance::InstantiateError;
use crate::plugins::{CallBudget, Fault, LoadedPlugin, PluginInstance};
use crate::session::SessionState;

/// Hears about steps as they run (progress notifications, CLI progress lines).
pub trait Observer: Send + Sync {
    /// A step is about to run.
    fn step_started(&self, _step: &PlannedStep, _total: usize) {}
    /// A step finished; `done` steps of `total` have run.
    fn step_finished(&self, _step: &StepReport, _done: usize, _total: usize) {}
}

/// An observer that ignores everything.
pub struct NoObserver;
impl Observer for NoObserver {}

/// Everything a run needs besides the plan and the session.
pub struct RunOptions<'a> {
    /// Limits (memory, fuel, log caps).
    pub limits: &'a Limits,
    /// Progress sink.
    pub observer: &'a dyn Observer,
    /// Client cancellation.
    pub cancel: CancellationToken,
    /// Id of this run.
    pub batch_id: String,
    /// Session id, for the report.
    pub session_id: Option<String>,
}

/// Longest pause between retries.
const MAX_BACKOFF: Duration = Duration::from_millis(500);

/// Runs `plan` in `state` and reports.
pub async fn run(plan: &Plan, state: &mut SessionState, opts: &RunOptions<'_>) -> Report {
    let started = Instant::now();
    let batch_deadline = started + plan.timeout;
    let total = plan.steps.len();
    // Per step: its value once passed, or why it has none.
    let mut results: Vec<Option<Result<Value, String>>> = vec![None; total];
    let mut reports = Vec::with_capacity(total);
    let mut notes = Vec::new();
    let mut budget_ran_out = false;
    // Set once a failure stops the batch: from then on only `always` steps run.
    let mut stopped_at: Option<usize> = None;
    let mut failed_assignments: BTreeMap<String, usize> = BTreeMap::new();
    // Bytes of results and resolved inputs the report holds so far.
    let mut report_bytes: u64 = 0;
    for step in &plan.steps {
        if stopped_at.is_some() && !step.always {
            continue;
        }
        if opts.cancel.is_cancelled() {
            notes.push(format!(
                "cancelled by the client before step {}",
                step.index + 1
            ));
            break;
        }
        if Instant::now() >= batch_deadline {
            budget_ran_out = true;
            notes.push(format!(
                "the batch time budget of {} ms ran out before step {}",
                plan.timeout.as_millis(),
                step.index + 1
            ));
            break;
        }
        opts.observer.step_started(step, total);
        let span = tracing::info_span!(
            "step",
            index = step.index,
            plugin = step.plugin.name(),
            verb = %step.verb
        );
        let (mut report, size) = run_step(
            plan,
            step,
            &results,
            &failed_assignments,
            state,
            opts,
            batch_deadline,
        )
        .instrument(span)
        .await;
        report_bytes = keep_within_report_cap(&mut report, size, report_bytes, opts.limits);
        if let (Some(name), StepStatus::Passed) = (&step.assign_to, &report.status) {
            check_session_vars_cap(&mut report, name, size.value, state, opts.limits);
        }
        results[step.index] = Some(match (&report.status, &report.value) {
            (StepStatus::Passed, value) => Ok(value.clone().unwrap_or(Value::Null)),
            (status, _) => Err(format!(
                "step {} {}",
                step.index + 1,
                match status {
                    StepStatus::TimedOut => "timed out",
                    StepStatus::Cancelled => "was cancelled",
                    _ => "failed",
                }
            )),
        });
        if let Some(name) = &step.assign_to {
            if report.status == StepStatus::Passed {
                failed_assignments.remove(name);
                state.var_bytes.insert(name.clone(), size.value);
                state
                    .vars
                    .insert(name.clone(), report.value.clone().unwrap_or(Value::Null));
            } else {
                failed_assignments.insert(name.clone(), step.index);
            }
        }
        let failed = report.status != StepStatus::Passed;
        let cancelled = report.status == StepStatus::Cancelled;
        reports.push(report);
        if let Some(last) = reports.last() {
            opts.observer.step_finished(last, reports.len(), total);
        }
        if cancelled {
            break;
        }
        if failed && plan.on_failure == OnFailure::Stop && stopped_at.is_none() {
            stopped_at = Some(step.index);
        }
    }
    if let Some(index) = stopped_at {
        let ran_after = reports.iter().filter(|r| r.index > index).count();
        if ran_after > 0 {
            notes.push(format!(
                "step {} failed, so later steps were skipped except {ran_after} marked `always`",
                index + 1
            ));
        }
    }
    let executed = reports.len();
    let status = if opts.cancel.is_cancelled() {
        BatchStatus::Cancelled
    } else {
        match reports.iter().find(|r| r.status != StepStatus::Passed) {
            Some(r) if r.status == StepStatus::TimedOut => BatchStatus::TimedOut,
            Some(_) => BatchStatus::Failed,
            None if budget_ran_out => BatchStatus::TimedOut,
            None => BatchStatus::Passed,
        }
    };
    Report {
        status,
        batch_id: opts.batch_id.clone(),
        session_id: opts.session_id.clone(),
        steps_total: total,
        steps_executed: executed,
        never_started: total - executed,
        time_ms: ms(started.elapsed()),
        steps: reports,
        errors: Vec::new(),
        error: None,
        notes,
    }
}

struct BatchScope<'a> {
    results: &'a [Option<Result<Value, String>>],
    vars: &'a BTreeMap<String, Value>,
    /// Names whose assigning step in this batch failed, with the step index:
    /// they must not fall back to an older value from the session.
    failed_assignments: &'a BTreeMap<String, usize>,
}

impl Scope for BatchScope<'_> {
    fn step(&self, index: usize) -> Lookup<'_> {
        match self.results.get(index) {
            Some(Some(Ok(value))) => Lookup::Value(value),
            Some(Some(Err(why))) => Lookup::Unavailable(why.clone()),
            Some(None) => Lookup::Unavailable(format!("step {} has not run", index + 1)),
            None => Lookup::Unknown,
        }
    }

    fn name(&self, name: &str) -> Lookup<'_> {
        if let Some(index) = self.failed_assignments.get(name) {
            return Lookup::Unavailable(format!(
                "step {}, which assigns `{name}`, did not pass",
                index + 1
            ));
        }
        self.vars.get(name).map_or(Lookup::Unknown, Lookup::Value)
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// What a step adds to the report and the session, in bytes.
#[derive(Debug, Clone, Copy, Default)]
struct StepSize {
    /// Value, content and resolved input kept in the report.
    kept: u64,
    /// The value as JSON text (what `assign_to` stores).
    value: u64,
}

fn size_error(code: &str, message: String, input_fired: bool) -> StepError {
    StepError {
        code: code.into(),
        message,
        input_fired,
        details: None,
    }
}

/// Applies `limits.max_report_bytes`: a step whose results would push the report
/// past it keeps none of them and, if it passed, fails (so the batch stops
/// there under `on_failure: stop`). Returns the new running total.
fn keep_within_report_cap(
    report: &mut StepReport,
    size: StepSize,
    so_far: u64,
    limits: &Limits,
) -> u64 {
    let total = so_far.saturating_add(size.kept);
    if total <= limits.max_report_bytes {
        return total;
    }
    report.value = None;
    report.content.clear();
    report.input = None;
    let message = format!(
        "step {} would bring the batch's results to {total} bytes, past limits.max_report_bytes = {}; \
         its result was dropped. Return less per step (a path or a summary instead of the whole data) or split the batch",
        report.index + 1,
        limits.max_report_bytes
    );
    if report.status == StepStatus::Passed {
        report.status = StepStatus::Failed;
        report.error = Some(size_error("report-too-large", message, true));
    } else {
        report.notes.push(message);
    }
    so_far
}

/// Applies `limits.max_session_vars_bytes` to a passed step's `assign_to`.
fn check_session_vars_cap(
    report: &mut StepReport,
    name: &str,
    value_bytes: u64,
    state: &SessionState,
    limits: &Limits,
) {
    let others: u64 = state
        .var_bytes
        .iter()
        .filter(|(n, _)| n.as_str() != name)
        .map(|(_, b)| *b)
        .sum();
    let total = others.saturating_add(value_bytes);
    if total > limits.max_session_vars_bytes {
        report.status = StepStatus::Failed;
        report.error = Some(size_error(
            "session-vars-too-large",
            format!(
                "assigning `{name}` ({value_bytes} bytes) would bring the session's variables to {total} bytes, \
                 past limits.max_session_vars_bytes = {}; the step ran but `{name}` was not set",
                limits.max_session_vars_bytes
            ),
            true,
        ));
    }
}

fn content_bytes(content: &[Content]) -> u64 {
    content
        .iter()
        .map(|c| match c {
            Content::Text(text) => text.len() as u64,
            // Base64 in the report: 4 bytes per 3.
            Content::Image(image) => (image.data.len() as u64).div_ceil(3) * 4,
        })
        .sum()
}

/// The limits a step's resolved input must stay within.
fn input_limits(limits: &Limits) -> InputLimits {
    InputLimits {
        max_bytes: limits.max_input_bytes,
        max_depth: limits.max_input_depth,
    }
}

/// The failure code, limit key and limit value of an input limit.
fn limit_key(exceeded: Exceeded) -> (&'static str, &'static str, u64) {
    match exceeded {
        Exceeded::Bytes { max, .. } => ("input-too-large", "limits.max_input_bytes", max),
        Exceeded::Depth { max } => (
            "input-too-deep",
            "limits.max_input_depth",
            u64::try_from(max).unwrap_or(u64::MAX),
        ),
    }
}

/// The step error for a resolved input past `limits.max_input_bytes` or
/// `limits.max_input_depth`; `step` is the 1-based step number.
fn input_limit_error(step: usize, e: &LimitError) -> StepError {
    let field = e.field_path("input");
    let cause = match &e.reference {
        Some(r) => format!("substituting `{r}` would"),
        // Literal content after earlier substitutions.
        None => "this literal value would".to_owned(),
    };
    let (code, key, max) = limit_key(e.exceeded);
    let message = match e.exceeded {
        Exceeded::Bytes { max, at_least } => format!(
            "step {step}: {field}: {cause} make the resolved input at least {at_least} bytes, \
             past limits.max_input_bytes = {max}; the step did not run. Refer to a part of \
             the value (a path such as `${{STEP_1.items[0]}}`) or have the earlier step return less"
        ),
        Exceeded::Depth { max } => format!(
            "step {step}: {field}: {cause} nest the resolved input's arrays and objects more \
             than {max} levels deep, past limits.max_input_depth = {max}; the step did not run"
        ),
    };
    StepError {
        code: code.into(),
        message,
        input_fired: false,
        details: Some(serde_json::json!({"limit": key, "max": max, "field": field})),
    }
}

/// Resolves a step's input and checks it against the schema again.
fn prepare_input(
    plan: &Plan,
    step: &PlannedStep,
    results: &[Option<Result<Value, String>>],
    failed_assignments: &BTreeMap<String, usize>,
    vars: &BTreeMap<String, Value>,
    limits: &Limits,
) -> Result<Value, StepError> {
    if !step.has_refs {
        // The planner checked the input as written against the same limits.
        return Ok(step.input.clone());
    }
    let scope = BatchScope {
        results,
        vars,
        failed_assignments,
    };
    let input = vars::resolve_within(&step.input, &scope, plan.policy, input_limits(limits))
        .map_err(|e| match e {
            ResolveError::Var(e) => StepError {
                code: "unresolved-reference".into(),
                message: format!("input: {e}"),
                input_fired: false,
                details: None,
            },
            ResolveError::Limit(e) => input_limit_error(step.index + 1, &e),
        })?;
    if let Some(verb) = step.plugin.verb(&step.verb) {
        let problems = verb.validate(&input);
        if !problems.is_empty() {
            let text: Vec<String> = problems
                .iter()
                .map(|(pointer, message)| {
                    format!(
                        "{}: {message}",
                        super::plan::pointer_to_field("input", pointer)
                    )
                })
                .collect();
            return Err(StepError {
                code: "invalid-input".into(),
                message: format!("after resolving references: {}", text.join("; ")),
                input_fired: false,
                details: None,
            });
        }
    }
    Ok(input)
}

async fn run_step(
    plan: &Plan,
    step: &PlannedStep,
    results: &[Option<Result<Value, String>>],
    failed_assignments: &BTreeMap<String, usize>,
    state: &mut SessionState,
    opts: &RunOptions<'_>,
    batch_deadline: Instant,
) -> (StepReport, StepSize) {
    let started = Instant::now();
    let mut size = StepSize::default();
    let mut report = StepReport {
        index: step.index,
        label: step.label.clone(),
        plugin: step.plugin.name().to_owned(),
        verb: step.verb.clone(),
        status: StepStatus::Failed,
        attempts: 0,
        time_ms: 0.0,
        input: None,
        value: None,
        error: None,
        content: Vec::new(),
        logs: Vec::new(),
        recovery: Vec::new(),
        notes: Vec::new(),
    };
    let input = match prepare_input(
        plan,
        step,
        results,
        failed_assignments,
        &state.vars,
        opts.limits,
    ) {
        Ok(input) => input,
        Err(error) => {
            report.error = Some(error);
            report.time_ms = ms(started.elapsed());
            return (report, size);
        }
    };
    let input_text = input.to_string();
    if step.has_refs {
        report.input = Some(input);
        size.kept = input_text.len() as u64;
    }
    let plugin_name = step.plugin.name().to_owned();
    let call = Call {
        plugin: &step.plugin,
        plugin_name: &plugin_name,
        verb: &step.verb,
        acts_on_world: step.acts_on_world,
    };
    let mut tried: Vec<String> = Vec::new();
    for attempt in 1..=step.retry.attempts {
        report.attempts = attempt;
        let now = Instant::now();
        let step_deadline = now + step.timeout;
        let deadline = step_deadline.min(batch_deadline);
        let budget = CallBudget {
            deadline,
            timeout: deadline.saturating_duration_since(now),
            fuel: opts.limits.fuel_per_step,
            cancel: opts.cancel.clone(),
        };
        let outcome = attempt_once(&call, &input_text, state, opts, &budget, &mut report).await;
        let error = match outcome {
            Ok(output) => {
                let bytes = output.value.len() as u64 + content_bytes(&output.content);
                if bytes > opts.limits.max_result_bytes {
                    report.status = StepStatus::Failed;
                    report.error = Some(size_error(
                        "result-too-large",
                        format!(
                            "the `{}` verb returned {bytes} bytes, past limits.max_result_bytes = {}; \
                             the result was dropped",
                            step.verb, opts.limits.max_result_bytes
                        ),
                        step.acts_on_world,
                    ));
                    break;
                }
                size.kept += bytes;
                size.value = output.value.len() as u64;
                match output_value(&output.value) {
                    Ok(value) => {
                        report.status = StepStatus::Passed;
                        report.value = Some(value);
                        report.error = None;
                        report.content = content_items(step, output.content);
                    }
                    Err(message) => {
                        report.status = StepStatus::Failed;
                        report.error = Some(StepError {
                            code: "plugin-error".into(),
                            message,
                            input_fired: step.acts_on_world,
                            details: None,
                        });
                    }
                }
                break;
            }
            Err((status, error)) => {
                report.status = status;
                error
            }
        };
        let budget_left = batch_deadline.saturating_duration_since(Instant::now());
        let retry = attempt < step.retry.attempts
            && report.status != StepStatus::Cancelled
            && step.retry.on.iter().any(|c| c == &error.code)
            && (step.retry.explicit || !step.acts_on_world || !error.input_fired)
            && !budget_left.is_zero();
        if !retry {
            if attempt < step.retry.attempts
                && step.retry.on.iter().any(|c| c == &error.code)
                && step.acts_on_world
                && error.input_fired
                && !step.retry.explicit
            {
                report.notes.push(format!(
                    "not retried: `{}` acts on the world and its input may have fired; list \"{}\" in retry.on to retry anyway",
                    step.verb, error.code
                ));
            }
            report.error = Some(error);
            break;
        }
        report.notes.push(format!(
            "attempt {attempt} failed with `{}`: {}; retrying",
            error.code, error.message
        ));
        let round = if step.retry.recover {
            Some(
                recover_round(
                    &call,
                    step.timeout,
                    attempt,
                    &error,
                    &mut tried,
                    state,
                    opts,
                    batch_deadline,
                    &mut report,
                )
                .await,
            )
        } else {
            None
        };
        report.error = Some(error);
        let backoff =
            (Duration::from_millis(25) * 2u32.saturating_pow(attempt - 1)).min(MAX_BACKOFF);
        let wait = backoff.min(batch_deadline.saturating_duration_since(Instant::now()));
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = opts.cancel.cancelled() => {}
        }
        if let Some(mut round) = round {
            round.wait_ms = ms(wait);
            report.recovery.push(round);
        }
        if opts.cancel.is_cancelled() {
            break;
        }
    }
    report.time_ms = ms(started.elapsed());
    (report, size)
}

/// What one plugin call targets: the step's own verb or a recovery action.
struct Call<'a> {
    plugin: &'a Arc<LoadedPlugin>,
    plugin_name: &'a str,
    verb: &'a str,
    acts_on_world: bool,
}

/// One recovery round after failed run `attempt`: picks the plugin's next
/// strategy (see [`recover`](super::recover)) and runs its actions on the same
/// instance, each under the step timeout and what is left of the batch. The
/// caller adds the backoff wait.
#[allow(clippy::too_many_arguments)]
async fn recover_round(
    call: &Call<'_>,
    step_timeout: Duration,
    attempt: u32,
    error: &StepError,
    tried: &mut Vec<String>,
    state: &mut SessionState,
    opts: &RunOptions<'_>,
    batch_deadline: Instant,
    report: &mut StepReport,
) -> Round {
    let proposal = Proposal::from_details(error.details.as_ref());
    let mut round = Round {
        after_attempt: attempt,
        error: format!("{}: {}", error.code, error.message),
        classification: proposal.classification.clone(),
        tier: 1,
        strategy: "wait_and_retry".into(),
        description: Some("wait (backoff), then run the step again".into()),
        actions: Vec::new(),
        wait_ms: 0.0,
        notes: proposal.malformed.clone(),
    };
    let Some(strategy) = proposal.pick(attempt, tried) else {
        return round;
    };
    tried.push(strategy.name.clone());
    round.tier = strategy.tier;
    round.strategy = strategy.name.clone();
    round.description = strategy.description.clone();
    for action in &strategy.actions {
        let started = Instant::now();
        // A proposal comes from the plugin, not the caller, but it is sent and reported the
        // same way, so the same limits hold; a refused input is not copied into the report.
        let checked = vars::check_limits(&action.input, input_limits(opts.limits));
        let mut record = ActionRecord {
            verb: action.verb.clone(),
            input: match checked {
                Ok(_) => action.input.clone(),
                Err(_) => Value::Null,
            },
            description: action.description.clone(),
            status: "failed",
            error: None,
            time_ms: 0.0,
        };
        if let Err(e) = checked {
            let (code, key, max) = limit_key(e.exceeded);
            record.error = Some(format!(
                "{code}: {}: {}, past {key} = {max}; not run",
                e.field_path("input"),
                e.problem()
            ));
            round.actions.push(record);
            break;
        }
        let Some(verb) = call.plugin.verb(&action.verb) else {
            record.error = Some(format!(
                "invalid-input: the `{}` plugin has no verb `{}`",
                call.plugin_name, action.verb
            ));
            round.actions.push(record);
            break;
        };
        let problems = verb.validate(&action.input);
        if !problems.is_empty() {
            let text: Vec<String> = problems
                .iter()
                .map(|(pointer, message)| {
                    format!(
                        "{}: {message}",
                        super::plan::pointer_to_field("input", pointer)
                    )
                })
                .collect();
            record.error = Some(format!("invalid-input: {}", text.join("; ")));
            round.actions.push(record);
            break;
        }
        if opts.cancel.is_cancelled() || Instant::now() >= batch_deadline {
            record.error = Some("not run: the batch was cancelled or ran out of time".into());
            round.actions.push(record);
            break;
        }
        let now = Instant::now();
        let deadline = (now + step_timeout).min(batch_deadline);
        let budget = CallBudget {
            deadline,
            timeout: deadline.saturating_duration_since(now),
            fuel: opts.limits.fuel_per_step,
            cancel: opts.cancel.clone(),
        };
        let action_call = Call {
            plugin: call.plugin,
            plugin_name: call.plugin_name,
            verb: &action.verb,
            acts_on_world: verb.info.acts_on_world,
        };
        let outcome = attempt_once(
            &action_call,
            &action.input.to_string(),
            state,
            opts,
            &budget,
            report,
        )
        .await;
        record.time_ms = ms(started.elapsed());
        match outcome {
            Ok(_) => record.status = "passed",
            Err((_, e)) => record.error = Some(format!("{}: {}", e.code, e.message)),
        }
        let failed = record.status == "failed";
        round.actions.push(record);
        if failed {
            // Why stop: later actions of a strategy build on earlier ones.
            break;
        }
    }
    tracing::info!(
        attempt,
        strategy = %round.strategy,
        tier = round.tier,
        "recovery round"
    );
    round
}

/// One run of a verb: instance (created if needed) and call. A fault drops the
/// instance so the next use gets a fresh one.
async fn attempt_once(
    call: &Call<'_>,
    input_text: &str,
    state: &mut SessionState,
    opts: &RunOptions<'_>,
    budget: &CallBudget,
    report: &mut StepReport,
) -> Result<tool::Output, (StepStatus, StepError)> {
    if !state.instances.contains_key(call.plugin_name) {
        match PluginInstance::new(
            call.plugin.clone(),
            opts.limits.memory_bytes(),
            opts.limits.max_log_lines_per_step,
            budget,
        )
        .await
        {
            Ok(instance) => {
                state
                    .instances
                    .insert(call.plugin_name.to_owned(), instance);
            }
            Err(InstantiateError::PoolExhausted) => {
                return Err((
                    StepStatus::Failed,
                    StepError {
                        code: "busy".into(),
                        message: InstantiateError::PoolExhausted.to_string(),
                        input_fired: false,
                        details: None,
                    },
                ));
            }
            Err(InstantiateError::Fault(fault)) => {
                return Err(fault_error(fault, false));
            }
        }
    }
    let Some(instance) = state.instances.get_mut(call.plugin_name) else {
        return Err((
            StepStatus::Failed,
            StepError {
                code: "failed".into(),
                message: "plugin instance vanished".into(),
                input_fired: false,
                details: None,
            },
        ));
    };
    let outcome = instance.invoke(call.verb, input_text, budget).await;
    report.logs.extend(outcome.logs);
    for destination in &outcome.http_denied {
        report.notes.push(if destination.ends_with("(an address of the host itself)") {
            format!(
                "the host refused outbound HTTP to {destination}: the driver, browser and MCP server addresses of the host are open to no plugin grant"
            )
        } else {
            format!(
                "the host refused outbound HTTP to {destination}: not in the `{}` plugin's http grant ({})",
                call.plugin_name,
                call.plugin.allow_list().describe()
            )
        });
    }
    if outcome.logs_dropped > 0 {
        report.notes.push(format!(
            "{} log lines dropped (limits.max_log_lines_per_step = {})",
            outcome.logs_dropped, opts.limits.max_log_lines_per_step
        ));
    }
    match outcome.result {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(failure)) => Err((StepStatus::Failed, failure_error(failure))),
        Err(fault) => {
            state.instances.remove(call.plugin_name);
            report.notes.push(format!(
                "the `{}` instance of this session was dropped ({}); a fresh one is created on next use, so plugin state held in it is gone",
                call.plugin_name,
                fault.code()
            ));
            tracing::info!(
                plugin = call.plugin_name,
                verb = call.verb,
                code = fault.code(),
                "{fault}"
            );
            Err(fault_error(fault, call.acts_on_world))
        }
    }
}

fn fault_error(fault: Fault, input_may_have_fired: bool) -> (StepStatus, StepError) {
    let status = match fault {
        Fault::Timeout(_) => StepStatus::TimedOut,
        Fault::Cancelled => StepStatus::Cancelled,
        _ => StepStatus::Failed,
    };
    (
        status,
        StepError {
            code: fault.code().into(),
            message: fault.to_string(),
            input_fired: input_may_have_fired,
            details: None,
        },
    )
}

fn failure_error(failure: tool::Failure) -> StepError {
    let details = if failure.details.trim().is_empty() {
        None
    } else {
        Some(serde_json::from_str(&failure.details).unwrap_or(Value::String(failure.details)))
    };
    StepError {
        code: if failure.code.is_empty() {
            "failed".into()
        } else {
            failure.code
        },
        message: failure.message,
        input_fired: failure.input_fired,
        details,
    }
}

fn output_value(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(text)
        .map_err(|e| format!("the plugin returned a value that is not JSON: {e}"))
}

fn content_items(step: &PlannedStep, content: Vec<Content>) -> Vec<ContentItem> {
    content
        .into_iter()
        .map(|item| match item {
            Content::Text(text) => ContentItem::Text { text },
            Content::Image(image) => ContentItem::image(
                image.mime,
                &image.data,
                format!("step {}: {}", step.index + 1, step.verb),
            ),
        })
        .collect()
}

//! Run: steps in order, each under `min(step timeout, what is left of the batch
//! budget)`, results chained into later steps, retries, and the report.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use stephost_contract::{
    CallBudget, CallOutcome, Content, Denial, Failure, FailureCode, Fault, Output, PluginSpec,
    Proposal,
};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::Limits;
use crate::budget::BatchClock;
use crate::plan::{OnFailure, Plan, PlannedStep};
use crate::recover::{ActionRecord, Round};
use crate::report::{BatchStatus, ContentItem, Report, StepError, StepReport, StepStatus};
use crate::session::Vars;
use crate::vars::{self, Exceeded, InputLimits, LimitError, Lookup, ResolveError, Scope};

/// Runs verbs for a batch: the session's plugin instances, made on first use.
/// The runtime implements it; the engine decides what each call may take (its
/// [`CallBudget`]) and the runtime enforces it.
pub trait Executor: Send {
    /// Calls `verb` of `plugin` with `input` (JSON text) under `budget`. A fault
    /// drops the instance (the outcome says so), and the next call gets a new one.
    fn call(
        &mut self,
        plugin: &Arc<PluginSpec>,
        verb: &str,
        input: &str,
        budget: &CallBudget,
    ) -> impl Future<Output = CallOutcome> + Send;

    /// Asks `plugin` whether `verb` would accept `input`, acting on nothing
    /// (`tool.check`). Called only for verbs whose description says `checked`.
    fn check(
        &mut self,
        plugin: &Arc<PluginSpec>,
        verb: &str,
        input: &str,
        budget: &CallBudget,
    ) -> impl Future<Output = Result<(), crate::Refusal>> + Send {
        let _ = (plugin, verb, input, budget);
        async { Ok(()) }
    }
}

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

/// Runs `plan` with the session's variables `vars` and its instances `exec`,
/// and reports.
pub async fn run<E: Executor>(
    plan: &Plan,
    vars: &mut Vars,
    exec: &mut E,
    opts: &RunOptions<'_>,
) -> Report {
    let clock = BatchClock::start(plan.timeout);
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
        if clock.expired() {
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
        let (mut report, mut size) = run_step(
            plan,
            step,
            &results,
            &failed_assignments,
            (vars, &mut *exec),
            opts,
            clock,
        )
        .instrument(span)
        .await;
        size.kept = size.kept.saturating_add(text_bytes(&report));
        report_bytes = keep_within_report_cap(&mut report, size, report_bytes, opts.limits);
        if let (Some(name), StepStatus::Passed) = (&step.assign_to, &report.status) {
            check_session_vars_cap(&mut report, name, size.value, vars, opts.limits);
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
                vars.set(
                    name,
                    report.value.clone().unwrap_or(Value::Null),
                    size.value,
                );
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
        time_ms: ms(clock.started.elapsed()),
        steps: reports,
        errors: Vec::new(),
        error: None,
        notes,
        plan: None,
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

fn size_error(code: FailureCode, message: String, input_fired: bool) -> StepError {
    StepError {
        code,
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
    if !report.logs.is_empty() {
        report.notes.push(format!(
            "{} log lines dropped with the result",
            report.logs.len()
        ));
        report.logs.clear();
    }
    let message = format!(
        "step {} would bring the batch's results to {total} bytes, past limits.max_report_bytes = {}; \
         its result was dropped. Return less per step (a path or a summary instead of the whole data) or split the batch",
        report.index + 1,
        limits.max_report_bytes
    );
    if report.status == StepStatus::Passed {
        report.status = StepStatus::Failed;
        report.error = Some(size_error(FailureCode::ReportTooLarge, message, true));
    } else {
        report.notes.push(message);
    }
    so_far
}

/// What a step's report holds besides its value, content and input: its
/// log lines (up to `max_log_lines_per_step` of 4 KiB per run, and a step
/// may run `max_attempts` times), notes and error message. A plugin chooses
/// them as freely as its value, so they count against the report's limit too.
fn text_bytes(report: &StepReport) -> u64 {
    let logs: usize = report.logs.iter().map(|l| l.message.len()).sum();
    let notes: usize = report.notes.iter().map(String::len).sum();
    let error = report.error.as_ref().map_or(0, |e| e.message.len());
    u64::try_from(logs + notes + error).unwrap_or(u64::MAX)
}

/// Applies `limits.max_session_vars_bytes` to a passed step's `assign_to`.
fn check_session_vars_cap(
    report: &mut StepReport,
    name: &str,
    value_bytes: u64,
    vars: &Vars,
    limits: &Limits,
) {
    let total = vars.bytes_without(name).saturating_add(value_bytes);
    if total > limits.max_session_vars_bytes {
        report.status = StepStatus::Failed;
        report.error = Some(size_error(
            FailureCode::SessionVarsTooLarge,
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
    content.iter().map(Content::report_bytes).sum()
}

/// The limits a step's resolved input must stay within.
fn input_limits(limits: &Limits) -> InputLimits {
    InputLimits {
        max_bytes: limits.max_input_bytes,
        max_depth: limits.max_input_depth,
    }
}

/// The failure code, limit key and limit value of an input limit.
fn limit_key(exceeded: Exceeded) -> (FailureCode, &'static str, u64) {
    match exceeded {
        Exceeded::Bytes { max, .. } => (FailureCode::InputTooLarge, "limits.max_input_bytes", max),
        Exceeded::Depth { max } => (
            FailureCode::InputTooDeep,
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
        code,
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
                code: FailureCode::UnresolvedReference,
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
                        crate::plan::pointer_to_field("input", pointer)
                    )
                })
                .collect();
            return Err(StepError {
                code: FailureCode::InvalidInput,
                message: format!("after resolving references: {}", text.join("; ")),
                input_fired: false,
                details: None,
            });
        }
    }
    Ok(input)
}

/// A session as one step sees it: its variables and its instances.
type SessionParts<'s, E> = (&'s mut Vars, &'s mut E);

async fn run_step<E: Executor>(
    plan: &Plan,
    step: &PlannedStep,
    results: &[Option<Result<Value, String>>],
    failed_assignments: &BTreeMap<String, usize>,
    (vars, exec): SessionParts<'_, E>,
    opts: &RunOptions<'_>,
    clock: BatchClock,
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
        vars.values(),
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
        // Checked up front only when its input was known then.
        if step.checked
            && let Err(error) =
                crate::check::check_resolved(step, &input_text, exec, opts, clock).await
        {
            report.error = Some(error);
            report.time_ms = ms(started.elapsed());
            return (report, size);
        }
    }
    let call = Call {
        plugin: &step.plugin,
        verb: &step.verb,
        acts_on_world: step.acts_on_world,
    };
    let mut tried: Vec<String> = Vec::new();
    for attempt in 1..=step.retry.attempts {
        report.attempts = attempt;
        let budget = clock.call(step.timeout, opts.limits, &opts.cancel);
        let outcome = attempt_once(&call, &input_text, exec, opts, &budget, &mut report).await;
        let (error, proposal) = match outcome {
            Ok(output) => {
                let bytes = output.value.len() as u64 + content_bytes(&output.content);
                if bytes > opts.limits.max_result_bytes {
                    report.status = StepStatus::Failed;
                    report.error = Some(size_error(
                        FailureCode::ResultTooLarge,
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
                            code: FailureCode::PluginError,
                            message,
                            input_fired: step.acts_on_world,
                            details: None,
                        });
                    }
                }
                break;
            }
            Err(failed) => {
                report.status = failed.status;
                (failed.error, failed.proposal)
            }
        };
        let listed = step
            .retry
            .on
            .iter()
            .any(|c| c.as_str() == error.code.as_str());
        let retry = attempt < step.retry.attempts
            && report.status != StepStatus::Cancelled
            && listed
            && (step.retry.explicit || !step.acts_on_world || !error.input_fired)
            && !clock.left().is_zero();
        if !retry {
            if attempt < step.retry.attempts
                && listed
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
            let failed = Failed {
                status: report.status,
                error,
                proposal,
            };
            let round = recover_round(
                &call,
                step.timeout,
                attempt,
                &failed,
                &mut tried,
                exec,
                opts,
                clock,
                &mut report,
            )
            .await;
            report.error = Some(failed.error);
            Some(round)
        } else {
            report.error = Some(error);
            None
        };
        let wait = clock.backoff(attempt);
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
    plugin: &'a Arc<PluginSpec>,
    verb: &'a str,
    acts_on_world: bool,
}

/// A run that did not pass: its status, its error, and what the plugin
/// proposed to heal it.
struct Failed {
    status: StepStatus,
    error: StepError,
    proposal: Proposal,
}

/// One recovery round after failed run `attempt`: picks the plugin's next
/// strategy (see [`Proposal::pick`]) and runs its actions on the same
/// instance, each under the step timeout and what is left of the batch. The
/// caller adds the backoff wait.
#[allow(clippy::too_many_arguments)]
async fn recover_round<E: Executor>(
    call: &Call<'_>,
    step_timeout: Duration,
    attempt: u32,
    failed: &Failed,
    tried: &mut Vec<String>,
    exec: &mut E,
    opts: &RunOptions<'_>,
    clock: BatchClock,
    report: &mut StepReport,
) -> Round {
    let (error, proposal) = (&failed.error, &failed.proposal);
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
                call.plugin.name(),
                action.verb
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
                        crate::plan::pointer_to_field("input", pointer)
                    )
                })
                .collect();
            record.error = Some(format!("invalid-input: {}", text.join("; ")));
            round.actions.push(record);
            break;
        }
        if opts.cancel.is_cancelled() || clock.expired() {
            record.error = Some("not run: the batch was cancelled or ran out of time".into());
            round.actions.push(record);
            break;
        }
        let budget = clock.call(step_timeout, opts.limits, &opts.cancel);
        let action_call = Call {
            plugin: call.plugin,
            verb: &action.verb,
            acts_on_world: verb.info.acts_on_world,
        };
        let outcome = attempt_once(
            &action_call,
            &action.input.to_string(),
            exec,
            opts,
            &budget,
            report,
        )
        .await;
        record.time_ms = ms(started.elapsed());
        match outcome {
            Ok(_) => record.status = "passed",
            Err(failed) => {
                record.error = Some(format!("{}: {}", failed.error.code, failed.error.message))
            }
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

/// One run of a verb on the session's instance, with what the host saw during
/// it written into the report.
async fn attempt_once<E: Executor>(
    call: &Call<'_>,
    input_text: &str,
    exec: &mut E,
    opts: &RunOptions<'_>,
    budget: &CallBudget,
    report: &mut StepReport,
) -> Result<Output, Failed> {
    let outcome = exec.call(call.plugin, call.verb, input_text, budget).await;
    report.logs.extend(outcome.logs);
    for denial in &outcome.denied {
        report.notes.push(match denial {
            Denial::HostAddress { destination } => format!(
                "the host refused outbound HTTP to {destination} (an address of the host itself): the driver, browser and MCP server addresses of the host are open to no plugin grant"
            ),
            Denial::OutsideScope { destination, grant } => format!(
                "the host refused outbound HTTP to {destination} (outside this instance's own scope there): not in the `{}` plugin's http grant ({grant})",
                call.plugin.name()
            ),
            Denial::NotGranted { destination, grant } => format!(
                "the host refused outbound HTTP to {destination}: not in the `{}` plugin's http grant ({grant})",
                call.plugin.name()
            ),
            _ => format!("the host refused an outbound connection: {denial:?}"),
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
        Ok(Err(failure)) if outcome.time_ran_out => {
            // A host capability stopped for the step's deadline and the plugin
            // failed on it: that is the step's timeout, with the plugin's words.
            let mut failed = failure_error(failure);
            failed.status = StepStatus::TimedOut;
            failed.error.code = FailureCode::Timeout;
            Err(failed)
        }
        Ok(Err(failure)) => Err(failure_error(failure)),
        Err(fault) => {
            if outcome.instance_dropped {
                report.notes.push(format!(
                    "the `{}` instance of this session was dropped ({}); a fresh one is created on next use, so plugin state held in it is gone",
                    call.plugin.name(),
                    fault.code()
                ));
            }
            tracing::info!(
                plugin = call.plugin.name(),
                verb = call.verb,
                code = %fault.code(),
                "{fault}"
            );
            // A call that never started (no instance slot) fired nothing.
            let fired = call.acts_on_world && outcome.instance_dropped;
            Err(fault_error(fault, fired))
        }
    }
}

fn fault_error(fault: Fault, input_may_have_fired: bool) -> Failed {
    let status = match fault {
        Fault::Timeout(_) => StepStatus::TimedOut,
        Fault::Cancelled => StepStatus::Cancelled,
        _ => StepStatus::Failed,
    };
    Failed {
        status,
        error: StepError {
            code: fault.code(),
            message: fault.to_string(),
            input_fired: input_may_have_fired,
            details: None,
        },
        proposal: Proposal::default(),
    }
}

fn failure_error(failure: Failure) -> Failed {
    let details = failure.proposal.merged_into(failure.details);
    Failed {
        status: StepStatus::Failed,
        error: StepError {
            code: failure.code,
            message: failure.message,
            input_fired: failure.input_fired,
            details,
        },
        proposal: failure.proposal,
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
            Content::Image { mime, data } => ContentItem::image(
                mime,
                &data,
                format!("step {}: {}", step.index + 1, step.verb),
            ),
        })
        .collect()
}

//! Plan: parse and validate a whole batch before any step runs.
//!
//! Every problem is collected (not just the first), each naming the step and the
//! field, so a caller can fix a batch in one round trip. Nothing runs unless the
//! plan is clean.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::Catalog;
use crate::Limits;
use crate::vars::{self, Exceeded, InputLimits, LimitError, Target, UnknownPolicy};
use stephost_contract::PluginSpec;

/// What to do after a step fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// End the batch at the first failed or timed-out step.
    Stop,
    /// Run the remaining steps anyway.
    Continue,
}

/// When to run a failed step again.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Runs in all, at least 1.
    pub attempts: u32,
    /// Failure codes that trigger a re-run.
    pub on: Vec<String>,
    /// Whether `on` was written by the caller. Only then may an acting verb whose
    /// input may have fired be re-run.
    pub explicit: bool,
    /// Whether to run recovery between runs: the strategies the plugin proposes in
    /// its failure (see [`crate::recover`]), on top of the backoff wait.
    pub recover: bool,
}

impl RetryPolicy {
    /// Codes retried when a step asks for retries without naming any: failures
    /// where the world changed under the step, which are safe to try again.
    pub const DEFAULT_ON: &'static [&'static str] = &["world-moved"];

    /// A single run.
    pub fn once() -> Self {
        Self {
            attempts: 1,
            on: Vec::new(),
            explicit: false,
            recover: false,
        }
    }
}

/// One validated step.
pub struct PlannedStep {
    /// 0-based position.
    pub(crate) index: usize,
    /// Caller's label.
    pub(crate) label: Option<String>,
    /// The plugin.
    pub(crate) plugin: Arc<PluginSpec>,
    /// The verb.
    pub(crate) verb: String,
    /// Input with references still unresolved.
    pub(crate) input: Value,
    /// Whether `input` holds references to resolve at run time.
    pub(crate) has_refs: bool,
    /// Step timeout.
    pub(crate) timeout: Duration,
    /// Name to store the result under.
    pub(crate) assign_to: Option<String>,
    /// Retry policy.
    pub(crate) retry: RetryPolicy,
    /// Whether the verb acts on the outside world.
    pub(crate) acts_on_world: bool,
    /// Whether the plugin checks this verb's input before the batch acts.
    pub(crate) checked: bool,
    /// Runs even after an earlier step failed and stopped the batch (a
    /// `finally`: a screenshot of the failure, a cleanup). Not after a
    /// cancellation or once the batch budget is spent.
    pub(crate) always: bool,
}

impl PlannedStep {
    /// 0-based position in the batch.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The caller's label, if any.
    pub fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    /// The plugin the step runs.
    pub fn plugin(&self) -> &Arc<PluginSpec> {
        &self.plugin
    }

    /// The verb.
    pub fn verb(&self) -> &str {
        &self.verb
    }

    /// The input as written, references unresolved.
    pub fn input(&self) -> &Value {
        &self.input
    }

    /// Whether the input holds references resolved when the step runs.
    pub fn has_refs(&self) -> bool {
        self.has_refs
    }

    /// The step's timeout (its own, or the default), within the limits.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The name its result is stored under, if any.
    pub fn assign_to(&self) -> Option<&str> {
        self.assign_to.as_deref()
    }

    /// When it runs again.
    pub fn retry(&self) -> &RetryPolicy {
        &self.retry
    }

    /// Whether the verb acts on the outside world.
    pub fn acts_on_world(&self) -> bool {
        self.acts_on_world
    }

    /// Whether it runs even after a failure stopped the batch.
    pub fn always(&self) -> bool {
        self.always
    }

    /// `label` if set, else `plugin.verb`.
    pub fn display_name(&self) -> String {
        match &self.label {
            Some(label) => label.clone(),
            None => format!("{}.{}", self.plugin.name(), self.verb),
        }
    }
}

/// A batch ready to run: only the planner makes one, so every step in it
/// passed validation and every limit.
pub struct Plan {
    /// Steps in order.
    pub(crate) steps: Vec<PlannedStep>,
    /// Failure policy.
    pub(crate) on_failure: OnFailure,
    /// Batch time budget.
    pub(crate) timeout: Duration,
    /// How unknown `${...}` references are treated.
    pub(crate) policy: UnknownPolicy,
    /// Validate and check, then answer the plan instead of running it.
    pub(crate) dry_run: bool,
}

impl Plan {
    /// Whether the caller asked for the plan only (`dry_run: true`).
    pub fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// The steps, in order.
    pub fn steps(&self) -> &[PlannedStep] {
        &self.steps
    }

    /// What happens after a failed step.
    pub fn on_failure(&self) -> OnFailure {
        self.on_failure
    }

    /// The batch's time budget.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How unknown references are treated.
    pub fn policy(&self) -> UnknownPolicy {
        self.policy
    }
}

/// One thing wrong with a batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    /// 0-based step index, when the problem is in a step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
    /// The step's label, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// JSON path of the offending field, e.g. `steps[2].input.url`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(step) = self.step {
            write!(f, "step {}", step + 1)?;
            if let Some(label) = &self.label {
                write!(f, " ({label:?})")?;
            }
            write!(f, ": ")?;
        }
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// What the planner needs to know besides the request.
pub struct PlanContext<'a> {
    /// Loaded plugins.
    pub catalog: &'a Catalog,
    /// Limits to check against.
    pub limits: &'a Limits,
    /// Names already set in the session.
    pub session_vars: &'a dyn Fn(&str) -> bool,
    /// How unknown references are treated.
    pub policy: UnknownPolicy,
}

const BATCH_FIELDS: &[&str] = &["steps", "on_failure", "timeout_ms", "session_id", "dry_run"];
const STEP_FIELDS: &[&str] = &[
    "plugin",
    "verb",
    "input",
    "label",
    "timeout_ms",
    "assign_to",
    "retry",
    "always",
];
const MAX_LABEL_CHARS: usize = 200;

/// Validates `request` (the generic batch JSON) into a [`Plan`].
pub fn plan(request: &Value, ctx: &PlanContext<'_>) -> Result<Plan, Vec<Problem>> {
    plan_with_var_sizes(request, ctx, &|_| None)
}

/// As [`plan`], knowing the size of each session variable as JSON text in bytes
/// (`SessionState::var_bytes`; `None` when unknown), so that a step whose references to
/// them alone would take its resolved input past `limits.max_input_bytes` is refused before
/// anything runs.
///
/// A separate entry rather than a [`PlanContext`] field, so that callers building the
/// context by hand keep compiling.
pub fn plan_with_var_sizes(
    request: &Value,
    ctx: &PlanContext<'_>,
    var_bytes: &dyn Fn(&str) -> Option<u64>,
) -> Result<Plan, Vec<Problem>> {
    let mut problems = Problems::default();
    let Some(obj) = request.as_object() else {
        problems.top("(batch)", "must be a JSON object with a `steps` array");
        return Err(problems.0);
    };
    for key in obj.keys() {
        if !BATCH_FIELDS.contains(&key.as_str()) {
            problems.top(
                &key_field(key),
                format!(
                    "unknown field (expected one of: {})",
                    BATCH_FIELDS.join(", ")
                ),
            );
        }
    }
    let on_failure = match obj.get("on_failure") {
        None | Some(Value::Null) => OnFailure::Stop,
        Some(Value::String(s)) if s == "stop" => OnFailure::Stop,
        Some(Value::String(s)) if s == "continue" => OnFailure::Continue,
        Some(other) => {
            problems.top(
                "on_failure",
                format!("must be \"stop\" or \"continue\", got {other}"),
            );
            OnFailure::Stop
        }
    };
    let dry_run = match obj.get("dry_run") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            problems.top("dry_run", format!("must be true or false, got {other}"));
            false
        }
    };
    let limits = ctx.limits;
    let timeout = match millis(obj.get("timeout_ms"), limits.max_batch_timeout_ms) {
        Ok(ms) => Duration::from_millis(ms.unwrap_or(limits.batch_timeout_ms)),
        Err(message) => {
            problems.top(
                "timeout_ms",
                message.replace("{max}", "limits.max_batch_timeout_ms"),
            );
            Duration::from_millis(limits.batch_timeout_ms)
        }
    };
    let steps_json = match obj.get("steps") {
        Some(Value::Array(steps)) if steps.is_empty() => {
            problems.top("steps", "must hold at least one step");
            &[][..]
        }
        Some(Value::Array(steps)) if steps.len() > limits.max_steps_per_batch => {
            problems.top(
                "steps",
                format!(
                    "holds {} steps; the limit is {} (limits.max_steps_per_batch)",
                    steps.len(),
                    limits.max_steps_per_batch
                ),
            );
            &[][..]
        }
        Some(Value::Array(steps)) => steps.as_slice(),
        Some(_) => {
            problems.top("steps", "must be an array of steps");
            &[][..]
        }
        None => {
            problems.top("steps", "is required");
            &[][..]
        }
    };
    let mut assigned: BTreeSet<String> = BTreeSet::new();
    let mut steps = Vec::with_capacity(steps_json.len());
    for (index, step) in steps_json.iter().enumerate() {
        if let Some(planned) = plan_step(
            index,
            step,
            steps_json.len(),
            &assigned,
            ctx,
            var_bytes,
            &mut problems,
        ) {
            if let Some(name) = &planned.assign_to {
                assigned.insert(name.clone());
            }
            steps.push(planned);
        }
    }
    if !problems.0.is_empty() {
        return Err(problems.0);
    }
    Ok(Plan {
        steps,
        on_failure,
        timeout,
        policy: ctx.policy,
        dry_run,
    })
}

#[derive(Default)]
struct Problems(Vec<Problem>);

impl Problems {
    fn top(&mut self, field: &str, message: impl Into<String>) {
        self.0.push(Problem {
            step: None,
            label: None,
            field: field.to_owned(),
            message: message.into(),
        });
    }

    fn step(
        &mut self,
        index: usize,
        label: &Option<String>,
        field: &str,
        message: impl Into<String>,
    ) {
        let field = join_field(&format!("steps[{index}]"), field);
        self.0.push(Problem {
            step: Some(index),
            label: label.clone(),
            field,
            message: message.into(),
        });
    }
}

/// `parent` and a field under it: `steps[0].verb`, or `steps[0][""]` for a
/// quoted key from [`key_field`].
pub(crate) fn join_field(parent: &str, field: &str) -> String {
    if field.is_empty() {
        parent.to_owned()
    } else if parent.is_empty() || field.starts_with('[') {
        format!("{parent}{field}")
    } else {
        format!("{parent}.{field}")
    }
}

/// How a key is named in a problem: as written when it reads as a field name,
/// else quoted (`[""]`, `["a b"]`), in the syntax references accept, so an
/// empty or odd key is still visible and a reported place can be pasted into a
/// reference. The one renderer of keys ([`crate::vars::join_path`] and
/// [`pointer_to_field`] use it too).
pub(crate) fn key_field(key: &str) -> String {
    let mut out = String::new();
    crate::vars::push_key(&mut out, key);
    out
}

/// Reads an optional millisecond count in 1..=max. The `Err` text holds `{max}` for
/// the caller to name its limit.
fn millis(value: Option<&Value>, max: u64) -> Result<Option<u64>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(ms) if (1..=max).contains(&ms) => Ok(Some(ms)),
            Some(ms) => Err(format!("must be between 1 and {max} ({{max}}), got {ms}")),
            None => Err(format!("must be a whole number of milliseconds, got {v}")),
        },
    }
}

fn plan_step(
    index: usize,
    step: &Value,
    total: usize,
    assigned: &BTreeSet<String>,
    ctx: &PlanContext<'_>,
    var_bytes: &dyn Fn(&str) -> Option<u64>,
    problems: &mut Problems,
) -> Option<PlannedStep> {
    let before = problems.0.len();
    let Some(obj) = step.as_object() else {
        problems.step(
            index,
            &None,
            "",
            "must be an object with `plugin` and `verb`",
        );
        return None;
    };
    let label = match obj.get("label") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.chars().count() <= MAX_LABEL_CHARS => Some(s.clone()),
        Some(Value::String(_)) => {
            problems.step(
                index,
                &None,
                "label",
                format!("is longer than {MAX_LABEL_CHARS} characters"),
            );
            None
        }
        Some(other) => {
            problems.step(
                index,
                &None,
                "label",
                format!("must be a string, got {other}"),
            );
            None
        }
    };
    for key in obj.keys() {
        if !STEP_FIELDS.contains(&key.as_str()) {
            problems.step(
                index,
                &label,
                &key_field(key),
                format!(
                    "unknown field (expected one of: {})",
                    STEP_FIELDS.join(", ")
                ),
            );
        }
    }
    let plugin = match obj.get("plugin") {
        Some(Value::String(name)) => match ctx.catalog.get(name) {
            Some(plugin) => Some(plugin.clone()),
            None => {
                let message = match ctx.catalog.unavailable(name) {
                    Some(why) => why.to_owned(),
                    None => {
                        let known: Vec<&str> = ctx.catalog.names().collect();
                        format!("unknown plugin `{name}` (loaded: {})", known.join(", "))
                    }
                };
                problems.step(index, &label, "plugin", message);
                None
            }
        },
        Some(other) => {
            problems.step(
                index,
                &label,
                "plugin",
                format!("must be a string, got {other}"),
            );
            None
        }
        None => {
            problems.step(index, &label, "plugin", "is required");
            None
        }
    };
    let verb = match obj.get("verb") {
        Some(Value::String(verb)) => Some(verb.clone()),
        Some(other) => {
            problems.step(
                index,
                &label,
                "verb",
                format!("must be a string, got {other}"),
            );
            None
        }
        None => {
            problems.step(index, &label, "verb", "is required");
            None
        }
    };
    let empty = Value::Object(Map::new());
    let input = match obj.get("input") {
        None | Some(Value::Null) => &empty,
        Some(v @ Value::Object(_)) => v,
        Some(other) => {
            problems.step(
                index,
                &label,
                "input",
                format!("must be an object, got {other}"),
            );
            &empty
        }
    };
    let limits = ctx.limits;
    let timeout = match millis(obj.get("timeout_ms"), limits.max_step_timeout_ms) {
        Ok(ms) => Duration::from_millis(ms.unwrap_or(limits.step_timeout_ms)),
        Err(message) => {
            problems.step(
                index,
                &label,
                "timeout_ms",
                message.replace("{max}", "limits.max_step_timeout_ms"),
            );
            Duration::ZERO
        }
    };
    let assign_to = match obj.get("assign_to") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) if vars::is_valid_name(name) => Some(name.clone()),
        Some(other) => {
            problems.step(
                index,
                &label,
                "assign_to",
                format!(
                    "must be a name like `cart_count` ([A-Za-z_][A-Za-z0-9_]*, not STEP_N), got {other}"
                ),
            );
            None
        }
    };
    let retry = parse_retry(index, &label, obj.get("retry"), limits, problems);
    let always = match obj.get("always") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            problems.step(
                index,
                &label,
                "always",
                format!("must be true or false, got {other}"),
            );
            false
        }
    };

    // Limits on the input as written. Checked first and without recursion: the walks below
    // recurse, and only an input within `max_input_depth` is safe to give them.
    let input_limits = InputLimits {
        max_bytes: limits.max_input_bytes,
        max_depth: limits.max_input_depth,
    };
    let (written_ok, shallow) = match vars::check_limits(input, input_limits) {
        Ok(_) => (true, true),
        Err(e) => {
            problems.step(
                index,
                &label,
                &e.field_path("input"),
                written_limit_problem(&e),
            );
            (false, !matches!(e.exceeded, Exceeded::Depth { .. }))
        }
    };

    // References: each must point at an earlier step or a known name.
    let mut has_refs = false;
    // What the session variables referred to add to the resolved input, at least (parts of a
    // variable count nothing), and the first reference that takes it past the limit.
    let mut session_bytes: u64 = 0;
    let mut session_over: Option<SessionOver> = None;
    let mut walk = |field: &str, text: &str| {
        let template = match vars::parse_template(text, ctx.policy) {
            Ok(t) => t,
            Err(e) => {
                problems.step(index, &label, field, e.to_string());
                return;
            }
        };
        for part in &template.parts {
            let vars::Part::Ref(r) = part else { continue };
            match &r.target {
                Target::Step(n) => {
                    has_refs = true;
                    let target = vars::step_index(*n);
                    if target >= total {
                        problems.step(
                            index,
                            &label,
                            field,
                            format!(
                                "`{}` refers to step {} but the batch has {total} steps",
                                r.source,
                                target + 1
                            ),
                        );
                    } else if target >= index {
                        problems.step(
                            index,
                            &label,
                            field,
                            format!(
                                "`{}` refers to step {}, which cannot have run yet (this is step {}; a step may only use results of earlier steps)",
                                r.source,
                                target + 1,
                                index + 1
                            ),
                        );
                    }
                }
                Target::Name(name) => {
                    if assigned.contains(name) {
                        // The value is this batch's, of a size unknown until it runs.
                        has_refs = true;
                    } else if (ctx.session_vars)(name) {
                        has_refs = true;
                        let size = var_bytes(name).filter(|_| r.path.is_empty());
                        if let Some(size) = size {
                            // Spliced into text, a string loses its quotes; anything else
                            // only grows when escaped.
                            let adds = if template.whole_ref().is_some() {
                                size
                            } else {
                                size.saturating_sub(2)
                            };
                            session_bytes = session_bytes.saturating_add(adds);
                            if session_bytes > input_limits.max_bytes && session_over.is_none() {
                                session_over = Some(SessionOver {
                                    field: field.to_owned(),
                                    reference: r.source.clone(),
                                    size,
                                    total: session_bytes,
                                });
                            }
                        }
                    } else if ctx.policy == UnknownPolicy::Reject {
                        problems.step(
                            index,
                            &label,
                            field,
                            format!(
                                "`{}`: no earlier step assigns `{name}` (assign_to) and the session has no such variable",
                                r.source
                            ),
                        );
                    }
                }
            }
        }
        // Under Reject an escape `\${` changes the text, so the input must go
        // through the resolver even without references.
        if ctx.policy == UnknownPolicy::Reject && text.contains("\\${") {
            has_refs = true;
        }
    };
    if shallow {
        walk_strings(input, &mut String::from("input"), &mut walk);
    }
    if let (true, Some(over)) = (written_ok, session_over) {
        problems.step(
            index,
            &label,
            &over.field,
            format!(
                "`{}` ({} bytes) brings the session variables this input substitutes to at least {} bytes, \
                 past limits.max_input_bytes = {}; refer to a part of the variable (a path such as `${{name.field}}`) or store less in it",
                over.reference, over.size, over.total, input_limits.max_bytes
            ),
        );
    }

    let (plugin, verb) = (plugin?, verb?);
    let Some(spec) = plugin.verb(&verb) else {
        let known: Vec<&str> = plugin.verb_names().collect();
        let hint = closest(&verb, &known)
            .map(|c| format!("; did you mean `{c}`?"))
            .unwrap_or_default();
        problems.step(
            index,
            &label,
            "verb",
            format!(
                "plugin `{}` has no verb `{verb}` (it has: {}){hint}",
                plugin.name(),
                known.join(", ")
            ),
        );
        return None;
    };
    // Schema checks recurse.
    if !shallow {
        return None;
    }
    // Schema check now; fields that hold a reference are checked again once
    // resolved, so their type errors are not reported here.
    let ref_pointers = if has_refs {
        ref_pointers(input)
    } else {
        Vec::new()
    };
    for (pointer, message) in spec.validate(input) {
        if ref_pointers.iter().any(|p| p == &pointer) {
            continue;
        }
        problems.step(index, &label, &pointer_to_field("input", &pointer), message);
    }
    if problems.0.len() > before {
        return None;
    }
    Some(PlannedStep {
        index,
        label,
        acts_on_world: spec.info.acts_on_world,
        checked: spec.info.checked,
        plugin,
        verb,
        input: input.clone(),
        has_refs,
        timeout,
        assign_to,
        retry,
        always,
    })
}

/// The first session-variable reference that takes a step's resolved input past
/// `limits.max_input_bytes`.
struct SessionOver {
    /// Field of the string holding it, e.g. `input.value`.
    field: String,
    /// The reference as written.
    reference: String,
    /// The variable's size.
    size: u64,
    /// What the variables referred to so far add up to, at least.
    total: u64,
}

/// The message for an input that passes a limit as written.
fn written_limit_problem(e: &LimitError) -> String {
    match e.exceeded {
        Exceeded::Bytes { max, at_least } => format!(
            "is at least {at_least} bytes as JSON text, past limits.max_input_bytes = {max}"
        ),
        Exceeded::Depth { max } => format!(
            "nests arrays and objects more than {max} levels deep, past limits.max_input_depth = {max}"
        ),
    }
}

fn parse_retry(
    index: usize,
    label: &Option<String>,
    value: Option<&Value>,
    limits: &Limits,
    problems: &mut Problems,
) -> RetryPolicy {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return RetryPolicy::once();
    };
    let Some(obj) = value.as_object() else {
        problems.step(
            index,
            label,
            "retry",
            "must be an object {attempts, on, recover}",
        );
        return RetryPolicy::once();
    };
    for key in obj.keys() {
        if !matches!(key.as_str(), "attempts" | "on" | "recover") {
            problems.step(
                index,
                label,
                &format!("retry.{key}"),
                "unknown field (expected attempts, on, recover)",
            );
        }
    }
    let recover = match obj.get("recover") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            problems.step(
                index,
                label,
                "retry.recover",
                format!("must be true or false, got {other}"),
            );
            false
        }
    };
    let attempts = match obj.get("attempts").map(Value::as_u64) {
        None => 1,
        Some(Some(n)) if n >= 1 && n <= u64::from(limits.max_attempts) => n as u32,
        Some(_) => {
            problems.step(
                index,
                label,
                "retry.attempts",
                format!(
                    "must be a whole number between 1 and {} (limits.max_attempts), got {}",
                    limits.max_attempts,
                    obj.get("attempts").unwrap_or(&Value::Null)
                ),
            );
            1
        }
    };
    let (on, explicit) = match obj.get("on") {
        None | Some(Value::Null) => (
            RetryPolicy::DEFAULT_ON
                .iter()
                .map(|s| s.to_string())
                .collect(),
            false,
        ),
        Some(Value::Array(codes)) => {
            let mut out = Vec::new();
            for (i, code) in codes.iter().enumerate() {
                match code.as_str() {
                    Some(c) if !c.is_empty() => out.push(c.to_owned()),
                    _ => problems.step(
                        index,
                        label,
                        &format!("retry.on[{i}]"),
                        "must be a failure code string such as \"world-moved\"",
                    ),
                }
            }
            (out, true)
        }
        Some(_) => {
            problems.step(
                index,
                label,
                "retry.on",
                "must be an array of failure codes",
            );
            (Vec::new(), true)
        }
    };
    RetryPolicy {
        attempts,
        on,
        explicit,
        recover,
    }
}

/// Calls `f(field_path, text)` for every string in `value`.
fn walk_strings(value: &Value, path: &mut String, f: &mut dyn FnMut(&str, &str)) {
    match value {
        Value::String(s) if s.contains("${") => f(path, s),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk_strings(item, path, f);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = path.len();
                path.push('.');
                path.push_str(key);
                walk_strings(item, path, f);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// JSON pointers of strings that hold `${`.
fn ref_pointers(value: &Value) -> Vec<String> {
    fn go(value: &Value, pointer: &mut String, out: &mut Vec<String>) {
        match value {
            Value::String(s) if s.contains("${") => out.push(pointer.clone()),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let len = pointer.len();
                    pointer.push_str(&format!("/{i}"));
                    go(item, pointer, out);
                    pointer.truncate(len);
                }
            }
            Value::Object(map) => {
                for (key, item) in map {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    go(item, pointer, out);
                    pointer.truncate(len);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    go(value, &mut String::new(), &mut out);
    out
}

/// `/items/0/name` under `input` becomes `input.items[0].name`.
pub(crate) fn pointer_to_field(root: &str, pointer: &str) -> String {
    let mut field = root.to_owned();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            field.push_str(&format!("[{segment}]"));
        } else {
            crate::vars::push_key(&mut field, &segment);
        }
    }
    field
}

/// The known name closest to `name` by edit distance, if reasonably close.
pub(crate) fn closest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    // Only a name within a third of a known one's length can be close (see
    // the filter below); the distance is quadratic, and a name is what the
    // caller sent, up to megabytes.
    let longest = known.iter().map(|k| k.len()).max().unwrap_or(0);
    if name.len() > longest + longest / 3 + 2 {
        return None;
    }
    let name = name.to_lowercase();
    known
        .iter()
        .map(|k| (edit_distance(&name, &k.to_lowercase()), *k))
        .filter(|(d, k)| *d <= (k.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_paths_read_like_json() {
        assert_eq!(pointer_to_field("input", ""), "input");
        assert_eq!(
            pointer_to_field("input", "/items/0/name"),
            "input.items[0].name"
        );
        assert_eq!(pointer_to_field("input", "/a~1b"), "input[\"a/b\"]");
        assert_eq!(pointer_to_field("input", "/a b/0"), "input[\"a b\"][0]");
    }

    #[test]
    fn closest_suggests_near_names_only() {
        assert_eq!(closest("ecoh", &["echo", "sleep"]), Some("echo"));
        assert_eq!(closest("navigate", &["echo", "sleep"]), None);
    }

    /// The limits the planner checks against, and the test catalog.
    struct TestHost {
        catalog: Catalog,
        limits: Limits,
    }

    async fn testkit_host(edit: impl FnOnce(&mut Limits)) -> TestHost {
        let mut limits = Limits::default();
        edit(&mut limits);
        TestHost {
            catalog: crate::testing::catalog(),
            limits,
        }
    }

    fn plan_with(
        host: &TestHost,
        request: &Value,
        session: &[(&str, u64)],
    ) -> Result<Plan, Vec<Problem>> {
        let ctx = PlanContext {
            catalog: &host.catalog,
            limits: &host.limits,
            session_vars: &|name| session.iter().any(|(n, _)| *n == name),
            policy: UnknownPolicy::Reject,
        };
        let sizes = |name: &str| session.iter().find(|(n, _)| *n == name).map(|(_, b)| *b);
        plan_with_var_sizes(request, &ctx, &sizes)
    }

    /// Built by hand: `json!` would copy `value` through `to_value`, which recurses.
    fn echo(value: Value) -> Value {
        let object = |entries: Vec<(&str, Value)>| {
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect(),
            )
        };
        object(vec![
            ("plugin", Value::from("testkit")),
            ("verb", Value::from("echo")),
            ("input", object(vec![("value", value)])),
        ])
    }

    fn batch(steps: Vec<Value>) -> Value {
        Value::Object(
            [("steps".to_owned(), Value::Array(steps))]
                .into_iter()
                .collect(),
        )
    }

    fn problems(result: Result<Plan, Vec<Problem>>) -> Vec<String> {
        match result {
            Ok(_) => panic!("the batch should be refused"),
            Err(problems) => problems.iter().map(ToString::to_string).collect(),
        }
    }

    /// Takes apart a value nested far deeper than serde_json's recursive drop survives.
    fn drop_nested(mut v: Value) {
        loop {
            v = match v {
                Value::Array(mut items) => items.pop().unwrap_or(Value::Null),
                Value::Object(mut map) => match map.keys().next().cloned() {
                    Some(k) => map.remove(&k).unwrap_or(Value::Null),
                    None => break,
                },
                _ => break,
            };
        }
    }

    #[tokio::test]
    async fn input_limits_hold_for_the_input_as_written_and_for_session_variables() {
        let host = testkit_host(|l| {
            l.max_input_bytes = 1_000;
            l.max_input_depth = 8;
        })
        .await;

        let big = serde_json::json!({"steps": [echo(Value::String("x".repeat(2_000)))]});
        assert_eq!(
            problems(plan_with(&host, &big, &[])),
            [
                "step 1: steps[0].input: is at least 2012 bytes as JSON text, past limits.max_input_bytes = 1000"
            ]
        );

        let mut deep = serde_json::json!(1);
        for _ in 0..8 {
            deep = Value::Array(vec![deep]);
        }
        let request = batch(vec![echo(serde_json::json!({"ok": 1})), echo(deep)]);
        assert_eq!(
            problems(plan_with(&host, &request, &[])),
            [
                "step 2: steps[1].input.value[0][0][0][0][0][0][0]: nests arrays and objects more than 8 levels deep, past limits.max_input_depth = 8"
            ]
        );

        // Whole variables count their size, spliced ones without quotes, paths nothing:
        // what they add is a lower bound of the resolved size.
        let session = [("big", 400), ("small", 10)];
        let request = serde_json::json!({"steps": [echo(serde_json::json!(
            ["${big}", "${big.part}", "${small}", "x ${big}", "${big}"]
        ))]});
        assert_eq!(
            problems(plan_with(&host, &request, &session)),
            [
                "step 1: steps[0].input.value[4]: `${big}` (400 bytes) brings the session variables this input substitutes to at least 1208 bytes, past limits.max_input_bytes = 1000; refer to a part of the variable (a path such as `${name.field}`) or store less in it"
            ]
        );
        let fits = serde_json::json!({"steps": [echo(serde_json::json!(["${big}", "${big}", "${big.part}"]))]});
        assert!(plan_with(&host, &fits, &session).is_ok());
        // A name an earlier step assigns is that step's value, of a size not known yet.
        let reassigned = serde_json::json!({"steps": [
            {"plugin": "testkit", "verb": "echo", "input": {"value": 1}, "assign_to": "big"},
            echo(serde_json::json!(["${big}", "${big}", "${big}"])),
        ]});
        assert!(plan_with(&host, &reassigned, &session).is_ok());
    }

    #[tokio::test]
    async fn a_hostile_depth_is_refused_without_recursing() {
        let host = testkit_host(|_| {}).await;
        let mut deep = Value::from("${STEP_1}");
        for i in 0..200_000 {
            deep = if i % 2 == 0 {
                Value::Array(vec![deep])
            } else {
                Value::Object([("k".to_owned(), deep)].into_iter().collect())
            };
        }
        let request = batch(vec![echo(Value::from(1)), echo(deep)]);
        let found = problems(plan_with(&host, &request, &[]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("more than 64 levels deep, past limits.max_input_depth = 64"),
            "{found:?}"
        );
        drop_nested(request);
    }
}

//! `execute_batch`, `execute_step` and `resume_batch`: Robot Framework keyword
//! batches in the rf-mcp tool shape, mapped onto the generic batch of `rf`
//! `run_keyword` steps.
//!
//! Recovery: `on_failure: "recover"` (the default) and `"retry"` both become the
//! engine's retry policy (`max_recovery_attempts + 1` runs) with its exponential
//! backoff between runs. `recover` also turns on the engine's recovery rounds
//! (`retry.recover`, see [`crate::recover`]): tier 1 first (wait and
//! retry, or a tier-1 strategy), then tier-2 strategies the rf plugin proposes
//! from the session's libraries (keywords such as `Reload Page`, or remote
//! keywords tagged `recovery`), run as keywords; each round lands in
//! `recovery_log`. `recover` re-runs only RF `failed` failures, because
//! `not-found`, `invalid-input` and `assertion` (a keyword that read only its
//! arguments and the session) cannot heal by waiting and a `timeout` would just
//! burn the budget again; `retry` also re-runs timeouts. `skip` is no failure.
//!
//! A failed or timed-out `execute_batch` is remembered (session, the steps from
//! the failure point on, the failure policy) so `resume_batch` can run them again
//! after optional fix steps. The memory is per catalog, so per tenant.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::{Dialect, arg_problem, session_arg, text};
use crate::plan::{join_field, key_field};
use crate::{BatchStatus, ContentItem, Problem, Report, StepStatus, UnknownPolicy};
use crate::{Catalog, Limits};

/// Batches kept for `resume_batch`; the oldest go first beyond this.
const MAX_REMEMBERED: usize = 1000;

/// Bytes of JSON the resume memory holds per tenant at most; the oldest
/// batches go first beyond this.
const MAX_REMEMBERED_BYTES: usize = 64 << 20;

/// Bytes of earlier steps' return values one remembered batch keeps at most;
/// later values beyond this are dropped (a reference to one refuses the resume).
const MAX_KEPT_VALUES_BYTES: usize = 1 << 20;

/// A failed batch that `resume_batch` can pick up.
#[derive(Debug, Clone)]
struct Resumable {
    /// Session the batch ran in.
    session_id: String,
    /// The steps before the failed one as the reply showed them (rf-mcp shape,
    /// numbered as the whole batch): a resume reports them again, and their
    /// return values stand in for them so `${STEP_N}` keeps its numbering.
    done: Vec<Value>,
    /// Dialect-shape steps from the failed step on, their `${STEP_N}` numbered
    /// as in the whole batch.
    remaining: Vec<Value>,
    /// About what the entry holds, in bytes (its JSON), for the store's budget.
    bytes: usize,
    /// `on_failure` of the original call.
    on_failure: String,
    /// `max_recovery_attempts` of the original call.
    max_recovery_attempts: u64,
}

/// Bounded memory of resumable batches, shared by `execute_batch` and
/// `resume_batch`.
#[derive(Debug, Default)]
pub struct ResumeStore {
    by_id: BTreeMap<String, Resumable>,
    order: VecDeque<String>,
    /// Sum of the remembered entries' `bytes`.
    bytes: usize,
    /// Batches a `resume_batch` call has claimed and is running, with when it
    /// claimed them. Why a claim and not a read: two concurrent calls with one
    /// batch id must not both run the remaining steps (a double click).
    claimed: BTreeMap<String, Claim>,
}

/// A resume in flight.
#[derive(Debug)]
struct Claim {
    entry: Resumable,
    at: Instant,
    /// The call holding it (see [`call_key`]).
    owner: usize,
}

/// Identifies one tool call between its `to_batch` and its `render_call`: the
/// address of its argument map, which the server passes to both and which
/// stays put while the call lives. Why not a token: the dialect interface
/// carries nothing else from one to the other, and only a call that holds the
/// claim may end it (a call refused because another holds it must not).
fn call_key(args: &Map<String, Value>) -> usize {
    std::ptr::from_ref(args) as usize
}

/// How long a claim holds when its call never reports back (its future was
/// dropped with its connection): past the longest run a resume may take.
const CLAIM_TTL: Duration = Duration::from_secs(600 + 60);

impl ResumeStore {
    /// Claims `id` for one resume: the entry leaves the resumable set until
    /// [`ResumeStore::release`] puts it back or the call's result consumes it.
    fn claim(&mut self, id: &str, owner: usize) -> Result<Resumable, ClaimError> {
        if let Some(claim) = self.claimed.get(id) {
            if claim.at.elapsed() < CLAIM_TTL {
                return Err(ClaimError::InFlight);
            }
            if let Some(stale) = self.claimed.remove(id) {
                self.insert(id.to_owned(), stale.entry);
            }
        }
        let entry = self.take(id).ok_or(ClaimError::Unknown)?;
        self.claimed.insert(
            id.to_owned(),
            Claim {
                entry: entry.clone(),
                at: Instant::now(),
                owner,
            },
        );
        while self.claimed.len() > MAX_REMEMBERED {
            self.claimed.pop_first();
        }
        Ok(entry)
    }

    /// Ends `owner`'s claim on `id`, if it holds one; `keep` puts the batch
    /// back as resumable (the call was invalid and ran nothing, so the id can
    /// be used again).
    fn release(&mut self, id: &str, owner: usize, keep: bool) -> Option<Resumable> {
        if self.claimed.get(id)?.owner != owner {
            return None;
        }
        let claim = self.claimed.remove(id)?;
        if keep {
            self.insert(id.to_owned(), claim.entry.clone());
        }
        Some(claim.entry)
    }

    fn insert(&mut self, id: String, entry: Resumable) {
        self.bytes += entry.bytes;
        match self.by_id.insert(id.clone(), entry) {
            Some(old) => self.bytes -= old.bytes,
            None => self.order.push_back(id),
        }
        while self.order.len() > MAX_REMEMBERED || self.bytes > MAX_REMEMBERED_BYTES {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(gone) = self.by_id.remove(&old) {
                self.bytes -= gone.bytes;
            }
        }
    }

    fn take(&mut self, id: &str) -> Option<Resumable> {
        let entry = self.by_id.remove(id)?;
        self.bytes -= entry.bytes;
        self.order.retain(|x| x != id);
        Some(entry)
    }

    fn get(&self, id: &str) -> Option<&Resumable> {
        self.by_id.get(id)
    }
}

/// Why a batch id cannot be claimed.
#[derive(Debug, PartialEq, Eq)]
enum ClaimError {
    /// No failed batch of that id is waiting (never, finished, or resumed).
    Unknown,
    /// Another `resume_batch` call is running it now.
    InFlight,
}

/// Shared handle to the resume memory.
pub type Store = Arc<Mutex<ResumeStore>>;

/// The three RF dialects, sharing one resume memory.
pub fn dialects() -> Vec<Arc<dyn Dialect>> {
    let store: Store = Arc::default();
    vec![
        Arc::new(ExecuteBatch {
            store: store.clone(),
        }),
        Arc::new(ExecuteStep),
        Arc::new(ResumeBatch { store }),
    ]
}

/// The `execute_batch` tool.
pub struct ExecuteBatch {
    store: Store,
}

/// The `execute_step` tool: one keyword.
pub struct ExecuteStep;

/// The `resume_batch` tool.
pub struct ResumeBatch {
    store: Store,
}

fn rf_loaded(catalog: &Catalog) -> bool {
    catalog.names().any(|n| n == "rf")
}

/// Parses an RF time string (`10s`, `1 min 30 s`, `500ms`, `1.5`, `2 minutes`)
/// to milliseconds. A bare number is seconds, as in RF.
pub fn parse_rf_duration(text: &str) -> Option<u64> {
    let compact: String = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_lowercase();
    if compact.is_empty() {
        return None;
    }
    if let Ok(secs) = compact.parse::<f64>() {
        return to_ms(secs, 1000.0);
    }
    let mut total = 0.0;
    let mut rest = compact.as_str();
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_end] {
            "ms" | "millis" | "millisecond" | "milliseconds" => 1.0,
            "s" | "sec" | "secs" | "second" | "seconds" => 1000.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60_000.0,
            "h" | "hour" | "hours" => 3_600_000.0,
            "d" | "day" | "days" => 86_400_000.0,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += number * factor;
    }
    to_ms(total, 1.0)
}

fn to_ms(value: f64, factor: f64) -> Option<u64> {
    let ms = (value * factor).round();
    // Why: a zero or negative timeout can never let a keyword run.
    (ms.is_finite() && ms >= 1.0 && ms <= u64::MAX as f64).then_some(ms as u64)
}

/// Problem in step `index`, named as rf-mcp names steps (from 0).
fn step_problem(index: usize, label: Option<&str>, field: &str, message: &str) -> Problem {
    Problem {
        step: Some(index),
        label: label.map(str::to_owned),
        field: join_field(&format!("steps[{index}]"), field),
        message: format!("step {index}: {message}"),
    }
}

/// Maps one dialect step to a generic `rf.run_keyword` step.
fn map_step(
    index: usize,
    step: &Value,
    retry: Option<&Value>,
    problems: &mut Vec<Problem>,
) -> Option<Value> {
    let Some(obj) = step.as_object() else {
        problems.push(step_problem(
            index,
            None,
            "",
            "must be an object {keyword, arguments?, label?, timeout?, assign_to?}",
        ));
        return None;
    };
    let label = obj.get("label").and_then(Value::as_str);
    let before = problems.len();
    for key in obj.keys() {
        if !matches!(
            key.as_str(),
            "keyword" | "arguments" | "args" | "label" | "timeout" | "assign_to"
        ) {
            problems.push(step_problem(
                index,
                label,
                &key_field(key),
                &format!(
                    "unknown field `{key}`; a step takes keyword, arguments, label, timeout, assign_to"
                ),
            ));
        }
    }
    let keyword = match obj.get("keyword") {
        Some(Value::String(k)) if !k.trim().is_empty() => Some(k.clone()),
        Some(_) => {
            problems.push(step_problem(
                index,
                label,
                "keyword",
                "keyword must be a non-empty string (an RF keyword name such as \"Log\")",
            ));
            None
        }
        None => {
            problems.push(step_problem(
                index,
                label,
                "keyword",
                "missing `keyword`: add the RF keyword name, e.g. {\"keyword\": \"Log\", \"arguments\": [\"hello\"]}",
            ));
            None
        }
    };
    let args = match (obj.get("arguments"), obj.get("args")) {
        (Some(a), Some(b)) if a != b => {
            problems.push(step_problem(
                index,
                label,
                "arguments",
                "both `arguments` and its legacy alias `args` are given with different values; keep only `arguments`",
            ));
            None
        }
        (Some(a), _) | (None, Some(a)) => match a {
            Value::Array(items) => Some(Value::Array(items.clone())),
            _ => {
                problems.push(step_problem(
                    index,
                    label,
                    "arguments",
                    "arguments must be a list of strings",
                ));
                None
            }
        },
        (None, None) => Some(Value::Array(Vec::new())),
    };
    let timeout_ms = match obj.get("timeout") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => match parse_rf_duration(t) {
            Some(ms) => Some(ms),
            None => {
                problems.push(step_problem(
                    index,
                    label,
                    "timeout",
                    &format!(
                        "`{t}` is not an RF time such as \"10s\", \"1 min 30 s\" or \"500ms\""
                    ),
                ));
                None
            }
        },
        Some(Value::Number(n)) => match n.as_f64().and_then(|s| to_ms(s, 1000.0)) {
            Some(ms) => Some(ms),
            None => {
                problems.push(step_problem(index, label, "timeout", "must be positive"));
                None
            }
        },
        Some(_) => {
            problems.push(step_problem(
                index,
                label,
                "timeout",
                "must be an RF time string such as \"10s\"",
            ));
            None
        }
    };
    let assign_to = match obj.get("assign_to") {
        None | Some(Value::Null) => None,
        Some(Value::String(a)) => Some(a.clone()),
        Some(_) => {
            problems.push(step_problem(
                index,
                label,
                "assign_to",
                "must be a variable name string",
            ));
            None
        }
    };
    if problems.len() > before {
        return None;
    }
    let mut input = Map::new();
    input.insert("keyword".into(), Value::String(keyword?));
    input.insert("args".into(), args?);
    if let Some(a) = &assign_to {
        input.insert("assign".into(), Value::String(a.clone()));
    }
    // Why `assign_to` goes to RF only (as `assign`) and not to the generic step: a
    // host-stored name makes the host substitute `${name}` with a JSON copy of the
    // value, so keywords that change a list or dictionary in place (`Append To List
    // ${name} x`) would change the copy and `${name}` would keep its old value. RF
    // keeps the variable in the session's plugin instance and resolves `${name}` to
    // the very object, as Robot Framework does.
    let mut out = Map::new();
    out.insert("plugin".into(), json!("rf"));
    out.insert("verb".into(), json!("run_keyword"));
    out.insert("input".into(), Value::Object(input));
    if let Some(ms) = timeout_ms {
        out.insert("timeout_ms".into(), json!(ms));
    }
    if let Some(l) = label {
        out.insert("label".into(), json!(l));
    }
    if let Some(r) = retry {
        out.insert("retry".into(), r.clone());
    }
    Some(Value::Object(out))
}

/// Reads an optional integer argument within `[min, max]`.
fn int_arg(
    args: &Map<String, Value>,
    name: &str,
    min: u64,
    max: u64,
    default: u64,
    problems: &mut Vec<Problem>,
) -> u64 {
    match args.get(name) {
        None | Some(Value::Null) => default,
        Some(v) => {
            match v.as_u64() {
                Some(n) if (min..=max).contains(&n) => n,
                _ => {
                    problems.push(arg_problem(
                    name,
                    format!("{name} must be an integer from {min} to {max} (default {default}), got {v}"),
                ));
                    default
                }
            }
        }
    }
}

/// The generic retry policy for an `on_failure` mode.
fn retry_for(on_failure: &str, max_recovery_attempts: u64) -> Option<Value> {
    let attempts = max_recovery_attempts + 1;
    match on_failure {
        "retry" => Some(json!({"attempts": attempts, "on": ["failed", "timeout"]})),
        // Why only `failed`: see the module docs.
        "recover" => Some(json!({"attempts": attempts, "on": ["failed"], "recover": true})),
        _ => None,
    }
}

/// Builds the generic batch from dialect-shape steps.
fn build_batch(
    steps: &[Value],
    on_failure: &str,
    max_recovery_attempts: u64,
    timeout_ms: u64,
    session_id: Option<&str>,
    mut problems: Vec<Problem>,
) -> Result<Value, Vec<Problem>> {
    let retry = retry_for(on_failure, max_recovery_attempts);
    let mapped: Vec<Value> = steps
        .iter()
        .enumerate()
        .filter_map(|(i, s)| map_step(i, s, retry.as_ref(), &mut problems))
        .collect();
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut mapped = mapped;
    if steps.iter().any(mentions_test_keyword) {
        // Why a step of its own: what the test keywords set lives in the plugin's
        // session; `always` reads it also after a failure or a skip.
        mapped.push(json!({"plugin": "rf", "verb": TEST_VERB, "input": {}, "always": true}));
    }
    let mut batch = json!({"steps": mapped, "on_failure": "stop", "timeout_ms": timeout_ms});
    if let (Some(s), Some(obj)) = (session_id, batch.as_object_mut()) {
        obj.insert("session_id".into(), json!(s));
    }
    Ok(batch)
}

fn on_failure_arg(args: &Map<String, Value>, problems: &mut Vec<Problem>) -> String {
    match args.get("on_failure") {
        None | Some(Value::Null) => "recover".into(),
        Some(Value::String(s)) if matches!(s.as_str(), "stop" | "retry" | "recover") => s.clone(),
        Some(v) => {
            problems.push(arg_problem(
                "on_failure",
                format!("on_failure must be \"stop\", \"retry\" or \"recover\", got {v}"),
            ));
            "recover".into()
        }
    }
}

fn steps_arg<'a>(
    args: &'a Map<String, Value>,
    field: &str,
    required: bool,
    problems: &mut Vec<Problem>,
) -> &'a [Value] {
    match args.get(field) {
        Some(Value::Array(a)) if !a.is_empty() || !required => a,
        None | Some(Value::Null) if !required => &[],
        _ => {
            problems.push(arg_problem(
                field,
                format!("{field} must be a non-empty list of steps {{keyword, arguments?, label?, timeout?, assign_to?}}"),
            ));
            &[]
        }
    }
}

fn step_schema() -> Value {
    // The seed's fields and types; descriptions cut to what the names do not
    // say (the tool description explains chaining once).
    json!({
        "type": "object",
        "properties": {
            "keyword": {"type": "string", "description": "RF keyword name."},
            "arguments": {"type": "array", "description": "Positional arguments; may hold ${STEP_N} and ${name}."},
            "args": {"type": "array", "description": "Legacy alias of arguments."},
            "label": {"type": "string"},
            "timeout": {"type": "string", "description": "RF time, e.g. \"10s\"."},
            "assign_to": {"type": "string", "description": "Store the return value as ${name}."}
        },
        "required": ["keyword"]
    })
}

fn result_schema() -> Value {
    // Why so little: MCP clients validate every reply against this schema, and
    // the Python SDK 1.x checks the schema itself against the JSON Schema
    // metaschema on every call, at a cost that grows with each property: with
    // `status` and `steps` described the check took 0.48 ms a call, with
    // `required` alone 0.17 ms (jsonschema 4.26; BENCHMARKS.md, Robot
    // Framework section). The fields are described in the tool description.
    json!({
        "type": "object",
        "required": ["status", "summary", "steps"]
    })
}

/// The rf verb that reports what the test keywords set (`Set Tags`, ...).
const TEST_VERB: &str = "test";

/// RF's normalized names of the keywords whose effect shows in the reply's `test`.
const TEST_KEYWORDS: &[&str] = &[
    "settags",
    "removetags",
    "settestmessage",
    "settestdocumentation",
    "setsuitedocumentation",
    "settestmetadata",
    "settaskmetadata",
    "setsuitemetadata",
];

/// Whether a step may run one of [`TEST_KEYWORDS`], directly or as an argument
/// of a run-keyword variant (`Run Keyword If    ${x}    Set Tags    t`).
fn mentions_test_keyword(step: &Value) -> bool {
    let is_test_keyword = |text: &str| {
        let norm: String = text
            .chars()
            .filter(|c| !matches!(c, ' ' | '_'))
            .flat_map(char::to_lowercase)
            .collect();
        let bare = norm.strip_prefix("builtin.").unwrap_or(&norm);
        TEST_KEYWORDS.contains(&bare)
    };
    let texts = step
        .get("keyword")
        .into_iter()
        .chain(array(step, "arguments"))
        .chain(array(step, "args"));
    texts.filter_map(Value::as_str).any(is_test_keyword)
}

/// The report without the step [`build_batch`] added to read the test, and that
/// step's value (when it ran and passed). Totals, the status and the notes are
/// the asked-for steps' own.
fn split_test(report: &Report) -> (std::borrow::Cow<'_, Report>, Option<Value>) {
    let Some(pos) = report.steps.iter().position(|s| s.verb == TEST_VERB) else {
        return (std::borrow::Cow::Borrowed(report), None);
    };
    let mut own = report.clone();
    let hidden = own.steps.remove(pos);
    own.steps_total = own.steps_total.saturating_sub(1);
    own.steps_executed = own.steps_executed.saturating_sub(1);
    // The only `always` step of an RF batch is the hidden one.
    own.notes.retain(|n| !n.contains("marked `always`"));
    if own.status == BatchStatus::Failed && own.steps.iter().all(|s| s.status == StepStatus::Passed)
    {
        own.status = BatchStatus::Passed;
    }
    let value = (hidden.status == StepStatus::Passed)
        .then_some(hidden.value)
        .flatten();
    (std::borrow::Cow::Owned(own), value)
}

/// Where the batch was skipped (`Skip`, `Skip If`): the step and the reason, when
/// the first step that did not pass is a skip.
fn skipped_at(report: &Report) -> Option<(usize, &str)> {
    let first = report
        .steps
        .iter()
        .find(|s| s.status != StepStatus::Passed)?;
    let error = first.error.as_ref()?;
    (error.code.as_str() == SKIP_CODE).then_some((first.index, error.message.as_str()))
}

/// The failure code the rf plugin gives `Skip`.
const SKIP_CODE: &str = "skip";

/// Renders a report in the rf-mcp result shape. `steps` are the dialect-shape
/// steps that ran, for the keywords of never-started ones.
fn render_rf(report: &Report, steps: &[Value], resumable: bool, done: &[Value]) -> Value {
    let (report, test) = split_test(report);
    let report = report.as_ref();
    let skipped = skipped_at(report);
    let resumable = resumable && skipped.is_none();
    let mut out_steps = Vec::new();
    let mut recovered = false;
    let mut failure = Value::Null;
    for step in &report.steps {
        // A resume's stand-in for an earlier step: that step as it was reported.
        if let Some(earlier) = done.get(step.index) {
            recovered |= earlier["status"] == "RECOVERED";
            out_steps.push(earlier.clone());
            continue;
        }
        let input = step.input.as_ref();
        // Why the fallback: the report carries the resolved input only when it
        // differs from what was asked; otherwise the step as written is it.
        let asked = steps.get(step.index);
        let keyword = input
            .and_then(|i| i.get("keyword"))
            .or_else(|| asked.and_then(|a| a.get("keyword")))
            .cloned()
            .unwrap_or(Value::Null);
        let args = input
            .and_then(|i| i.get("args"))
            .or_else(|| asked.and_then(|a| a.get("arguments").or_else(|| a.get("args"))))
            .cloned()
            .unwrap_or_else(|| json!([]));
        let status = match step.status {
            StepStatus::Passed if step.attempts > 1 => {
                recovered = true;
                "RECOVERED"
            }
            StepStatus::Passed => "PASS",
            _ if skipped.is_some_and(|(i, _)| i == step.index) => "SKIP",
            _ => "FAIL",
        };
        // Why: every recovery round (or, for plain `retry`, every failed run) is
        // kept, also when the step ends RECOVERED.
        let recovery_log: Vec<Value> = if step.recovery.is_empty() {
            step.notes
                .iter()
                .filter(|n| n.starts_with("attempt "))
                .map(|n| json!({"strategy": "retry", "note": n}))
                .collect()
        } else {
            step.recovery.iter().map(|r| json!(r)).collect()
        };
        // A skip is no error: its reason is the step's `message`, as RF's SKIP
        // status carries it.
        let error = step
            .error
            .as_ref()
            .filter(|_| status != "SKIP")
            .map(|e| format!("{}: {}", e.code, e.message));
        if step.status != StepStatus::Passed && failure.is_null() && status != "SKIP" {
            failure = json!({
                "step_index": step.index,
                "error": error,
                "code": step.error.as_ref().map(|e| e.code.clone()),
                "recovery_log": recovery_log,
            });
        }
        // rf-mcp's step record: `label`, `return_value` and `error` only when
        // there is one, so a long passing batch carries no run of nulls; our
        // `attempts` on a step that failed or needed more than one run.
        let mut s = json!({
            "index": step.index,
            "keyword": keyword,
            "args_resolved": args,
            "status": status,
            "time_ms": micros(step.time_ms),
        });
        if let Some(obj) = s.as_object_mut() {
            if let Some(label) = &step.label {
                obj.insert("label".into(), json!(label));
            }
            if let Some(value) = step.value.as_ref().filter(|v| !v.is_null()) {
                obj.insert("return_value".into(), value.clone());
            }
            if let Some(error) = error {
                obj.insert("error".into(), json!(error));
            }
            if step.attempts > 1 || status == "FAIL" {
                obj.insert("attempts".into(), json!(step.attempts));
            }
            if status == "RECOVERED" {
                obj.insert("recovery_log".into(), Value::Array(recovery_log));
            }
            if let (Some((_, why)), "SKIP") = (skipped, status) {
                obj.insert("message".into(), json!(why));
            }
        }
        out_steps.push(s);
    }
    for (i, step) in steps.iter().enumerate().skip(report.steps.len()) {
        let mut s = json!({
            "index": i,
            "keyword": step.get("keyword"),
            "args_resolved": [],
            "status": "SKIPPED",
            "time_ms": 0,
        });
        if let (Some(obj), Some(label)) = (s.as_object_mut(), step.get("label")) {
            obj.insert("label".into(), label.clone());
        }
        out_steps.push(s);
    }
    let status = match report.status {
        BatchStatus::Passed if recovered => "RECOVERED",
        BatchStatus::Passed => "PASS",
        BatchStatus::TimedOut => "TIMEOUT",
        _ if skipped.is_some() => "SKIPPED",
        _ => "FAIL",
    };
    let steps_total = report.steps_total.max(steps.len());
    // rf-mcp's summary sentences, which clients match on ("2/2 passed"); ours
    // adds how to go on where there is a way.
    let executed = report.steps_executed;
    let summary = match report.status {
        BatchStatus::Invalid | BatchStatus::Rejected => format!(
            "Rejected before anything ran: {}",
            report
                .errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        ),
        BatchStatus::Passed if recovered => format!(
            "{executed}/{steps_total} passed, {} recovered",
            out_steps
                .iter()
                .filter(|s| s["status"] == "RECOVERED")
                .count()
        ),
        BatchStatus::Passed => format!("{executed}/{steps_total} passed"),
        BatchStatus::TimedOut => format!(
            "Timeout after {executed}/{steps_total} steps ({}ms){}",
            report.time_ms.round(),
            if resumable {
                "; resume_batch(batch_id) can continue from the step that did not finish"
            } else {
                ""
            }
        ),
        _ if skipped.is_some() => format!(
            "{executed}/{steps_total} executed, step {} skipped: {}",
            skipped.map_or(0, |(i, _)| i),
            skipped.map_or("", |(_, why)| why)
        ),
        _ => format!(
            "{executed}/{steps_total} executed{}",
            match failure.get("step_index") {
                Some(i) if resumable =>
                    format!(", step {i} failed; resume_batch(batch_id) can continue from it"),
                Some(i) => format!(", step {i} failed"),
                None => String::new(),
            }
        ),
    };
    // What rf-mcp adds so a reply stays readable when its steps are long:
    // counts, and the first failed step (0-based) with its keyword and error.
    let passed = out_steps.iter().filter(|s| s["status"] == "PASS").count();
    let failed_steps = out_steps.iter().filter(|s| s["status"] == "FAIL").count();
    let mut digest = json!({"passed": passed, "failed": failed_steps, "total": out_steps.len()});
    if let Some(first) = out_steps.iter().find(|s| s["status"] == "FAIL") {
        let keyword = first["keyword"].as_str().unwrap_or("?");
        let error = first["error"].as_str().unwrap_or("unknown");
        digest["failed_at_step"] = first["index"].clone();
        digest["error"] = json!(
            format!("{keyword}: {error}")
                .chars()
                .take(200)
                .collect::<String>()
        );
    }
    if let Some((index, _)) = skipped {
        digest["skipped_at_step"] = json!(index);
    }
    if failure.is_null()
        && skipped.is_none()
        && let Some(err) = &report.error
    {
        failure = json!({"step_index": null, "error": format!("{}: {}", err.code, err.message), "recovery_log": []});
    }
    let mut out = json!({
        "status": status,
        "summary": summary,
        "batch_id": report.batch_id,
        "session_id": report.session_id,
        "total_time_ms": micros(report.time_ms),
        "steps_executed": report.steps_executed,
        "steps_total": steps_total,
        "steps": out_steps,
        "failure": failure,
        "digest": digest,
    });
    if let Some(obj) = out.as_object_mut() {
        if !report.errors.is_empty() {
            obj.insert("errors".into(), json!(report.errors));
        }
        if !report.notes.is_empty() {
            obj.insert("notes".into(), json!(report.notes));
        }
        if let Some((_, why)) = skipped {
            obj.insert("skip_reason".into(), json!(why));
        }
        if let Some(test) = test {
            obj.insert("test".into(), test);
        }
    }
    out
}

/// Milliseconds to the microsecond: what a step's time means, without the
/// float's last digits on every step of a long reply.
fn micros(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

/// Whether a call could not run at all (rejected before any step), the one
/// case rf-mcp's batch tools answer with an MCP error; a failed or timed-out
/// batch is a normal result.
fn could_not_run(report: &Report) -> bool {
    matches!(report.status, BatchStatus::Invalid | BatchStatus::Rejected)
}

/// Remembers a failed or timed-out batch for `resume_batch` under `id`:
/// `steps` are the dialect-shape steps as the batch ran them, `rendered` the
/// reply's steps.
fn remember(
    store: &Store,
    id: &str,
    report: &Report,
    (steps, rendered): (&[Value], &[Value]),
    on_failure: String,
    max: u64,
) {
    let (report, _) = split_test(report);
    let report = report.as_ref();
    // A skipped test is done, not broken: nothing to resume.
    if !matches!(report.status, BatchStatus::Failed | BatchStatus::TimedOut)
        || skipped_at(report).is_some()
    {
        return;
    }
    let Some(session_id) = report.session_id.clone() else {
        return;
    };
    // Why: a batch-level timeout may stop between steps; resume from the first
    // step that did not pass.
    let from = report
        .steps
        .iter()
        .position(|s| s.status != StepStatus::Passed)
        .unwrap_or(report.steps.len());
    let remaining = steps.get(from..).unwrap_or_default().to_vec();
    if remaining.is_empty() {
        return;
    }
    let mut kept = 0usize;
    let done: Vec<Value> = rendered
        .iter()
        .take(from)
        .map(|step| {
            let mut step = step.clone();
            let size = step.get("return_value").map_or(0, json_len);
            kept = kept.saturating_add(size);
            if kept > MAX_KEPT_VALUES_BYTES
                && let Some(obj) = step.as_object_mut()
            {
                obj.insert("return_value".into(), Value::Null);
                obj.insert("return_value_kept".into(), json!(false));
            }
            step
        })
        .collect();
    let bytes = done
        .iter()
        .chain(&remaining)
        .map(json_len)
        .fold(0usize, usize::saturating_add);
    let mut guard = store.lock().unwrap_or_else(|e| e.into_inner());
    guard.insert(
        id.to_owned(),
        Resumable {
            session_id,
            done,
            remaining,
            bytes,
            on_failure,
            max_recovery_attempts: max,
        },
    );
}

/// The length of `value` as JSON text.
fn json_len(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(0, |v| v.len())
}

/// The steps a resume runs, numbered as the whole batch: one stand-in per
/// earlier step (RF's `Set Variable` of its return value, so `${STEP_N}` of an
/// earlier step reads what it returned), the fix steps, then the remaining
/// steps with their references to steps from the failed one on moved past the
/// fix steps. Refused when a reference needs an earlier value that was too
/// large to keep.
fn resumed_steps(entry: &Resumable, fix: &[Value]) -> Result<Vec<Value>, Vec<Problem>> {
    let done = entry.done.len();
    let mut problems = Vec::new();
    let mut out: Vec<Value> = entry
        .done
        .iter()
        .map(|step| {
            let value = step.get("return_value").cloned().unwrap_or(Value::Null);
            json!({"keyword": "Set Variable", "arguments": [rf_literal(value)]})
        })
        .collect();
    let dropped = |t: usize| {
        entry
            .done
            .get(t)
            .is_some_and(|s| s.get("return_value_kept") == Some(&json!(false)))
    };
    let mut check = |field: String, text: &str| {
        let Ok(template) = crate::vars::parse_template(text, UnknownPolicy::PassThrough) else {
            return;
        };
        for r in template.refs() {
            if let Some(t) = r.step_index().filter(|t| *t < done && dropped(*t)) {
                problems.push(arg_problem(
                    &field,
                    format!(
                        "`{}` refers to step {t}, whose return value was too large to keep for a resume                          (over {MAX_KEPT_VALUES_BYTES} bytes of earlier values); store it with assign_to instead",
                        r.source
                    ),
                ));
            }
        }
    };
    for (i, step) in fix.iter().enumerate() {
        each_string(step, &mut |key, text| {
            check(format!("fix_steps[{i}].{key}"), text)
        });
        let mut step = step.clone();
        if let Some(obj) = step.as_object_mut()
            && !obj.contains_key("label")
        {
            // rf-mcp's label for a fix step, so the reply tells them apart.
            obj.insert("label".into(), json!(format!("fix_step_{i}")));
        }
        out.push(step);
    }
    for (j, step) in entry.remaining.iter().enumerate() {
        each_string(step, &mut |key, text| {
            check(format!("remaining step {}.{key}", done + j), text);
        });
        out.push(renumber(step, done, fix.len()));
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// Calls `f` with each string a step's references can sit in: the keyword and
/// the arguments.
fn each_string(step: &Value, f: &mut dyn FnMut(&str, &str)) {
    if let Some(k) = step.get("keyword").and_then(Value::as_str) {
        f("keyword", k);
    }
    for key in ["arguments", "args"] {
        for (i, a) in array(step, key).iter().enumerate() {
            if let Some(text) = a.as_str() {
                f(&format!("{key}[{i}]"), text);
            }
        }
    }
}

/// `step` with every `${STEP_N}` that reads a step from index `from` on moved
/// `by` steps later (the fix steps a resume puts before them).
fn renumber(step: &Value, from: usize, by: usize) -> Value {
    let fix = |text: &str| -> Value {
        let Ok(template) = crate::vars::parse_template(text, UnknownPolicy::PassThrough) else {
            return Value::String(text.to_owned());
        };
        if by == 0
            || !template
                .refs()
                .any(|r| r.step_index().is_some_and(|t| t >= from))
        {
            return Value::String(text.to_owned());
        }
        let mut out = String::with_capacity(text.len() + 4);
        for part in &template.parts {
            match part {
                crate::vars::Part::Text(t) => out.push_str(t),
                crate::vars::Part::Ref(r) => match r.step_index() {
                    Some(t) if t >= from => {
                        let digits = r.source["${STEP_".len().min(r.source.len())..]
                            .chars()
                            .take_while(char::is_ascii_digit)
                            .count();
                        let rest = r.source.get("${STEP_".len() + digits..).unwrap_or("}");
                        out.push_str(&format!("${{STEP_{}{rest}", t + by + 1));
                    }
                    _ => out.push_str(&r.source),
                },
            }
        }
        Value::String(out)
    };
    let mut step = step.clone();
    if let Some(obj) = step.as_object_mut() {
        if let Some(k) = obj.get("keyword").and_then(Value::as_str) {
            let k = fix(k);
            obj.insert("keyword".into(), k);
        }
        for key in ["arguments", "args"] {
            if let Some(Value::Array(items)) = obj.get_mut(key) {
                for item in items.iter_mut() {
                    if let Some(text) = item.as_str() {
                        *item = fix(text);
                    }
                }
            }
        }
    }
    step
}

/// `value` as an RF argument that passes it on unchanged: JSON other than text
/// passes as a value; text is an RF cell, so its backslashes and variable
/// syntax are escaped.
fn rf_literal(value: Value) -> Value {
    let Value::String(text) = value else {
        return value;
    };
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push_str("\\\\"),
            '$' | '@' | '&' | '%' if chars.peek() == Some(&'{') => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    Value::String(out)
}

const CHAINING: &str = "Chaining: ${STEP_N} in arguments is step N's return value (1-based; ${STEP_0} is the first too); \
${name} is a value stored by assign_to (this batch or earlier in the session); other ${var} are RF variables. \
A reference to a step that has not run yet rejects the batch before anything runs.";

/// The result text of the RF tools, read from their structured result (the
/// one place keyword names and resolved arguments are put together): the
/// summary, then a line per step with its arguments and return value or error.
fn rf_content(structured: &Value) -> Vec<ContentItem> {
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut out = match (field(structured, "status"), field(structured, "summary")) {
        (Some(status), Some(summary)) => format!("{status}: {summary}"),
        (status, summary) => status.or(summary).unwrap_or_default(),
    };
    for key in ["batch_id", "session_id"] {
        if let Some(id) = field(structured, key) {
            out.push_str(&format!(" · {} {id}", key.trim_end_matches("_id")));
        }
    }
    for problem in array(structured, "errors") {
        out.push_str(&format!(
            "\n- {}: {}",
            field(problem, "field").unwrap_or_default(),
            field(problem, "message").unwrap_or_default()
        ));
    }
    for step in array(structured, "steps") {
        let status = field(step, "status").unwrap_or_default();
        if status == "SKIPPED" && structured.get("errors").is_some() {
            // Nothing ran: the problems above say why; listing every step
            // as skipped says nothing more.
            continue;
        }
        let mut head = format!(
            "step {} {}",
            step.get("index").unwrap_or(&Value::Null),
            field(step, "keyword").unwrap_or_default()
        );
        for arg in array(step, "args_resolved") {
            // RF's own separator between arguments: two spaces or more.
            head.push_str("    ");
            match arg {
                Value::String(a) => head.push_str(a),
                other => head.push_str(&other.to_string()),
            }
        }
        head.push_str(&format!(" → {status}"));
        if status != "SKIPPED" {
            let ms = step.get("time_ms").and_then(Value::as_f64).unwrap_or(0.0);
            head.push_str(&format!(" in {ms:.1} ms"));
        }
        out.push('\n');
        match (field(step, "error"), step.get("return_value")) {
            (Some(error), _) => out.push_str(&format!("{head}: {error}")),
            (None, _) if status == "SKIP" => out.push_str(&format!(
                "{head}: {}",
                field(step, "message").unwrap_or_default()
            )),
            (None, Some(value)) if !value.is_null() => out.push_str(&text::labelled(&head, value)),
            _ => out.push_str(&head),
        }
        if let Some(log) = step
            .get("recovery_log")
            .filter(|l| l.as_array().is_some_and(|a| !a.is_empty()))
        {
            out.push('\n');
            out.push_str(&text::labelled("  recovery_log", log));
        }
    }
    if let Some(failure) = structured.get("failure").filter(|f| !f.is_null())
        && let Some(log) = failure
            .get("recovery_log")
            .filter(|l| l.as_array().is_some_and(|a| !a.is_empty()))
    {
        out.push('\n');
        out.push_str(&text::labelled("recovery tried", log));
    }
    if let Some(test) = structured.get("test") {
        out.push('\n');
        out.push_str(&text::labelled("test", test));
    }
    vec![ContentItem::Text { text: out }]
}

/// The array at `key` of `value`, or none.
fn array<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

impl Dialect for ExecuteBatch {
    fn name(&self) -> &str {
        "execute_batch"
    }

    fn description(&self, _catalog: &Catalog) -> String {
        format!(
            "Run multiple Robot Framework keywords in one call, chaining outputs between steps and applying \
automatic recovery to reduce round-trips. Steps run in order in the session.\n{CHAINING}\n\
on_failure: \"stop\" aborts at the first failure; \"retry\" re-runs a failed step up to max_recovery_attempts \
times; \"recover\" (default) re-runs a failed keyword after tiered recovery (a short wait, then recovery keywords \
the session's libraries offer, e.g. Reload Page), logged in recovery_log.\n\
Result (a failed batch is a normal result): status (PASS | FAIL | RECOVERED | TIMEOUT | SKIPPED), summary, batch_id, \
steps[] (index from 0, keyword, args_resolved, status, time_ms; return_value, error, label when there is one), failure (step_index from 0) or null, \
digest (passed, failed, total, failed_at_step, error). Skip / Skip If end the batch SKIPPED with skip_reason; \
what Set Tags, Set Test Message and the documentation and metadata keywords set is in `test`. After a failure, \
resume_batch(batch_id) continues from the failed step."
        )
    }

    fn input_schema(&self, _catalog: &Catalog) -> Value {
        json!({
            "type": "object",
            "properties": {
                "session_id": {"type": "string", "description": "Session to execute within (auto-created)."},
                "steps": {"type": "array", "minItems": 1, "items": step_schema()},
                "on_failure": {"type": "string", "enum": ["stop", "retry", "recover"], "default": "recover"},
                "max_recovery_attempts": {"type": "integer", "minimum": 1, "maximum": 10, "default": 2},
                "timeout_ms": {"type": "integer", "minimum": 1000, "maximum": 600000, "default": 120000}
            },
            "required": ["session_id", "steps"]
        })
    }

    fn output_schema(&self) -> Value {
        result_schema()
    }

    fn policy(&self) -> UnknownPolicy {
        UnknownPolicy::PassThrough
    }

    fn available(&self, catalog: &Catalog) -> bool {
        rf_loaded(catalog)
    }

    fn to_batch(
        &self,
        args: &Map<String, Value>,
        _catalog: &Catalog,
        limits: &Limits,
    ) -> Result<Value, Vec<Problem>> {
        let mut problems = Vec::new();
        if session_arg(args).is_none() {
            problems.push(arg_problem("session_id", "session_id (string) is required"));
        }
        let steps = steps_arg(args, "steps", true, &mut problems);
        let on_failure = on_failure_arg(args, &mut problems);
        let max = int_arg(args, "max_recovery_attempts", 1, 10, 2, &mut problems);
        // A host whose operator allows fewer runs per step says so in this
        // tool's own terms (the engine would name `retry.attempts`).
        let most = u64::from(limits.max_attempts).saturating_sub(1);
        if on_failure != "stop" && max > most {
            problems.push(arg_problem(
                "max_recovery_attempts",
                format!(
                    "this host allows at most {most} (limits.max_attempts = {} runs of a step)",
                    limits.max_attempts
                ),
            ));
        }
        let timeout = int_arg(args, "timeout_ms", 1000, 600_000, 120_000, &mut problems);
        build_batch(steps, &on_failure, max, timeout, None, problems)
    }

    fn render(&self, report: &Report) -> Value {
        render_rf(report, &[], true, &[])
    }

    fn is_error(&self, report: &Report) -> bool {
        could_not_run(report)
    }

    fn content(&self, _report: &Report, structured: &Value) -> Option<Vec<ContentItem>> {
        Some(rf_content(structured))
    }

    fn render_call(&self, args: &Map<String, Value>, report: &Report) -> Value {
        let steps = args
            .get("steps")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let mut ignored = Vec::new();
        let on_failure = on_failure_arg(args, &mut ignored);
        let max = int_arg(args, "max_recovery_attempts", 1, 10, 2, &mut ignored);
        let out = render_rf(report, steps, true, &[]);
        remember(
            &self.store,
            &report.batch_id,
            report,
            (steps, array(&out, "steps")),
            on_failure,
            max,
        );
        out
    }
}

impl Dialect for ExecuteStep {
    fn name(&self) -> &str {
        "execute_step"
    }

    fn description(&self, _catalog: &Catalog) -> String {
        "Run one Robot Framework keyword in the session (state and variables persist; ${name} reads an \
assign_to value). timeout is an RF time (\"10s\"). Same result shape as execute_batch, with one step."
            .to_owned()
    }

    fn input_schema(&self, _catalog: &Catalog) -> Value {
        let mut schema = step_schema();
        if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            props.remove("label");
            props.insert("session_id".into(), json!({"type": "string", "description": "Session to execute within (auto-created)."}));
        }
        if let Some(obj) = schema.as_object_mut() {
            obj.insert("required".into(), json!(["session_id", "keyword"]));
        }
        schema
    }

    fn output_schema(&self) -> Value {
        result_schema()
    }

    fn policy(&self) -> UnknownPolicy {
        UnknownPolicy::PassThrough
    }

    fn available(&self, catalog: &Catalog) -> bool {
        rf_loaded(catalog)
    }

    fn entry_count(&self, _args: &Map<String, Value>) -> usize {
        1
    }

    fn is_error(&self, report: &Report) -> bool {
        // rf-mcp raises for a failed single step; a skip is not one.
        let (report, _) = split_test(report);
        report.status != BatchStatus::Passed && skipped_at(&report).is_none()
    }

    fn to_batch(
        &self,
        args: &Map<String, Value>,
        _catalog: &Catalog,
        _limits: &Limits,
    ) -> Result<Value, Vec<Problem>> {
        let mut problems = Vec::new();
        if session_arg(args).is_none() {
            problems.push(arg_problem("session_id", "session_id (string) is required"));
        }
        let mut step = args.clone();
        step.remove("session_id");
        build_batch(&[Value::Object(step)], "stop", 1, 600_000, None, problems)
    }

    fn render(&self, report: &Report) -> Value {
        render_rf(report, &[], false, &[])
    }

    fn render_call(&self, args: &Map<String, Value>, report: &Report) -> Value {
        // The step as asked, so the reply names the keyword and arguments it
        // ran; rf-mcp's own fields for a single step beside the batch shape.
        let mut step = args.clone();
        step.remove("session_id");
        let asked = [Value::Object(step)];
        let mut out = render_rf(report, &asked, false, &[]);
        let first = out["steps"].get(0).cloned().unwrap_or(Value::Null);
        if let Some(obj) = out.as_object_mut() {
            // A single step is not resumable: no batch id to offer.
            obj.remove("batch_id");
            obj.insert(
                "success".into(),
                json!(report.status == BatchStatus::Passed),
            );
            obj.insert("keyword".into(), first["keyword"].clone());
            obj.insert("arguments".into(), first["args_resolved"].clone());
            obj.insert("output".into(), first["return_value"].clone());
        }
        out
    }

    fn content(&self, _report: &Report, structured: &Value) -> Option<Vec<ContentItem>> {
        Some(rf_content(structured))
    }
}

impl Dialect for ResumeBatch {
    fn name(&self) -> &str {
        "resume_batch"
    }

    fn description(&self, _catalog: &Catalog) -> String {
        "Continue a failed or timed-out execute_batch from its failed step, in its session as it is now. \
fix_steps (execute_batch steps) run first, then the failed step and the rest. The original on_failure and \
max_recovery_attempts apply. The result is the whole batch under the same batch_id: the earlier steps as they \
were reported, the fix steps (label fix_step_N), then the resumed steps, index counting through all of them. \
${STEP_N} keeps the numbering of the reply being resumed (earlier steps give the values they returned); a run \
that fails again can be resumed the same way."
            .to_owned()
    }

    fn input_schema(&self, _catalog: &Catalog) -> Value {
        json!({
            "type": "object",
            "properties": {
                "batch_id": {"type": "string", "description": "batch_id of the failed execute_batch."},
                "fix_steps": {"type": "array", "items": step_schema()},
                "timeout_ms": {"type": "integer", "minimum": 1000, "maximum": 600000, "default": 120000}
            },
            "required": ["batch_id"]
        })
    }

    fn output_schema(&self) -> Value {
        result_schema()
    }

    fn policy(&self) -> UnknownPolicy {
        UnknownPolicy::PassThrough
    }

    fn available(&self, catalog: &Catalog) -> bool {
        rf_loaded(catalog)
    }

    fn session_for(&self, args: &Map<String, Value>) -> Option<String> {
        let id = args.get("batch_id").and_then(Value::as_str)?;
        let guard = self.store.lock().unwrap_or_else(|e| e.into_inner());
        guard.get(id).map(|r| r.session_id.clone())
    }

    fn entry_count(&self, args: &Map<String, Value>) -> usize {
        let fix = args
            .get("fix_steps")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let id = args.get("batch_id").and_then(Value::as_str).unwrap_or("");
        let guard = self.store.lock().unwrap_or_else(|e| e.into_inner());
        fix + guard
            .get(id)
            .map_or(0, |r| r.done.len() + r.remaining.len())
    }

    fn to_batch(
        &self,
        args: &Map<String, Value>,
        _catalog: &Catalog,
        _limits: &Limits,
    ) -> Result<Value, Vec<Problem>> {
        let mut problems = Vec::new();
        let fix = steps_arg(args, "fix_steps", false, &mut problems).to_vec();
        let timeout = int_arg(args, "timeout_ms", 1000, 600_000, 120_000, &mut problems);
        let Some(id) = args.get("batch_id").and_then(Value::as_str) else {
            problems.push(arg_problem("batch_id", "batch_id (string) is required"));
            return Err(problems);
        };
        if !problems.is_empty() {
            // Nothing will run: the batch stays resumable, unclaimed.
            return Err(problems);
        }
        let claimed = self
            .store
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .claim(id, call_key(args));
        let entry = match claimed {
            Ok(entry) => entry,
            Err(ClaimError::Unknown) => {
                problems.push(arg_problem(
                    "batch_id",
                    format!("no resumable batch `{id}`: only a failed or timed-out execute_batch that was not resumed yet can be resumed (finished, unknown or already resumed batch ids are refused)"),
                ));
                return Err(problems);
            }
            Err(ClaimError::InFlight) => {
                problems.push(arg_problem(
                    "batch_id",
                    format!("batch `{id}` is being resumed by another call right now; its result says how that went (a resumed run that fails again returns a new batch_id)"),
                ));
                return Err(problems);
            }
        };
        let steps = match resumed_steps(&entry, &fix) {
            Ok(steps) => steps,
            Err(mut refused) => {
                problems.append(&mut refused);
                Vec::new()
            }
        };
        let batch = build_batch(
            &steps,
            &entry.on_failure,
            entry.max_recovery_attempts,
            timeout,
            Some(&entry.session_id),
            problems,
        );
        if batch.is_err() {
            self.store
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .release(id, call_key(args), true);
        }
        batch
    }

    fn render(&self, report: &Report) -> Value {
        render_rf(report, &[], true, &[])
    }

    fn is_error(&self, report: &Report) -> bool {
        could_not_run(report)
    }

    fn content(&self, _report: &Report, structured: &Value) -> Option<Vec<ContentItem>> {
        Some(rf_content(structured))
    }

    fn render_call(&self, args: &Map<String, Value>, report: &Report) -> Value {
        let id = args.get("batch_id").and_then(Value::as_str).unwrap_or("");
        // Why: a batch id is used up once its resume ran; an invalid call ran
        // nothing and puts it back, so a typo in fix_steps can be corrected.
        // Only this call's own claim ends here: a call refused because another
        // holds the claim has none.
        let invalid = report.status == BatchStatus::Invalid;
        let entry = self
            .store
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .release(id, call_key(args), invalid)
            .filter(|_| !invalid);
        let fix = array(&Value::Object(args.clone()), "fix_steps").to_vec();
        let Some(entry) = entry else {
            let mut out = render_rf(report, &[], true, &[]);
            if let Some(obj) = out.as_object_mut() {
                // Not one of ours, so possibly anything the caller sent.
                let mut shown = id.to_owned();
                crate::report::clip(&mut shown, 128);
                obj.insert("resumed_from".into(), json!(shown));
            }
            return out;
        };
        // The same steps to_batch ran (it refused nothing, or this is invalid).
        let steps = resumed_steps(&entry, &fix).unwrap_or_default();
        let mut out = render_rf(report, &steps, true, &entry.done);
        // rf-mcp's resume keeps the batch id: the reply is the whole batch so
        // far, and a run that fails again is resumed under the same id.
        remember(
            &self.store,
            id,
            report,
            (&steps, array(&out, "steps")),
            entry.on_failure.clone(),
            entry.max_recovery_attempts,
        );
        if let Some(obj) = out.as_object_mut() {
            obj.insert("batch_id".into(), json!(id));
            obj.insert("resumed_from".into(), json!(id));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rf_durations() {
        assert_eq!(parse_rf_duration("10s"), Some(10_000));
        assert_eq!(parse_rf_duration("1 min 30 s"), Some(90_000));
        assert_eq!(parse_rf_duration("500ms"), Some(500));
        assert_eq!(parse_rf_duration("1.5"), Some(1_500));
        assert_eq!(parse_rf_duration("2 minutes"), Some(120_000));
        assert_eq!(parse_rf_duration("soon"), None);
        assert_eq!(parse_rf_duration("0s"), None);
    }

    fn resumable() -> Resumable {
        Resumable {
            session_id: "s".into(),
            done: vec![],
            remaining: vec![json!({"keyword": "Log", "args": ["x"]})],
            bytes: 30,
            on_failure: "stop".into(),
            max_recovery_attempts: 1,
        }
    }

    #[test]
    fn one_resume_at_a_time_holds_a_batch() {
        let mut store = ResumeStore::default();
        store.insert("b".into(), resumable());
        assert!(store.claim("b", 1).is_ok());
        // A second call while the first runs is refused, and cannot end the
        // first one's claim.
        assert_eq!(store.claim("b", 2).err(), Some(ClaimError::InFlight));
        assert!(store.release("b", 2, true).is_none());
        assert_eq!(store.claim("b", 2).err(), Some(ClaimError::InFlight));
        // The first call's run consumes it.
        assert!(store.release("b", 1, false).is_some());
        assert_eq!(store.claim("b", 2).err(), Some(ClaimError::Unknown));
    }

    #[test]
    fn an_invalid_resume_puts_the_batch_back() {
        let mut store = ResumeStore::default();
        store.insert("b".into(), resumable());
        assert!(store.claim("b", 1).is_ok());
        assert!(store.release("b", 1, true).is_some());
        assert!(store.get("b").is_some());
        assert!(store.claim("b", 2).is_ok());
    }

    #[test]
    fn a_claim_whose_call_vanished_expires() {
        let mut store = ResumeStore::default();
        store.insert("b".into(), resumable());
        assert!(store.claim("b", 1).is_ok());
        let long_ago = Instant::now().checked_sub(CLAIM_TTL + Duration::from_secs(1));
        if let (Some(claim), Some(at)) = (store.claimed.get_mut("b"), long_ago) {
            claim.at = at;
        }
        assert!(store.claim("b", 2).is_ok());
        assert!(store.release("b", 1, false).is_none());
        assert!(store.release("b", 2, false).is_some());
    }

    #[test]
    fn store_is_bounded() {
        let mut store = ResumeStore::default();
        for i in 0..(MAX_REMEMBERED + 5) {
            store.insert(
                i.to_string(),
                Resumable {
                    session_id: "s".into(),
                    done: vec![],
                    remaining: vec![],
                    bytes: 1,
                    on_failure: "stop".into(),
                    max_recovery_attempts: 1,
                },
            );
        }
        assert_eq!(store.by_id.len(), MAX_REMEMBERED);
        assert!(store.get("0").is_none());
        assert!(store.take(&MAX_REMEMBERED.to_string()).is_some());
        // And by bytes: one entry of over half the budget leaves room for no other.
        let big = Resumable {
            bytes: MAX_REMEMBERED_BYTES / 2 + 1,
            ..resumable()
        };
        store.insert("big1".into(), big.clone());
        store.insert("big2".into(), big);
        assert!(store.get("big1").is_none() && store.get("big2").is_some());
        assert!(store.bytes <= MAX_REMEMBERED_BYTES);
    }

    #[test]
    fn a_resume_keeps_the_numbering() {
        let entry = Resumable {
            done: vec![
                json!({"index": 0, "status": "PASS", "return_value": "a ${x} \\n"}),
                json!({"index": 1, "status": "PASS", "return_value": [1, 2]}),
            ],
            remaining: vec![
                json!({"keyword": "Catenate", "arguments": ["${STEP_1}", "${STEP_3.x}", "${STEP_4}[0]", "\\${STEP_3}", "${name}"]}),
            ],
            ..resumable()
        };
        let fix = [json!({"keyword": "Log", "arguments": ["${STEP_2}"]})];
        let steps = resumed_steps(&entry, &fix).expect("nothing refers to a dropped value");
        // Stand-ins give the earlier values exactly, text escaped as an RF cell.
        assert_eq!(
            steps[0],
            json!({"keyword": "Set Variable", "arguments": ["a \\${x} \\\\n"]})
        );
        assert_eq!(
            steps[1],
            json!({"keyword": "Set Variable", "arguments": [[1, 2]]})
        );
        assert_eq!(steps[2]["label"], "fix_step_0");
        assert_eq!(steps[2]["arguments"], json!(["${STEP_2}"]));
        // Steps from the failed one (3rd) on move past the one fix step; earlier ones,
        // escaped text and names stay.
        assert_eq!(
            steps[3]["arguments"],
            json!([
                "${STEP_1}",
                "${STEP_4.x}",
                "${STEP_5}[0]",
                "\\${STEP_3}",
                "${name}"
            ])
        );
        // A reference to a value that was too large to keep refuses the resume.
        let mut entry = entry;
        entry.done[1]["return_value_kept"] = json!(false);
        let refused =
            resumed_steps(&entry, &fix).expect_err("the fix step reads the dropped value");
        assert!(
            refused[0].to_string().contains("too large to keep"),
            "{:?}",
            refused
        );
        assert!(resumed_steps(&entry, &[]).is_ok());
    }
}

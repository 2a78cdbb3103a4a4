//! Saved batches: a batch that worked, kept under a name as a tool of its own,
//! with parameters (`${params.NAME}` in its steps' inputs) checked against a
//! JSON Schema on every call.
//!
//! A saved batch is checked whole when it is saved (its steps planned as a
//! batch would be, every `${params...}` naming a declared parameter), so a
//! call can only fail on what the caller passes. On a call the parameters are
//! validated, their defaults filled in, and put into the steps before the batch
//! is planned again as usual: a parameter's value is data, never a reference
//! (a `${` inside it stays text).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::dialects::{Dialect, add_session_id, arg_problem, batch};
use crate::plan::{join_field, key_field, pointer_to_field};
use crate::vars::{self, Lookup, Part, PathSegment, Scope, Target, UnknownPolicy};
use crate::{Catalog, Limits, PlanContext, Problem, Report};

/// The variable a saved batch's parameters are read from: `${params.NAME}`.
pub const PARAMS: &str = "params";

/// Argument names the host takes for itself on every batch tool; a parameter
/// may not take them.
pub const RESERVED_ARGS: &[&str] = &["session_id", "dry_run", "trace"];

/// The longest saved batch name: what MCP clients that cap tool names accept.
const MAX_NAME_CHARS: usize = 64;
/// The longest description, in characters: it is sent to a model with the tool.
pub const MAX_DESCRIPTION_CHARS: usize = 2_000;

/// What `save_batch` takes and the store keeps: enough to rebuild the tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Definition {
    /// The tool's name.
    pub name: String,
    /// What the tool does, for the model that calls it.
    pub description: String,
    /// JSON Schema of the tool's arguments (an object schema).
    #[serde(default = "no_parameters")]
    pub parameters: Value,
    /// The steps, as the generic `batch` takes them.
    pub steps: Vec<Value>,
    /// `stop` or `continue`, as `batch` takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<String>,
    /// The batch's time budget in ms, as `batch` takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

fn no_parameters() -> Value {
    json!({"type": "object", "properties": {}})
}

impl Definition {
    /// The generic batch the steps make, before parameters are put in.
    fn batch(&self) -> Map<String, Value> {
        let mut batch = Map::new();
        batch.insert("steps".into(), Value::Array(self.steps.clone()));
        if let Some(on_failure) = &self.on_failure {
            batch.insert("on_failure".into(), Value::String(on_failure.clone()));
        }
        if let Some(ms) = self.timeout_ms {
            batch.insert("timeout_ms".into(), Value::from(ms));
        }
        batch
    }
}

/// A saved batch, checked and ready to serve as a tool.
pub struct SavedBatch {
    definition: Definition,
    validator: jsonschema::Validator,
    /// What a call without a parameter gets: the schema's top-level defaults.
    defaults: Map<String, Value>,
}

impl std::fmt::Debug for SavedBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SavedBatch")
            .field("definition", &self.definition)
            .finish_non_exhaustive()
    }
}

/// Whether `name` can name a saved batch's tool: a letter, then letters,
/// digits, `_` and `-`, at most 64 in all.
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && name.len() <= MAX_NAME_CHARS
}

impl SavedBatch {
    /// Checks `definition` against the plugins of `catalog` and `limits` as a
    /// batch would be checked before running, and its parameters: every
    /// problem at once, each naming its field (`name`, `parameters/...`,
    /// `steps[1].input.url`).
    pub fn new(
        definition: Definition,
        catalog: &Catalog,
        limits: &Limits,
    ) -> Result<Self, Vec<Problem>> {
        let mut problems = Vec::new();
        if !is_valid_name(&definition.name) {
            problems.push(arg_problem(
                "name",
                format!(
                    "must be a letter, then letters, digits, `_` or `-`, at most {MAX_NAME_CHARS} in all; got {:?}",
                    definition.name
                ),
            ));
        }
        let description_chars = definition.description.chars().count();
        if description_chars == 0 {
            problems.push(arg_problem(
                "description",
                "must say what the tool does: it is what a model reads to choose it",
            ));
        } else if description_chars > MAX_DESCRIPTION_CHARS {
            problems.push(arg_problem(
                "description",
                format!(
                    "is {description_chars} characters; at most {MAX_DESCRIPTION_CHARS} (it is sent with the tool list)"
                ),
            ));
        }
        let declared = check_parameters(&definition.parameters, &mut problems);
        // What stops the schema compiling is among check_parameters' problems.
        let validator = stephost_contract::schema::validator_for(&definition.parameters).ok();
        check_references(&definition.steps, &declared, &mut problems);
        let batch = Value::Object(definition.batch());
        let ctx = PlanContext {
            catalog,
            limits,
            session_vars: &|name| name == PARAMS,
            policy: UnknownPolicy::Reject,
        };
        if let Err(found) = crate::plan(&batch, &ctx) {
            problems.extend(found);
        }
        match validator {
            Some(validator) if problems.is_empty() => {
                let defaults = defaults(&definition.parameters);
                Ok(Self {
                    definition,
                    validator,
                    defaults,
                })
            }
            _ => Err(problems),
        }
    }

    /// What it was saved as.
    pub fn definition(&self) -> &Definition {
        &self.definition
    }

    /// The plugin verbs it runs, in order: `browser.navigate`, ...
    pub fn verbs(&self) -> Vec<String> {
        self.definition
            .steps
            .iter()
            .map(|step| {
                let part = |key: &str| step.get(key).and_then(Value::as_str).unwrap_or("?");
                format!("{}.{}", part("plugin"), part("verb"))
            })
            .collect()
    }

    /// The declared parameter names.
    pub fn parameter_names(&self) -> Vec<String> {
        self.definition
            .parameters
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The batch this call runs: arguments checked against the parameter
    /// schema (each problem naming its parameter), defaults filled in, values
    /// put into the steps.
    fn bind(&self, args: &Map<String, Value>, limits: &Limits) -> Result<Value, Vec<Problem>> {
        let mut params = args.clone();
        for reserved in RESERVED_ARGS {
            params.remove(*reserved);
        }
        for (name, default) in &self.defaults {
            if !params.contains_key(name) {
                params.insert(name.clone(), default.clone());
            }
        }
        let params = Value::Object(params);
        // One more than a report lists, so it can say that more were found.
        let problems: Vec<Problem> = self
            .validator
            .iter_errors(&params)
            .take(crate::report::MAX_LISTED_PROBLEMS + 1)
            .map(|e| {
                let mut field = pointer_to_field("", &e.instance_path().to_string());
                if let jsonschema::error::ValidationErrorKind::Required { property } = e.kind()
                    && let Some(name) = property.as_str()
                {
                    field = join_field(&field, &key_field(name));
                }
                if field.is_empty() {
                    field = "(arguments)".into();
                }
                arg_problem(&field, e.to_string())
            })
            .collect();
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut batch = self.definition.batch();
        let Some(Value::Array(steps)) = batch.get_mut("steps") else {
            return Ok(Value::Object(batch));
        };
        let mut problems = Vec::new();
        // One value may go into every step: what the steps add up to is
        // charged as it is built, against the report's limit (the report
        // holds each resolved input), so a call can never make the host
        // materialise more than one report's worth.
        let mut batch_left = limits.max_report_bytes;
        for (index, step) in steps.iter_mut().enumerate() {
            let Some(input) = step.get_mut("input") else {
                continue;
            };
            let mut meter = Meter {
                step_left: limits.max_input_bytes,
                batch_left,
                step: index,
                limits,
            };
            let mut path = String::from("input");
            if let Err((field, message)) = bind_value(input, &params, &mut meter, &mut path) {
                let whole_batch = meter.batch_left == 0;
                problems.push(Problem {
                    step: Some(index),
                    label: None,
                    field: join_field(&format!("steps[{index}]"), &field),
                    message,
                });
                if whole_batch {
                    // Every later step would fail the same way: one problem says it.
                    break;
                }
            }
            batch_left = meter.batch_left;
        }
        if problems.is_empty() {
            Ok(Value::Object(batch))
        } else {
            Err(problems)
        }
    }
}

/// Checks that `parameters` is an object schema whose properties are names
/// a call can pass; returns the declared names. Problems name their place
/// in the schema as a JSON pointer (`parameters/properties/x`).
fn check_parameters(parameters: &Value, problems: &mut Vec<Problem>) -> BTreeSet<String> {
    let Some(schema) = parameters.as_object() else {
        problems.push(arg_problem(
            "parameters",
            "must be a JSON Schema object such as {\"type\": \"object\", \"properties\": {\"url\": {\"type\": \"string\"}}, \"required\": [\"url\"]}",
        ));
        return BTreeSet::new();
    };
    for (pointer, message) in stephost_contract::review::schema_problems(parameters) {
        problems.push(arg_problem(&format!("parameters{pointer}"), message));
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        problems.push(arg_problem(
            "parameters/type",
            "must be \"object\": a tool's arguments are one JSON object",
        ));
    }
    let declared: BTreeSet<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    for name in &declared {
        if RESERVED_ARGS.contains(&name.as_str()) {
            problems.push(arg_problem(
                &format!("parameters/properties/{name}"),
                format!(
                    "`{name}` is the host's own argument on every batch tool ({}); call the parameter something else",
                    RESERVED_ARGS.join(", ")
                ),
            ));
        }
    }
    declared
}

/// Every `${params.NAME...}` in the steps' inputs must name a declared
/// parameter, and no step may assign to `params`.
fn check_references(steps: &[Value], declared: &BTreeSet<String>, problems: &mut Vec<Problem>) {
    let listed = if declared.is_empty() {
        "none are declared".to_owned()
    } else {
        format!(
            "declared: {}",
            declared.iter().cloned().collect::<Vec<_>>().join(", ")
        )
    };
    for (index, step) in steps.iter().enumerate() {
        let field = |rest: &str| join_field(&format!("steps[{index}]"), rest);
        if step.get("assign_to").and_then(Value::as_str) == Some(PARAMS) {
            problems.push(Problem {
                step: Some(index),
                label: None,
                field: field("assign_to"),
                message: format!(
                    "`{PARAMS}` holds a saved batch's parameters; store the value under another name"
                ),
            });
        }
        let Some(input) = step.get("input") else {
            continue;
        };
        // A malformed reference is the planner's to report, with the rest.
        let Ok(refs) = vars::collect_refs(input, UnknownPolicy::Reject) else {
            continue;
        };
        for (at, r) in refs {
            if r.target != Target::Name(PARAMS.into()) {
                continue;
            }
            let name = match r.path.first() {
                None => continue,
                Some(PathSegment::Key(name)) => name.clone(),
                Some(PathSegment::Index(i)) => i.to_string(),
            };
            if !declared.contains(&name) {
                problems.push(Problem {
                    step: Some(index),
                    label: None,
                    field: field(&vars::join_path("input", &at)),
                    message: format!("`{}`: no parameter `{name}` ({listed})", r.source),
                });
            }
        }
    }
}

/// The schema's top-level property defaults.
fn defaults(parameters: &Value) -> Map<String, Value> {
    parameters
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, schema)| Some((name.clone(), schema.get("default")?.clone())))
        .collect()
}

/// What is left of the size budgets as parameters are put in: the step's
/// input (`limits.max_input_bytes`) and the whole batch's
/// (`limits.max_report_bytes`), both charged before a piece is copied.
struct Meter<'a> {
    step_left: u64,
    batch_left: u64,
    /// 0-based index of the step being bound.
    step: usize,
    limits: &'a Limits,
}

impl Meter<'_> {
    fn take(&mut self, bytes: usize) -> Result<(), String> {
        let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
        let Some(step_left) = self.step_left.checked_sub(bytes) else {
            return Err(format!(
                "with its parameters put in, this input is past limits.max_input_bytes = {}; pass a smaller value",
                self.limits.max_input_bytes
            ));
        };
        let Some(batch_left) = self.batch_left.checked_sub(bytes) else {
            self.batch_left = 0;
            return Err(format!(
                "with the parameters put into every step that uses them, steps 1 to {} alone \
                 are past limits.max_report_bytes = {} (a report holds each step's input); \
                 pass a smaller value or use it in fewer steps",
                self.step + 1,
                self.limits.max_report_bytes
            ));
        };
        self.step_left = step_left;
        self.batch_left = batch_left;
        Ok(())
    }
}

/// The scope a parameter reference is looked up in: `params` only.
struct Params<'a>(&'a Value);

impl Scope for Params<'_> {
    fn step(&self, _index: usize) -> Lookup<'_> {
        Lookup::Unknown
    }

    fn name(&self, name: &str) -> Lookup<'_> {
        if name == PARAMS {
            Lookup::Value(self.0)
        } else {
            Lookup::Unknown
        }
    }
}

/// Puts the parameters into every string of `value` that refers to them;
/// other references and escapes stay as written for the batch's own
/// resolution. The error is (field, message).
fn bind_value(
    value: &mut Value,
    params: &Value,
    meter: &mut Meter<'_>,
    path: &mut String,
) -> Result<(), (String, String)> {
    match value {
        Value::String(text) if text.contains("${") => {
            if let Some(bound) = bind_string(text, params, meter).map_err(|m| (path.clone(), m))? {
                *value = bound;
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                bind_value(item, params, meter, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                let len = path.len();
                vars::push_key(path, key);
                bind_value(item, params, meter, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `text` with its parameter references put in, or `None` when it has none.
/// A string that is exactly one parameter reference becomes that value; in a
/// longer string the value is spliced as text and escaped, so it stays data.
fn bind_string(text: &str, params: &Value, meter: &mut Meter<'_>) -> Result<Option<Value>, String> {
    // The saved steps were planned under Reject, so the text parses.
    let template = vars::parse_template(text, UnknownPolicy::Reject).map_err(|e| e.problem())?;
    let is_param = |r: &vars::VarRef| r.target == Target::Name(PARAMS.into());
    if !template.refs().any(is_param) {
        return Ok(None);
    }
    let value_of = |r: &vars::VarRef| -> Result<Value, String> {
        vars::resolve(
            &Value::String(r.source.clone()),
            &Params(params),
            UnknownPolicy::Reject,
        )
        .map_err(|e| match e {
            vars::VarError::BadPath { .. } if r.path.len() == 1 => {
                format!(
                    "`{}`: the parameter was not given and has no default",
                    r.source
                )
            }
            other => other.problem(),
        })
    };
    if let Some(r) = template.whole_ref().filter(|r| is_param(r)) {
        let mut value = value_of(r)?;
        // Measured without writing it out; the depth limit holds for a
        // parameter's value as for any input.
        let bytes = vars::check_limits(
            &value,
            vars::InputLimits {
                max_bytes: meter.step_left,
                max_depth: meter.limits.max_input_depth,
            },
        )
        .map_err(|e| match e.exceeded {
            vars::Exceeded::Depth { max } => format!(
                "`{}` nests arrays and objects more than {max} levels deep, past limits.max_input_depth",
                r.source
            ),
            vars::Exceeded::Bytes { .. } => format!(
                "with its parameters put in, this input is past limits.max_input_bytes = {}; pass a smaller value",
                meter.limits.max_input_bytes
            ),
        })?;
        meter.take(usize::try_from(bytes).unwrap_or(usize::MAX))?;
        escape_strings(&mut value);
        return Ok(Some(value));
    }
    let mut out = String::new();
    for part in &template.parts {
        let piece = match part {
            Part::Text(literal) => vars::escape(literal),
            Part::Ref(r) if is_param(r) => match &value_of(r)? {
                Value::String(s) => vars::escape(s),
                other => vars::escape(&other.to_string()),
            },
            Part::Ref(r) => r.source.clone(),
        };
        meter.take(piece.len())?;
        out.push_str(&piece);
    }
    Ok(Some(Value::String(out)))
}

/// Escapes every string in `value`, so the batch's own resolution reads a
/// `${` in a parameter's value as text.
fn escape_strings(value: &mut Value) {
    match value {
        Value::String(s) if s.contains("${") => *s = vars::escape(s),
        Value::Array(items) => items.iter_mut().for_each(escape_strings),
        Value::Object(map) => map.values_mut().for_each(escape_strings),
        _ => {}
    }
}

impl Dialect for SavedBatch {
    fn name(&self) -> &str {
        &self.definition.name
    }

    fn description(&self, _catalog: &Catalog) -> String {
        format!(
            "{}\n(A saved batch: runs {}.)",
            self.definition.description,
            self.verbs().join(", ")
        )
    }

    fn input_schema(&self, _catalog: &Catalog) -> Value {
        let mut schema = self.definition.parameters.clone();
        add_session_id(&mut schema);
        schema
    }

    fn output_schema(&self) -> Value {
        batch::report_schema()
    }

    fn entry_count(&self, _args: &Map<String, Value>) -> usize {
        self.definition.steps.len()
    }

    fn to_batch(
        &self,
        args: &Map<String, Value>,
        _catalog: &Catalog,
        limits: &Limits,
    ) -> Result<Value, Vec<Problem>> {
        self.bind(args, limits)
    }

    fn render(&self, report: &Report) -> Value {
        batch::Batch.render(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn definition(parameters: Value, steps: Value) -> Definition {
        Definition {
            name: "greet".into(),
            description: "Echoes a greeting".into(),
            parameters,
            steps: serde_json::from_value(steps).expect("steps"),
            on_failure: None,
            timeout_ms: None,
        }
    }

    fn saved(parameters: Value, steps: Value) -> Result<SavedBatch, Vec<Problem>> {
        SavedBatch::new(
            definition(parameters, steps),
            &crate::testing::catalog(),
            &Limits::default(),
        )
    }

    fn fields(problems: &[Problem]) -> Vec<String> {
        problems.iter().map(|p| p.field.clone()).collect()
    }

    fn args(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("an object"),
        }
    }

    fn greeting() -> SavedBatch {
        saved(
            json!({
                "type": "object",
                "properties": {
                    "who": {"type": "string"},
                    "times": {"type": "integer", "default": 2},
                    "tags": {"type": "array"}
                },
                "required": ["who"],
                "additionalProperties": false
            }),
            json!([
                {"plugin": "testkit", "verb": "echo", "input": {"value": "hello ${params.who}"}},
                {"plugin": "testkit", "verb": "echo", "input": {"value": "${params.times}"}},
                {"plugin": "testkit", "verb": "echo", "input": {"value": "${STEP_1} and \\${kept}"}}
            ]),
        )
        .expect("saves")
    }

    #[test]
    fn parameters_go_in_as_values_and_other_references_stay() {
        let batch = greeting()
            .bind(&args(json!({"who": "Ada"})), &Limits::default())
            .expect("binds");
        assert_eq!(batch["steps"][0]["input"]["value"], json!("hello Ada"));
        // A whole reference keeps the value's type; the default fills it.
        assert_eq!(batch["steps"][1]["input"]["value"], json!(2));
        assert_eq!(
            batch["steps"][2]["input"]["value"],
            json!("${STEP_1} and \\${kept}")
        );
    }

    #[test]
    fn a_parameter_value_is_data_never_a_reference() {
        let batch = greeting()
            .bind(&args(json!({"who": "${STEP_1}"})), &Limits::default())
            .expect("binds");
        let resolved = vars::resolve(
            &batch["steps"][0]["input"]["value"],
            &Params(&json!({})),
            UnknownPolicy::Reject,
        )
        .expect("resolves with no steps");
        assert_eq!(resolved, json!("hello ${STEP_1}"));
        // Whole, and nested in a structured value, too.
        let saved = saved(
            json!({"type": "object", "properties": {"v": {}}}),
            json!([{"plugin": "testkit", "verb": "echo", "input": {"value": "${params.v}"}}]),
        )
        .expect("saves");
        for given in [json!("${STEP_1}"), json!({"a": ["x ${STEP_1}"]})] {
            let batch = saved
                .bind(&args(json!({"v": given})), &Limits::default())
                .expect("binds");
            let resolved = vars::resolve(
                &batch["steps"][0]["input"]["value"],
                &Params(&json!({})),
                UnknownPolicy::Reject,
            )
            .expect("resolves with no steps");
            assert_eq!(resolved, given);
        }
    }

    #[test]
    fn bad_arguments_name_the_parameter() {
        let saved = greeting();
        let limits = Limits::default();
        let missing = saved.bind(&args(json!({})), &limits).expect_err("who");
        assert_eq!(fields(&missing), ["who"]);
        let wrong = saved
            .bind(&args(json!({"who": 3, "times": "x"})), &limits)
            .expect_err("types");
        let mut wrong = fields(&wrong);
        wrong.sort();
        assert_eq!(wrong, ["times", "who"]);
        let extra = saved
            .bind(&args(json!({"who": "a", "whom": 1})), &limits)
            .expect_err("extra");
        assert_eq!(fields(&extra), ["(arguments)"]);
        assert!(extra[0].message.contains("whom"), "{}", extra[0].message);
        // The host's own arguments are not parameters.
        saved
            .bind(
                &args(json!({"who": "a", "session_id": "s", "dry_run": true})),
                &limits,
            )
            .expect("host arguments pass");
    }

    #[test]
    fn a_big_parameter_is_refused_before_it_is_copied_into_every_step() {
        let saved = saved(
            json!({"type": "object", "properties": {"v": {"type": "string"}}}),
            json!([{"plugin": "testkit", "verb": "echo", "input": {"value": ["${params.v}", "${params.v}", "x${params.v}"]}}]),
        )
        .expect("saves");
        let limits = Limits {
            max_input_bytes: 1_000,
            ..Limits::default()
        };
        let problems = saved
            .bind(&args(json!({"v": "a".repeat(400)})), &limits)
            .expect_err("too big");
        assert_eq!(fields(&problems), ["steps[0].input.value[2]"]);
    }

    #[test]
    fn a_parameter_in_every_step_is_charged_once_against_the_report() {
        let steps: Vec<Value> = (0..250)
            .map(
                |_| json!({"plugin": "testkit", "verb": "echo", "input": {"value": "${params.v}"}}),
            )
            .collect();
        let saved = saved(
            json!({"type": "object", "properties": {"v": {"type": "string"}}}),
            Value::Array(steps),
        )
        .expect("saves");
        let limits = Limits {
            max_report_bytes: 10_000,
            ..Limits::default()
        };
        // 250 copies of 402 bytes pass 10,000 at the 25th step: one problem
        // there, and nothing past it was built.
        let problems = saved
            .bind(&args(json!({"v": "a".repeat(400)})), &limits)
            .expect_err("too big in all");
        assert_eq!(fields(&problems), ["steps[24].input.value"]);
        assert!(
            problems[0]
                .message
                .contains("limits.max_report_bytes = 10000"),
            "{}",
            problems[0].message
        );
        saved
            .bind(&args(json!({"v": "a".repeat(30)})), &limits)
            .expect("fits");
    }

    #[test]
    fn a_parameter_schema_with_a_backtracking_pattern_is_refused() {
        let problems = saved(
            json!({"type": "object", "properties": {"v": {"type": "array", "items": {"type": "string", "pattern": "^(?:(?=a)(a|aa))+$"}}}}),
            json!([{"plugin": "testkit", "verb": "echo", "input": {"value": "${params.v}"}}]),
        )
        .expect_err("refused");
        assert!(
            problems
                .iter()
                .any(|p| p.field.contains("items/pattern") && p.message.contains("linear-time")),
            "{problems:?}"
        );
    }

    #[test]
    fn saving_checks_the_steps_and_the_references() {
        let problems = saved(
            json!({"type": "object", "properties": {"who": {"type": "string"}}}),
            json!([
                {"plugin": "testkit", "verb": "ech", "input": {}},
                {"plugin": "testkit", "verb": "echo", "input": {"value": "${params.whom}"}},
                {"plugin": "testkit", "verb": "echo", "input": {"value": "${nobody}"}, "assign_to": "params"}
            ]),
        )
        .expect_err("refused");
        let found = fields(&problems);
        assert!(found.contains(&"steps[0].verb".to_owned()), "{found:?}");
        assert!(
            found.contains(&"steps[1].input.value".to_owned()),
            "{found:?}"
        );
        assert!(
            found.contains(&"steps[2].assign_to".to_owned()),
            "{found:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.message.contains("no parameter `whom` (declared: who)")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.message.contains("`${nobody}`")),
            "{problems:?}"
        );
    }

    #[test]
    fn saving_checks_the_parameter_schema_and_the_name() {
        let mut def = definition(
            json!({"type": "array", "properties": {"session_id": {"type": "string"}, "n": {"type": "nope"}}}),
            json!([{"plugin": "testkit", "verb": "echo", "input": {"value": 1}}]),
        );
        def.name = "9 lives".into();
        def.description = String::new();
        let problems = SavedBatch::new(def, &crate::testing::catalog(), &Limits::default())
            .expect_err("refused");
        let found = fields(&problems);
        for field in [
            "name",
            "description",
            "parameters/type",
            "parameters/properties/session_id",
        ] {
            assert!(found.contains(&field.to_owned()), "{field}: {found:?}");
        }
        assert!(
            found
                .iter()
                .any(|f| f.starts_with("parameters/properties/n")),
            "{found:?}"
        );
    }

    #[test]
    fn the_tool_takes_the_parameters_and_a_session() {
        let saved = greeting();
        let schema = saved.input_schema(&crate::testing::catalog());
        assert_eq!(schema["required"], json!(["who"]));
        assert!(schema["properties"]["session_id"].is_object());
        assert!(
            saved
                .description(&crate::testing::catalog())
                .contains("testkit.echo")
        );
    }
}

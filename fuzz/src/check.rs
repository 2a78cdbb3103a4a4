//! The invariants the targets assert besides "does not panic". A failed assertion
//! is a crash to libFuzzer, and so a finding.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Map, Value};
use stephost_batch::dialects::Dialect;
use stephost_batch::vars::{self, Lookup, Scope, Target};
use stephost_batch::{self as batch, Plan, PlanContext, Problem, Report, UnknownPolicy};

use crate::fixture;

/// Session variables the fuzzed session claims to hold.
pub const SESSION_VARS: &[&str] = &["user", "v"];

/// Whether `name` is one of [`SESSION_VARS`].
pub fn session_var(name: &str) -> bool {
    SESSION_VARS.contains(&name)
}

/// Plans `request` as the host does and checks what comes back.
pub fn plan(
    request: &Value,
    policy: UnknownPolicy,
    session_vars: &dyn Fn(&str) -> bool,
) -> Result<Plan, Vec<Problem>> {
    let fixture = fixture();
    let ctx = PlanContext {
        catalog: &fixture.catalog,
        limits: &fixture.limits,
        session_vars,
        policy,
    };
    let result = batch::plan(request, &ctx);
    let steps = request.get("steps").and_then(Value::as_array);
    match &result {
        Ok(plan) => clean_plan(plan, steps, policy, session_vars),
        Err(problems) => rejected(problems, Some(steps.map_or(0, Vec::len))),
    }
    result
}

/// A clean plan is the batch as written, within the limits, and every reference
/// it keeps points backwards.
fn clean_plan(
    plan: &Plan,
    steps: Option<&Vec<Value>>,
    policy: UnknownPolicy,
    session_vars: &dyn Fn(&str) -> bool,
) {
    let limits = &fixture().limits;
    let steps = steps.expect("a clean plan comes from a batch with a `steps` array");
    assert_eq!(plan.steps().len(), steps.len(), "every step is planned");
    assert!(!plan.steps().is_empty() && plan.steps().len() <= limits.max_steps_per_batch);
    assert!(!plan.timeout().is_zero());
    assert!(plan.timeout() <= Duration::from_millis(limits.max_batch_timeout_ms));
    assert_eq!(plan.policy(), policy);
    let mut assigned = BTreeSet::new();
    let empty = Value::Object(Map::new());
    for (i, (step, json)) in plan.steps().iter().zip(steps).enumerate() {
        assert_eq!(step.index(), i);
        assert_eq!(Some(step.plugin().name()), json["plugin"].as_str());
        assert_eq!(Some(step.verb()), json["verb"].as_str());
        assert!(step.plugin().verb(step.verb()).is_some(), "the verb exists");
        let written = match &json["input"] {
            Value::Null => &empty,
            input => input,
        };
        assert_eq!(step.input(), written, "the input is kept as written");
        assert!(!step.timeout().is_zero());
        assert!(step.timeout() <= Duration::from_millis(limits.max_step_timeout_ms));
        assert!((1..=limits.max_attempts).contains(&step.retry().attempts));
        let refs = vars::collect_refs(step.input(), policy)
            .unwrap_or_else(|(at, e)| panic!("a planned input has a bad reference at {at}: {e}"));
        for (_, r) in &refs {
            match &r.target {
                Target::Step(n) => assert!(
                    vars::step_index(*n) < i,
                    "step {i} keeps `{}`, which is not an earlier step",
                    r.source
                ),
                Target::Name(name) if policy == UnknownPolicy::Reject => assert!(
                    assigned.contains(name) || session_vars(name),
                    "step {i} keeps `{}`, which nothing assigns",
                    r.source
                ),
                Target::Name(_) => {}
            }
        }
        if !step.has_refs() {
            // The runner sends such an input as it is: resolving must not change it.
            assert_eq!(
                vars::resolve(step.input(), &Nothing, policy).as_ref(),
                Ok(step.input()),
                "step {i} is marked reference-free but resolving changes it"
            );
        }
        if let Some(name) = step.assign_to() {
            assert!(vars::is_valid_name(name));
            assigned.insert(name.to_owned());
        }
    }
}

/// A rejected batch names at least one problem, each at a real step (when the
/// number of steps is known), and its report renders.
fn rejected(problems: &[Problem], steps: Option<usize>) {
    assert!(!problems.is_empty(), "a rejection names its problems");
    for p in problems {
        if let (Some(step), Some(steps)) = (p.step, steps) {
            assert!(step < steps, "problem at step {step} of {steps}: {p}");
        }
        // Regression (fuzz/regressions/batch_plan/empty-unknown-key.json): an
        // empty unknown key was once reported with an empty `field`.
        assert!(!p.field.is_empty(), "every problem names a field: {p}");
        let _ = p.to_string();
    }
    let report = Report::invalid("b-fuzz".into(), None, steps.unwrap_or(0), problems.to_vec());
    let _ = report.summary();
    serde_json::to_string(&report).expect("an invalid report serializes");
}

/// Maps `args` with `dialect` and plans the result as the MCP server would.
pub fn dialect(dialect: &dyn Dialect, args: &Map<String, Value>) {
    let fixture = fixture();
    match dialect.to_batch(args, &fixture.catalog, &fixture.limits) {
        Ok(batch) => {
            let _ = plan(&batch, dialect.policy(), &session_var);
        }
        Err(problems) => {
            assert!(
                !problems.is_empty(),
                "`{}` refused its arguments without naming a problem",
                dialect.name()
            );
            rejected(&problems, None);
        }
    }
}

/// Renders `report` with `dialect`; the result must serialize.
pub fn render(dialect: &dyn Dialect, report: &Report) {
    let value = dialect.render(report);
    serde_json::to_string(&value).expect("a rendered report serializes");
}

/// A scope that knows nothing: what the runner's scope looks like to an input
/// that holds no reference it has to resolve.
pub struct Nothing;

impl Scope for Nothing {
    fn step(&self, _index: usize) -> Lookup<'_> {
        Lookup::Unknown
    }

    fn name(&self, _name: &str) -> Lookup<'_> {
        Lookup::Unknown
    }
}

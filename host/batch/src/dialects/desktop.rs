//! What the two desktop dialects (`run_macro`, `do_steps`) share: the plugin
//! they drive and the step budget of its waiting verbs.

use serde_json::{Map, Value};

use super::arg_problem;
use crate::plan::key_field;
use crate::{Limits, Problem, room_for_wait};

/// The plugin these tools drive.
pub(super) const DESKTOP: &str = "desktop";

/// A problem for each argument not in `fields`, listing them.
pub(super) fn unknown_args(args: &Map<String, Value>, fields: &[&str]) -> Vec<Problem> {
    args.keys()
        .filter(|key| !fields.contains(&key.as_str()))
        .map(|key| {
            arg_problem(
                &key_field(key),
                format!("unknown field (expected one of: {})", fields.join(", ")),
            )
        })
        .collect()
}

/// A step timeout for desktop verbs that wait longer than the caller's
/// default step timeout allows: their own wait plus room to report it, held
/// to the caller's limits (see [`room_for_wait`]).
pub(super) fn step_timeout_ms(
    verb: &str,
    input: &Map<String, Value>,
    limits: &Limits,
) -> Option<u64> {
    let ms = |key: &str| input.get(key).and_then(Value::as_f64);
    let wait = match verb {
        "wait_for" | "wait_until" => ms("timeout_ms")
            .or_else(|| ms("timeout").map(|s| s * 1000.0))
            .unwrap_or(10_000.0),
        "sleep" => ms("ms").unwrap_or(0.0),
        "look" => ms("settle_max_ms").unwrap_or(2_000.0) + 10_000.0,
        _ => return None,
    };
    room_for_wait(wait.max(0.0) as u64, limits)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn waits_get_room_beyond_the_default_timeout() {
        let input = |v: Value| v.as_object().cloned().unwrap_or_default();
        let limits = Limits::default();
        assert_eq!(
            step_timeout_ms("wait_for", &input(json!({"timeout_ms": 40000})), &limits),
            Some(45_000)
        );
        assert_eq!(
            step_timeout_ms("wait_for", &input(json!({"timeout": 1})), &limits),
            None
        );
        assert_eq!(
            step_timeout_ms("sleep", &input(json!({"ms": 60000})), &limits),
            Some(65_000)
        );
        assert_eq!(step_timeout_ms("click", &input(json!({})), &limits), None);
        let tenant = Limits {
            max_step_timeout_ms: 20_000,
            step_timeout_ms: 5_000,
            ..Limits::default()
        };
        assert_eq!(
            step_timeout_ms("sleep", &input(json!({"ms": 60000})), &tenant),
            Some(20_000),
            "a tenant's cap holds"
        );
    }
}

//! The one way the host compiles a JSON Schema that tenant input is checked
//! against: plugin verbs' input schemas and saved batches' parameter schemas.
//!
//! Validation runs on the host's own threads with input a tenant chose, so
//! its cost must not depend on how cleverly a `pattern` is written. The
//! validator crate's default engine backtracks (it supports look-around and
//! backreferences), and `^(?:(?=a)(a|aa))+$` against 800 short strings cost
//! 50 s of CPU. Every pattern here is compiled by the linear-time `regex`
//! engine instead, with bounded compiled and cache sizes; a pattern that
//! needs backtracking features does not compile, so it is refused when the
//! schema is loaded or saved, naming the pattern, never at call time.

use serde_json::Value;

/// Largest compiled program of one pattern, in bytes: a pattern such as
/// `(a{1000}){1000}` would otherwise take gigabytes to compile.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;
/// Largest lazy-DFA cache of one pattern, in bytes.
const PATTERN_DFA_LIMIT: usize = 1 << 20;

/// Compiles `schema` for validating tenant input: linear-time patterns with
/// bounded memory (see the module docs).
///
/// # Errors
/// What stops it compiling: a `$ref` that resolves nowhere, a pattern the
/// linear engine cannot run (look-around, backreferences) or that is too big.
pub fn validator_for(schema: &Value) -> Result<jsonschema::Validator, String> {
    compile(schema).map_err(|e| describe(&e))
}

/// The one set of options every schema here is compiled with.
fn compile(schema: &Value) -> Result<jsonschema::Validator, jsonschema::ValidationError<'static>> {
    jsonschema::options()
        .with_pattern_options(
            jsonschema::PatternOptions::regex()
                .size_limit(PATTERN_SIZE_LIMIT)
                .dfa_size_limit(PATTERN_DFA_LIMIT),
        )
        .build(schema)
}

/// A compile error as a sentence, with what to do about a pattern.
fn describe(e: &jsonschema::ValidationError<'_>) -> String {
    let text = e.to_string();
    let at = e.schema_path().to_string();
    if at.ends_with("/pattern") || at.contains("/patternProperties") || text.contains("regex") {
        format!(
            "{text} (the host runs patterns with a linear-time engine: look-around such as `(?=`, \
             `(?!`, `(?<=` and backreferences such as `\\1` are not supported; \
             rewrite the pattern without them)"
        )
    } else {
        text
    }
}

/// What stops `schema` compiling as [`validator_for`] compiles it: where in
/// the schema, as a JSON pointer, and why; `None` when it compiles.
pub fn problem(schema: &Value) -> Option<(String, String)> {
    compile(schema)
        .err()
        .map(|e| (e.schema_path().to_string(), describe(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::{Duration, Instant};

    #[test]
    fn a_backtracking_pattern_is_refused_at_compile_time() {
        let schema =
            json!({"type": "array", "items": {"type": "string", "pattern": "^(?:(?=a)(a|aa))+$"}});
        let (pointer, message) = problem(&schema).expect("refused");
        assert!(pointer.contains("pattern"), "{pointer}");
        assert!(message.contains("linear-time"), "{message}");
        assert!(validator_for(&schema).is_err());
    }

    #[test]
    fn a_nested_quantifier_runs_in_linear_time() {
        // The classic catastrophic-backtracking pattern: exponential for a
        // backtracking engine on `a...ab`, linear here.
        let schema = json!({"type": "array", "items": {"type": "string", "pattern": "^(a+)+$"}});
        let validator = validator_for(&schema).expect("compiles");
        let item = format!("{}b", "a".repeat(40));
        let instance = Value::Array(vec![Value::String(item); 2_000]);
        let started = Instant::now();
        assert_eq!(validator.iter_errors(&instance).count(), 2_000);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_pattern_too_big_to_compile_is_refused() {
        let schema = json!({"type": "string", "pattern": "(a{1000}){1000}"});
        assert!(problem(&schema).is_some());
    }

    #[test]
    fn ordinary_patterns_still_work() {
        let schema = json!({"type": "string", "pattern": "^\\d{3}-[a-z]+$"});
        let validator = validator_for(&schema).expect("compiles");
        assert!(validator.is_valid(&json!("123-abc")));
        assert!(!validator.is_valid(&json!("12-abc")));
    }
}

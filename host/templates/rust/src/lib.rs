//! `{{name}}`: a stephost plugin on the guest SDK.

use serde_json::json;
use stephost_plugin::{
    Args, Failure, FailureCode, Level, Output, Plugin, Verb, export_plugin, log,
};

struct Component;

/// What one instance remembers. The host keeps one instance per session, so
/// this is per-session state.
#[derive(Default)]
struct State {
    counted: u64,
}

impl Plugin for Component {
    const NAME: &'static str = "{{name}}";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const DESCRIPTION: &'static str = "Greets people and counts calls: a starting point.";
    type State = State;

    fn verbs() -> Vec<Verb<State>> {
        vec![
            Verb::new(
                "greet",
                "Returns a greeting for `name`.",
                json!({
                    "type": "object",
                    "properties": {"name": {"type": "string", "minLength": 1, "description": "Who to greet."}},
                    "required": ["name"],
                    "additionalProperties": false
                }),
                greet,
            )
            .with_output_schema(json!({
                "type": "object",
                "properties": {"greeting": {"type": "string"}},
                "required": ["greeting"]
            })),
            Verb::new(
                "count",
                "Counts how often it ran in this session, starting at 1.",
                json!({"type": "object", "additionalProperties": false}),
                count,
            ),
        ]
    }
}

export_plugin!(Component);

fn greet(_state: &mut State, args: &Args) -> Result<Output, Failure> {
    let name = args.str("name")?;
    if name.trim().is_empty() {
        // Nothing was done, so a retry with the same input fails the same way.
        return Err(Failure::new(
            FailureCode::InvalidInput,
            "`name` is blank; give the name of someone to greet",
        )
        .with_input_fired(false));
    }
    log(Level::Info, &format!("greeting {name}"));
    Ok(Output::new(json!({"greeting": format!("Hello, {name}!")})))
}

fn count(state: &mut State, _args: &Args) -> Result<Output, Failure> {
    state.counted += 1;
    Ok(Output::new(json!({"count": state.counted})))
}

#[cfg(test)]
mod tests {
    use stephost_plugin::{FailureCode, Level, invoke, mock};

    use super::Component;

    #[test]
    fn greets_and_logs() {
        mock::reset();
        let out = invoke::<Component>("greet", r#"{"name": "Ada"}"#).expect("a greeting");
        assert_eq!(out.value, r#"{"greeting":"Hello, Ada!"}"#);
        assert_eq!(mock::take_logs(), [(Level::Info, "greeting Ada".to_owned())]);
    }

    #[test]
    fn a_blank_name_is_invalid_input() {
        let failure = invoke::<Component>("greet", r#"{"name": "  "}"#).expect_err("refused");
        assert_eq!(failure.code, FailureCode::InvalidInput);
        assert!(failure.message.contains("`name`"), "{}", failure.message);
    }

    #[test]
    fn counts_per_instance() {
        mock::reset();
        for expected in 1..=2 {
            let out = invoke::<Component>("count", "{}").expect("a count");
            assert_eq!(out.value, format!(r#"{{"count":{expected}}}"#));
        }
        mock::reset(); // a fresh instance, as a new session gets
        let out = invoke::<Component>("count", "{}").expect("a count");
        assert_eq!(out.value, r#"{"count":1}"#);
    }
}

//! The `python` capability (0.5.0 on): Python expressions evaluated by real
//! CPython, compiled to WebAssembly and run by the host in a sandbox of the
//! calling instance's own, as Robot Framework's `Evaluate` evaluates them (see
//! `wit/0.5.0/python.wit` for the encoding of values). A host without an
//! evaluator answers [`EvaluationError::NoEvaluator`]. In a native build these
//! calls go to [`crate::mock`].

pub use crate::bindings::stephost::plugin::python::{Evaluation, EvaluationError};

host_fn! {
    /// Evaluates `expression` with the RF variables `variables` and the extra
    /// names `namespace` (JSON arrays of `[name, value]` pairs) and `modules`
    /// (comma-separated module names, empty for none).
    python::evaluate(expression: &str, variables: &str, namespace: &str, modules: &str) -> Result<Evaluation, EvaluationError>
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock;

    #[test]
    fn the_mock_has_no_evaluator_until_a_test_installs_one() {
        mock::reset();
        assert_eq!(
            evaluate("1 + 1", "[]", "[]", ""),
            Err(EvaluationError::NoEvaluator(
                "the native mock host has no Python evaluator".into()
            ))
        );

        struct Adds;
        impl mock::MockHost for Adds {
            fn evaluate(
                &mut self,
                expression: &str,
                _variables: &str,
                _namespace: &str,
                _modules: &str,
            ) -> Result<Evaluation, EvaluationError> {
                assert_eq!(expression, "1 + 1");
                Ok(Evaluation {
                    value: "2".into(),
                    truthy: true,
                    changed: "[]".into(),
                })
            }
        }
        mock::install(Adds);
        assert_eq!(evaluate("1 + 1", "[]", "[]", "").unwrap().value, "2");
        mock::reset();
        assert!(matches!(
            evaluate("1 + 1", "[]", "[]", ""),
            Err(EvaluationError::NoEvaluator(_))
        ));
    }
}

//! Evaluator tests against Python's own answers.

use super::*;

fn ev(src: &str) -> Value {
    evaluate(src, &NoVars, &[]).unwrap_or_else(|e| panic!("{src}: {}", e.message()))
}

fn err(src: &str) -> String {
    match evaluate(src, &NoVars, &[]) {
        Ok(v) => panic!("{src} gave {}", v.repr()),
        Err(e) => e.message(),
    }
}

#[test]
fn arithmetic_and_comparisons() {
    assert_eq!(ev("1 + 2 * 3").repr(), "7");
    assert_eq!(ev("7 / 2").repr(), "3.5");
    assert_eq!(ev("-7 // 2").repr(), "-4");
    assert_eq!(ev("-7 % 3").repr(), "2");
    assert_eq!(ev("2 ** 10").repr(), "1024");
    assert_eq!(ev("2 ** -1").repr(), "0.5");
    assert_eq!(ev("-2 ** 2").repr(), "-4");
    assert_eq!(ev("1 < 2 < 3").repr(), "True");
    assert_eq!(ev("1 < 2 > 3").repr(), "False");
    assert_eq!(ev("'a' in 'abc' and 2 not in [1, 3]").repr(), "True");
    assert_eq!(ev("0 or '' or 'x'").repr(), "'x'");
    assert_eq!(ev("'yes' if 1 > 2 else 'no'").repr(), "'no'");
    assert_eq!(ev("None is None").repr(), "True");
}

#[test]
fn literals_and_builtins() {
    assert_eq!(
        ev("[1, 'a', (2,), {'k': None}]").repr(),
        "[1, 'a', (2,), {'k': None}]"
    );
    assert_eq!(ev("len('abc') + int('4') + float('0.5')").repr(), "7.5");
    assert_eq!(ev("str(1.0) + str(True)").repr(), "'1.0True'");
    assert_eq!(ev("sorted([3, 1, 2])").repr(), "[1, 2, 3]");
    assert_eq!(ev("max(1, 5, 3), min([4, 2])").repr(), "(5, 2)");
    assert_eq!(ev("sum([1, 2, 3])").repr(), "6");
    assert_eq!(ev("round(2.675, 2)").repr(), "2.67");
    assert_eq!(ev("[x * 2 for x in range(4) if x % 2]").repr(), "[2, 6]");
    assert_eq!(ev("{k: v for k, v in [('a', 1)]}").repr(), "{'a': 1}");
    assert_eq!(ev("'a,b'.split(',')").repr(), "['a', 'b']");
    assert_eq!(ev("'-'.join(['a', 'b']).upper()").repr(), "'A-B'");
    assert_eq!(
        ev("'{} is {:.1f}'.format('pi', 3.14159)").repr(),
        "'pi is 3.1'"
    );
    assert_eq!(
        ev("'abcdef'[1:4], 'abc'[::-1], [1, 2, 3][-1]").repr(),
        "('bcd', 'cba', 3)"
    );
    assert_eq!(ev("type(1.5).__name__").repr(), "'float'");
    assert_eq!(ev("isinstance(1, (int, float))").repr(), "True");
    assert_eq!(ev("'%s=%d' % ('a', 1)").repr(), "'a=1'");
}

#[test]
fn errors_read_like_python() {
    assert_eq!(err("1/0"), "ZeroDivisionError: division by zero");
    assert_eq!(err("1.0/0"), "ZeroDivisionError: float division by zero");
    assert_eq!(
        err("'a' + 1"),
        "TypeError: can only concatenate str (not \"int\") to str"
    );
    assert_eq!(
        err("1 + 'a'"),
        "TypeError: unsupported operand type(s) for +: 'int' and 'str'"
    );
    assert_eq!(err("[1][5]"), "IndexError: list index out of range");
    assert_eq!(err("{'a': 1}['b']"), "KeyError: 'b'");
    assert_eq!(
        err("foo + 1"),
        "NameError: name 'foo' is not defined nor importable as module"
    );
    assert_eq!(err("1 +"), "SyntaxError: invalid syntax (<string>, line 1)");
    assert_eq!(
        err("len(5)"),
        "TypeError: object of type 'int' has no len()"
    );
    assert_eq!(
        err("int('x')"),
        "ValueError: invalid literal for int() with base 10: 'x'"
    );
    assert_eq!(
        err("1 < 'a'"),
        "TypeError: '<' not supported between instances of 'int' and 'str'"
    );
    assert_eq!(
        err("'a'.foo()"),
        "AttributeError: 'str' object has no attribute 'foo'"
    );
    assert_eq!(
        err("__import__('os')"),
        "NameError: name '__import__' is not defined nor importable as module"
    );
}

#[test]
fn variables_and_locals() {
    struct One;
    impl Vars for One {
        fn dollar(&self, name: &str) -> Result<Value, String> {
            match name {
                "x" => Ok(Value::Int(5)),
                _ => Err(format!("Variable '${name}' not found.")),
            }
        }
    }
    assert_eq!(evaluate("$x * 2", &One, &[]).unwrap().repr(), "10");
    assert_eq!(
        evaluate("$y", &One, &[]).unwrap_err().message(),
        "Variable '$y' not found."
    );
    let locals = [("_BASE_VAR_".to_string(), Value::str("abc"))];
    assert_eq!(
        evaluate("_BASE_VAR_.upper()", &One, &locals)
            .unwrap()
            .repr(),
        "'ABC'"
    );
}

#[test]
fn literal_eval_accepts_only_literals() {
    assert_eq!(literal_eval("[1, -2, 'x']").unwrap().repr(), "[1, -2, 'x']");
    assert_eq!(
        literal_eval("{'a': (1, 2)}").unwrap().repr(),
        "{'a': (1, 2)}"
    );
    assert_eq!(literal_eval("abc").unwrap_err(), "Invalid expression.");
    assert_eq!(literal_eval("1 + 2").unwrap_err(), "Invalid expression.");
}

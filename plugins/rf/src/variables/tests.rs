//! Variable substitution tests; expected values are Robot Framework's.

use super::*;

fn store() -> Store {
    let mut s = Store::new();
    s.set("name", Value::str("Ada"));
    s.set("n", Value::Int(3));
    s.set(
        "list",
        Value::list(vec![Value::str("a"), Value::str("b"), Value::str("c")]),
    );
    s.set(
        "dict",
        Value::dict(
            vec![
                (Value::str("key"), Value::str("v")),
                (Value::str("n"), Value::Int(1)),
            ],
            true,
        ),
    );
    s
}

fn scalar(s: &Store, text: &str) -> Value {
    s.replace_scalar(&Arg::Raw(text.into()))
        .unwrap_or_else(|e| panic!("{text}: {}", e.message))
}

fn error(s: &Store, text: &str) -> String {
    match s.replace_scalar(&Arg::Raw(text.into())) {
        Ok(v) => panic!("{text} gave {}", v.repr()),
        Err(e) => e.message,
    }
}

#[test]
fn scalars_keep_their_type_and_text_interpolates() {
    let s = store();
    assert_eq!(scalar(&s, "${n}").repr(), "3");
    assert_eq!(scalar(&s, "n=${n}").repr(), "'n=3'");
    assert_eq!(scalar(&s, "${NAME}").repr(), "'Ada'");
    assert_eq!(scalar(&s, "${N_A_M_E}").repr(), "'Ada'");
    assert_eq!(scalar(&s, "${list}").repr(), "['a', 'b', 'c']");
    assert_eq!(scalar(&s, "x${list}").repr(), "\"x['a', 'b', 'c']\"");
    assert_eq!(scalar(&s, "\\${name}").repr(), "'${name}'");
}

#[test]
fn builtins_numbers_and_empty() {
    let s = store();
    assert_eq!(scalar(&s, "${5}").repr(), "5");
    assert_eq!(scalar(&s, "${-1.5}").repr(), "-1.5");
    assert_eq!(scalar(&s, "${0x1F}").repr(), "31");
    assert_eq!(scalar(&s, "${True}").repr(), "True");
    assert_eq!(scalar(&s, "${None}").repr(), "None");
    assert_eq!(scalar(&s, "${EMPTY}").repr(), "''");
    assert_eq!(scalar(&s, "a${SPACE}b").repr(), "'a b'");
    assert_eq!(scalar(&s, "@{EMPTY}").repr(), "[]");
}

#[test]
fn items_slices_and_extended_syntax() {
    let s = store();
    assert_eq!(scalar(&s, "${list}[0]").repr(), "'a'");
    assert_eq!(scalar(&s, "${list}[-1]").repr(), "'c'");
    assert_eq!(scalar(&s, "${list}[1:]").repr(), "['b', 'c']");
    assert_eq!(scalar(&s, "${dict}[key]").repr(), "'v'");
    assert_eq!(scalar(&s, "${list}[${1}]").repr(), "'b'");
    assert_eq!(scalar(&s, "${dict.key}").repr(), "'v'");
    assert_eq!(scalar(&s, "${name.upper()}").repr(), "'ADA'");
    assert_eq!(scalar(&s, "${n + 1}").repr(), "4");
    assert_eq!(scalar(&s, "${{ $n * 2 }}").repr(), "6");
    assert_eq!(scalar(&s, "${SPACE * 3}").repr(), "'   '");
}

#[test]
fn errors_are_rfs() {
    let s = store();
    assert_eq!(error(&s, "${zzz}"), "Variable '${zzz}' not found.");
    assert_eq!(
        error(&s, "${nme}"),
        "Variable '${nme}' not found. Did you mean:\n    ${name}"
    );
    assert_eq!(
        error(&s, "${list}[5]"),
        "List '${list}' has no item in index 5."
    );
    assert_eq!(
        error(&s, "${dict}[nope]"),
        "Dictionary '${dict}' has no key 'nope'."
    );
    assert_eq!(
        error(&s, "${list}[x]"),
        "List '${list}' used with invalid index 'x'. To use '[x]' as a literal value, it needs to be escaped like '\\[x]'."
    );
    assert_eq!(
        error(&s, "${n}[0]"),
        "Variable '${n}' is integer, which is not subscriptable, and thus accessing item '0' from it is not possible. To use '[0]' as a literal value, it needs to be escaped like '\\[0]'."
    );
    assert_eq!(
        error(&s, "@{name}"),
        "Value of variable '@{name}' is not list or list-like."
    );
    assert_eq!(error(&s, "${x"), "Variable '${x' was not closed properly.");
}

#[test]
fn lists_expand() {
    let s = store();
    let args = [Arg::Raw("@{list}".into()), Arg::Raw("x".into())];
    let values = s.replace_list(&args).unwrap();
    assert_eq!(Value::list(values).repr(), "['a', 'b', 'c', 'x']");
    let until = s
        .replace_list_until(&[Arg::Raw("${n}".into()), Arg::Raw("${nope}".into())], 1)
        .unwrap();
    assert!(matches!(&until[1], Arg::Raw(r) if r == "${nope}"));
}

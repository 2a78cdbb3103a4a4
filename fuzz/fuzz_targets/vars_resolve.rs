//! `vars_resolve`: the `${...}` scanner and resolver (`parse_template`, `resolve`,
//! `collect_refs`, `escape`) on arbitrary strings and JSON, with a scope that
//! answers values, unavailable steps and unknown names.
//!
//! Besides "no panic", it checks that parsing loses nothing (the parts spell the
//! input again), that every reference re-parses to itself, that a reference never
//! starts right after an escaping backslash, that text without `${` and escaped
//! text come back unchanged, and that spliced values are never scanned again.

#![no_main]

use std::collections::BTreeMap;

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use stephost_batch::vars::{
    self, Lookup, Part, Scope, UnknownPolicy, VarError, collect_refs, escape, parse_template,
    resolve,
};
use stephost_fuzz::check::Nothing;
use stephost_fuzz::{POLICIES, json};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    strings(&text);
    let mut u = Unstructured::new(data);
    let _ = structured(&mut u);
});

/// Invariants on one string, under both policies.
fn strings(s: &str) {
    for policy in POLICIES {
        let template = parse_template(s, policy);
        if policy == UnknownPolicy::PassThrough {
            assert!(template.is_ok(), "PassThrough never fails to parse {s:?}");
        }
        if !s.contains("${") {
            let t = template.as_ref().expect("text without `${` parses");
            assert!(t.is_literal(), "{s:?} has no reference");
            let expected = if s.is_empty() {
                vec![]
            } else {
                vec![Part::Text(s.to_owned())]
            };
            assert_eq!(t.parts, expected, "{s:?} is one text part");
            assert_eq!(
                resolve(&json!(s), &Nothing, policy),
                Ok(json!(s)),
                "{s:?} resolves to itself"
            );
        }
        if let Ok(t) = &template {
            spell_again(s, &t.parts, policy);
            for r in t.refs() {
                let again = parse_template(&r.source, policy)
                    .unwrap_or_else(|e| panic!("`{}` from {s:?} does not re-parse: {e}", r.source));
                assert_eq!(
                    again.whole_ref(),
                    Some(r),
                    "`{}` re-parses to itself",
                    r.source
                );
            }
        }
        let from_parse = template.map(|t| t.refs().cloned().collect::<Vec<_>>());
        let from_collect = collect_refs(&json!(s), policy)
            .map(|v| v.into_iter().map(|(_, r)| r).collect::<Vec<_>>())
            .map_err(|(_, e)| e);
        assert_eq!(
            from_parse, from_collect,
            "collect_refs agrees with parse_template on {s:?}"
        );

        // Splicing is concatenation and is never scanned again; a whole reference
        // is the value itself.
        let scope = FuzzScope {
            steps: vec![Slot::Done(json!(s))],
            names: BTreeMap::from([("v".to_owned(), json!(s))]),
        };
        for r in ["${v}", "${STEP_1}"] {
            assert_eq!(resolve(&json!(r), &scope, policy), Ok(json!(s)));
            assert_eq!(
                resolve(&json!(format!("<{r}>")), &scope, policy),
                Ok(json!(format!("<{s}>"))),
                "splicing {s:?}"
            );
        }
        match resolve(&json!(s), &Nothing, UnknownPolicy::PassThrough) {
            Ok(out) => assert_eq!(out, json!(s), "PassThrough with an empty scope keeps {s:?}"),
            Err(e) => assert!(matches!(e, VarError::UnknownStep { .. }), "{s:?}: {e}"),
        }
    }
    assert_eq!(
        resolve(&json!(escape(s)), &Nothing, UnknownPolicy::Reject),
        Ok(json!(s)),
        "escaped {s:?} comes back literally"
    );
}

/// The parts spell the input again (text escaped under Reject, references as
/// written), and no reference starts right after a backslash: `\${` is an escape
/// under Reject and stays as written under PassThrough.
fn spell_again(s: &str, parts: &[Part], policy: UnknownPolicy) {
    let mut spelled = String::new();
    for part in parts {
        match part {
            Part::Text(text) if policy == UnknownPolicy::Reject => spelled.push_str(&escape(text)),
            Part::Text(text) => spelled.push_str(text),
            Part::Ref(r) => {
                assert!(
                    !spelled.ends_with('\\'),
                    "{policy:?}: `{}` in {s:?} follows a backslash, so it is escaped, not a reference",
                    r.source
                );
                spelled.push_str(&r.source);
            }
        }
    }
    assert_eq!(spelled, s, "{policy:?}: the parts of {s:?} spell it again");
}

enum Slot {
    Done(Value),
    Unavailable(String),
}

/// A scope with fuzz-chosen step results and variables.
struct FuzzScope {
    steps: Vec<Slot>,
    names: BTreeMap<String, Value>,
}

impl Scope for FuzzScope {
    fn step(&self, index: usize) -> Lookup<'_> {
        match self.steps.get(index) {
            Some(Slot::Done(v)) => Lookup::Value(v),
            Some(Slot::Unavailable(why)) => Lookup::Unavailable(why.clone()),
            None => Lookup::Unknown,
        }
    }

    fn name(&self, name: &str) -> Lookup<'_> {
        self.names.get(name).map_or(Lookup::Unknown, Lookup::Value)
    }
}

/// Resolves a fuzz-built value against a fuzz-built scope.
fn structured(u: &mut Unstructured<'_>) -> Result<()> {
    let mut steps = Vec::new();
    for _ in 0..u.int_in_range(0..=4)? {
        steps.push(if u.ratio(3, 4)? {
            Slot::Done(json::value(u, 4)?)
        } else {
            Slot::Unavailable(json::string(u)?)
        });
    }
    let mut names = BTreeMap::new();
    for _ in 0..u.int_in_range(0..=4)? {
        let name = json::name(u)?;
        names.insert(name, json::value(u, 4)?);
    }
    let scope = FuzzScope { steps, names };
    let value = json::value(u, 5)?;
    for policy in POLICIES {
        let resolved = resolve(&value, &scope, policy);
        if !vars::contains_refs(&value) {
            assert_eq!(
                resolved.as_ref(),
                Ok(&value),
                "a value without `${{` is unchanged"
            );
        }
        if let Err(e) = &resolved {
            let _ = e.display_with("step 1", "input").to_string();
            let _ = (e.reference(), e.at(), e.problem(), e.field_path("input"));
        }
        if let Ok(refs) = collect_refs(&value, policy) {
            for (_, r) in refs {
                let _ = (r.to_string(), r.step_index());
            }
        }
    }
    if let Value::String(s) = &value {
        strings(s);
    }
    Ok(())
}

//! run_macro end to end below the runtime: arguments mapped, planned against a
//! catalog with the desktop and browser plugins' verbs, run on a scripted
//! executor, and rendered in desktop-touch's shape.

use std::future::Future;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use stephost_contract::{
    CallBudget, CallOutcome, Content, Failure, FailureCode, Output, PluginSpec, Proposal,
};
use tokio_util::sync::CancellationToken;

use super::render::{Label, page_code, user_problem};
use super::tools::{Kind, TOOLS, combo, role};
use super::*;
use crate::{Executor, NoObserver, PlanContext, RunOptions, UnknownPolicy, Vars};

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn catalog() -> Catalog {
    crate::testing::desktop_catalog()
}

/// The batch a macro maps to, or its problems.
fn batch(v: Value) -> Result<Value, Vec<Problem>> {
    RunMacro.to_batch(&args(v), &catalog(), &Limits::default())
}

/// The calls of a macro as (label, verb, input).
fn calls(v: Value) -> Vec<(String, String, Value)> {
    let b = match batch(v) {
        Ok(b) => b,
        Err(p) => panic!("the macro maps: {p:#?}"),
    };
    b["steps"]
        .as_array()
        .map(|steps| {
            steps
                .iter()
                .map(|s| {
                    (
                        s["label"].as_str().unwrap_or_default().to_owned(),
                        s["verb"].as_str().unwrap_or_default().to_owned(),
                        s["input"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The problems of a macro that does not map.
fn problems(v: Value) -> Vec<Problem> {
    match batch(v) {
        Ok(b) => panic!("the macro should be refused, got {b:#}"),
        Err(p) => p,
    }
}

fn one_step(tool: &str, params: Value) -> Value {
    json!({"steps": [{"tool": tool, "params": params}]})
}

/// The only own call of a one-step macro: (verb, input).
fn own_call(tool: &str, params: Value) -> (String, Value) {
    let all = calls(one_step(tool, params));
    let own: Vec<_> = all
        .into_iter()
        .filter(|(label, _, _)| Label::parse(label).is_some_and(|l| l.helper.is_none()))
        .collect();
    assert_eq!(own.len(), 1, "{tool}: one own call");
    let (_, verb, input) = own.into_iter().next().unwrap_or_default();
    (verb, input)
}

/// Answers calls like the real plugins would, failing the verbs in `fail`.
struct Scripted {
    fail: Vec<(&'static str, FailureCode, &'static str)>,
    seen: Vec<(String, Value)>,
}

impl Scripted {
    fn new() -> Self {
        Self {
            fail: Vec::new(),
            seen: Vec::new(),
        }
    }

    fn failing(verb: &'static str, code: FailureCode, message: &'static str) -> Self {
        Self {
            fail: vec![(verb, code, message)],
            seen: Vec::new(),
        }
    }

    /// The failure scripted for `verb`, if any.
    fn failure(&self, verb: &str) -> Option<Failure> {
        let (_, code, message) = self.fail.iter().find(|(v, _, _)| *v == verb)?;
        Some(Failure {
            code: code.clone(),
            message: (*message).to_owned(),
            input_fired: false,
            details: None,
            proposal: Proposal::default(),
        })
    }

    fn answer(&self, verb: &str, input: &Value) -> Output {
        let text = |value: Value| Output {
            value: value.to_string(),
            content: vec![Content::Text(format!("{verb} done"))],
        };
        match verb {
            "tabs_context" => {
                text(json!({"tabs": [{"tabId": 3, "title": "", "url": "about:blank"}]}))
            }
            "sleep" => text(json!({"slept_ms": input["ms"]})),
            "screenshot" => Output {
                value: json!({"detail": input.get("detail")}).to_string(),
                content: vec![
                    Content::Text("screenshot of the window".into()),
                    Content::Image {
                        mime: "image/png".into(),
                        data: vec![1, 2, 3],
                    },
                ],
            },
            "javascript_tool" => {
                let code = input["text"].as_str().unwrap_or_default();
                let result = if code.contains("__dtm.aim(") {
                    json!([10, 20])
                } else {
                    json!({"total": 1, "results": []})
                };
                Output {
                    value: json!({"tabId": input["tabId"], "result": result}).to_string(),
                    content: Vec::new(),
                }
            }
            _ => text(json!({"verb": verb, "input": input})),
        }
    }
}

impl Executor for Scripted {
    fn call(
        &mut self,
        _plugin: &Arc<PluginSpec>,
        verb: &str,
        input: &str,
        _budget: &CallBudget,
    ) -> impl Future<Output = CallOutcome> + Send {
        let input: Value = serde_json::from_str(input).unwrap_or(Value::Null);
        let result = match self.failure(verb) {
            Some(f) => Err(f),
            None => Ok(self.answer(verb, &input)),
        };
        self.seen.push((verb.to_owned(), input));
        std::future::ready(CallOutcome {
            result: Ok(result),
            logs: Vec::new(),
            logs_dropped: 0,
            denied: Vec::new(),
            instance_dropped: false,
            time_ran_out: false,
        })
    }
}

/// Runs a macro as the server does; its structured result, content, and the
/// calls the plugins saw.
async fn run(v: Value, mut exec: Scripted) -> (Value, Vec<ContentItem>, Vec<(String, Value)>) {
    let a = args(v);
    let catalog = catalog();
    let limits = Limits::default();
    let report = match RunMacro.to_batch(&a, &catalog, &limits) {
        Ok(batch) => {
            let ctx = PlanContext {
                catalog: &catalog,
                limits: &limits,
                session_vars: &|_| false,
                policy: UnknownPolicy::Reject,
            };
            match crate::plan(&batch, &ctx) {
                Ok(plan) => {
                    let opts = RunOptions {
                        limits: &limits,
                        observer: &NoObserver,
                        cancel: CancellationToken::new(),
                        batch_id: "b-test".into(),
                        session_id: Some("s-test".into()),
                    };
                    crate::run(&plan, &mut Vars::default(), &mut exec, &opts).await
                }
                Err(p) => Report::invalid("b-test".into(), None, RunMacro.entry_count(&a), p),
            }
        }
        Err(p) => Report::invalid("b-test".into(), None, RunMacro.entry_count(&a), p),
    };
    let structured = RunMacro.render_call(&a, &report);
    let content = RunMacro.content(&report, &structured).unwrap_or_default();
    (structured, content, exec.seen)
}

/// A scope that knows no step and no name.
struct Nothing;

impl crate::vars::Scope for Nothing {
    fn step(&self, _index: usize) -> crate::vars::Lookup<'_> {
        crate::vars::Lookup::Unknown
    }

    fn name(&self, _name: &str) -> crate::vars::Lookup<'_> {
        crate::vars::Lookup::Unknown
    }
}

fn seed_one() -> Value {
    json!({"steps": [
        {"tool": "focus_window", "params": {"windowTitle": "Notepad"}},
        {"tool": "sleep", "params": {"ms": 300}},
        {"tool": "keyboard", "params": {"action": "type", "text": "Hello"}},
        {"tool": "screenshot", "params": {"detail": "text", "windowTitle": "Notepad"}}
    ]})
}

fn seed_two() -> Value {
    json!({"steps": [
        {"tool": "browser_navigate", "params": {"url": "https://example.com"}},
        {"tool": "wait_until", "params": {"condition": "element_matches", "target": {"by": "text", "pattern": "Example Domain"}}}
    ]})
}

#[test]
fn the_first_seed_example_maps_onto_desktop_verbs() {
    let c = calls(seed_one());
    let summary: Vec<(&str, &str)> = c.iter().map(|(l, v, _)| (l.as_str(), v.as_str())).collect();
    assert_eq!(
        summary,
        [
            ("steps[0] focus_window", "focus_window"),
            ("steps[1] sleep", "sleep"),
            ("steps[2] keyboard", "type"),
            ("steps[3] screenshot", "screenshot"),
        ]
    );
    assert_eq!(c[0].2, json!({"windowTitle": "Notepad"}));
    assert_eq!(c[1].2, json!({"ms": 300}));
    assert_eq!(
        c[2].2,
        json!({"text": "Hello"}),
        "no window: the focused one"
    );
    assert_eq!(c[3].2, json!({"windowTitle": "Notepad", "detail": "text"}));
}

#[tokio::test]
async fn the_first_seed_example_runs_and_reports_desktop_touchs_shape() {
    let (out, content, seen) = run(seed_one(), Scripted::new()).await;
    assert_eq!(seen.len(), 4);
    assert_eq!(out["steps_total"], 4);
    assert_eq!(out["steps_completed"], 4);
    assert_eq!(out["status"], "passed");
    assert!(out.get("warnings").is_none(), "{out:#}");
    let results = out["results"].as_array().cloned().unwrap_or_default();
    let steps: Vec<&Value> = results.iter().map(|r| &r["step"]).collect();
    assert_eq!(
        steps,
        [&json!(0), &json!(1), &json!(2), &json!(3)],
        "0-based"
    );
    for (r, tool) in results
        .iter()
        .zip(["focus_window", "sleep", "keyboard", "screenshot"])
    {
        assert_eq!(r["tool"], tool);
        assert_eq!(r["ok"], true);
        assert!(r["text"].is_array(), "{r}");
        assert!(r.get("error").is_none() && r.get("code").is_none());
    }
    assert_eq!(results[1]["text"], json!(["slept 300ms"]));
    let typed: Value = serde_json::from_str(results[2]["text"][0].as_str().unwrap_or("null"))
        .unwrap_or(Value::Null);
    assert_eq!(typed["input"]["text"], "Hello");
    // The JSON first, then the image and the step that took it (0-based).
    match content.as_slice() {
        [
            ContentItem::Text { text },
            ContentItem::Image { label, .. },
            ContentItem::Text { text: after },
        ] => {
            let parsed: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            assert_eq!(parsed["steps_completed"], 4);
            assert_eq!(label, "step 3: screenshot");
            assert_eq!(after, "[step 3: screenshot]");
        }
        other => panic!("unexpected content {other:?}"),
    }
}

#[test]
fn the_second_seed_example_maps_onto_browser_verbs_on_the_first_tab() {
    let c = calls(seed_two());
    let summary: Vec<(&str, &str)> = c.iter().map(|(l, v, _)| (l.as_str(), v.as_str())).collect();
    assert_eq!(
        summary,
        [
            ("steps[0] browser_navigate (first tab)", "tabs_context"),
            ("steps[0] browser_navigate", "navigate"),
            ("steps[1] wait_until", "wait_for_page"),
        ]
    );
    assert_eq!(
        c[1].2,
        json!({"tabId": "${STEP_1.tabs[0].tabId}", "url": "https://example.com"})
    );
    assert_eq!(
        c[2].2,
        json!({"tabId": "${STEP_1.tabs[0].tabId}", "condition": "appears", "by": "text",
               "pattern": "Example Domain", "timeout_ms": 5000, "interval_ms": 200})
    );
}

#[tokio::test]
async fn the_second_seed_example_runs_on_the_listed_tab_and_hides_the_listing() {
    let (out, _, seen) = run(seed_two(), Scripted::new()).await;
    assert_eq!(out["status"], "passed", "{out:#}");
    assert_eq!(seen[1].1["tabId"], 3, "the first tab's id was passed on");
    assert_eq!(seen[2].1["tabId"], 3);
    assert_eq!(out["steps_total"], 2);
    assert_eq!(out["steps_completed"], 2);
    let tools: Vec<&Value> = out["results"]
        .as_array()
        .map(|r| r.iter().map(|r| &r["tool"]).collect())
        .unwrap_or_default();
    assert_eq!(tools, [&json!("browser_navigate"), &json!("wait_until")]);
}

/// A sample call of every mapped tool: (tool, params, own verb, input it gets).
fn samples() -> Vec<(&'static str, Value, &'static str, Value)> {
    vec![
        ("sleep", json!({"ms": 50}), "sleep", json!({"ms": 50})),
        ("sleep", json!({}), "sleep", json!({"ms": 0})),
        (
            "screenshot",
            json!({"windowTitle": "Editor"}),
            "screenshot",
            json!({"windowTitle": "Editor", "detail": "meta"}),
        ),
        (
            "screenshot",
            json!({"displayId": 1}),
            "screenshot",
            json!({"monitor": 1, "detail": "image"}),
        ),
        (
            "screenshot",
            json!({"region": {"x": 1, "y": 2, "width": 30, "height": 40}, "dotByDot": true, "webpQuality": 80}),
            "screenshot",
            json!({"region": {"x": 1, "y": 2, "width": 30, "height": 40}, "detail": "image"}),
        ),
        (
            "screenshot",
            json!({"target": "Editor"}),
            "screenshot",
            json!({"target": "Editor"}),
        ),
        (
            "screenshot",
            json!({"hwnd": "0x1a00003", "detail": "image"}),
            "screenshot",
            json!({"target": {"id": 0x1a00003}, "detail": "image"}),
        ),
        (
            "mouse_click",
            json!({"x": 10.4, "y": "20", "windowTitle": "Editor", "button": "right", "doubleClick": true, "verifyDelivery": false}),
            "click",
            json!({"x": 10, "y": 20, "button": "right", "count": 2, "windowTitle": "Editor"}),
        ),
        (
            "mouse_click",
            json!({"x": 10, "y": 20, "origin": {"x": 100, "y": 200}, "scale": 0.5, "tripleClick": "true"}),
            "click",
            json!({"x": 120, "y": 240, "count": 3}),
        ),
        (
            "mouse_drag",
            json!({"startX": 1, "startY": 2, "endX": 3, "endY": 4, "allowCrossWindowDrag": true}),
            "drag",
            json!({"from_x": 1, "from_y": 2, "to_x": 3, "to_y": 4}),
        ),
        (
            "click_element",
            json!({"windowTitle": "Editor", "name": "Save", "controlType": "Button"}),
            "press",
            json!({"windowTitle": "Editor", "name": "Save", "role": "push button"}),
        ),
        (
            "focus_window",
            json!({"title": "Editor", "forceFocus": true}),
            "focus_window",
            json!({"title": "Editor"}),
        ),
        (
            "focus_window",
            json!({"windowTitle": "Editor"}),
            "focus_window",
            json!({"windowTitle": "Editor"}),
        ),
        (
            "keyboard",
            json!({"action": "type", "text": "hi", "windowTitle": "Editor", "use_clipboard": true}),
            "type",
            json!({"text": "hi", "windowTitle": "Editor"}),
        ),
        (
            "keyboard",
            json!({"action": "press", "keys": "lctrl+s"}),
            "key",
            json!({"combo": "ctrl+s"}),
        ),
        (
            "keyboard",
            json!({"action": "sequence", "steps": [{"keys": "alt+f"}, {"keys": "s"}]}),
            "key",
            json!({"combo": "s"}),
        ),
        (
            "scroll",
            json!({"action": "raw", "direction": "up", "amount": 5, "x": 100, "y": 200}),
            "scroll",
            json!({"dy": -5, "x": 100, "y": 200}),
        ),
        (
            "scroll",
            json!({"direction": "right", "x": 1, "y": 2}),
            "scroll",
            json!({"dx": 3, "x": 1, "y": 2}),
        ),
        (
            "scroll",
            json!({"x": 1, "y": 2, "dy": 4}),
            "scroll",
            json!({"x": 1, "y": 2, "dy": 4}),
        ),
        (
            "wait_until",
            json!({"condition": "window_appears", "target": {"windowTitle": "Save As"}, "timeoutMs": 10000}),
            "wait_for",
            json!({"condition": "window_appears", "windowTitle": "Save As", "timeout_ms": 10000}),
        ),
        (
            "wait_until",
            json!({"condition": "window_disappears", "target": "{\"windowTitle\": \"Dialog\"}"}),
            "wait_for",
            json!({"condition": "window_gone", "windowTitle": "Dialog", "timeout_ms": 5000}),
        ),
        (
            "wait_until",
            json!({"condition": "ready_state", "target": {"windowTitle": "Editor"}}),
            "wait_for",
            json!({"condition": "window_appears", "windowTitle": "Editor", "timeout_ms": 5000}),
        ),
        (
            "wait_until",
            json!({"condition": "element_appears", "target": {"windowTitle": "Editor", "elementName": "OK"}}),
            "wait_for",
            json!({"condition": "element_appears", "windowTitle": "Editor", "element": {"name": "OK"}, "timeout_ms": 5000}),
        ),
        (
            "wait_until",
            json!({"condition": "value_changes", "target": {"windowTitle": "Editor", "elementName": "Field"}}),
            "wait_for",
            json!({"condition": "value_changes", "windowTitle": "Editor", "element": {"name": "Field"}, "timeout_ms": 5000}),
        ),
        (
            "wait_until",
            json!({"condition": "url_matches", "target": {"pattern": "/done", "regex": true, "tabId": "2"}}),
            "wait_for_page",
            json!({"condition": "url_matches", "pattern": "/done", "regex": true, "tabId": 2, "timeout_ms": 5000, "interval_ms": 200}),
        ),
        (
            "wait_until",
            json!({"condition": "window_appears", "target": "Editor", "timeout_ms": 100}),
            "wait_for",
            json!({"condition": "window_appears", "target": "Editor", "timeout_ms": 100}),
        ),
        ("get_windows", json!({}), "list_windows", json!({})),
        (
            "desktop_state",
            json!({"includeCursor": true}),
            "list_windows",
            json!({}),
        ),
        (
            "get_ui_elements",
            json!({"windowTitle": "Editor", "maxDepth": 6}),
            "ui_elements",
            json!({"windowTitle": "Editor", "max_depth": 6, "max_elements": 80}),
        ),
        (
            "set_element_value",
            json!({"windowTitle": "Editor", "name": "Search", "value": "x"}),
            "set_text",
            json!({"windowTitle": "Editor", "name": "Search", "text": "x"}),
        ),
        (
            "browser_open",
            json!({"port": 9222, "launch": {}}),
            "tabs_context",
            json!({}),
        ),
        (
            "browser_navigate",
            json!({"url": "http://localhost:1/", "tabId": 2, "waitForLoad": false}),
            "navigate",
            json!({"tabId": 2, "url": "http://localhost:1/"}),
        ),
    ]
}

#[test]
fn every_mapped_tool_reaches_its_verb_with_our_parameter_names() {
    for (tool, params, verb, input) in samples() {
        let (got_verb, got_input) = own_call(tool, params.clone());
        assert_eq!(got_verb, verb, "{tool} {params}");
        assert_eq!(got_input, input, "{tool} {params}");
    }
    // The JavaScript-backed browser tools: each runs its page entry.
    for (tool, params, entry) in [
        (
            "browser_eval",
            json!({"action": "dom", "selector": "main"}),
            "__dtm.dom(",
        ),
        (
            "browser_eval",
            json!({"action": "appState"}),
            "__dtm.appState(",
        ),
        (
            "browser_search",
            json!({"by": "text", "pattern": "More"}),
            "__dtm.search(",
        ),
        (
            "browser_overview",
            json!({"types": ["link"]}),
            "__dtm.overview(",
        ),
        ("browser_locate", json!({"selector": "h1"}), "__dtm.locate("),
        (
            "browser_fill",
            json!({"selector": "#q", "value": "x"}),
            "__dtm.fill(",
        ),
        ("browser_form", json!({"selector": "form"}), "__dtm.form("),
        (
            "scroll",
            json!({"action": "to_element", "selector": "#end"}),
            "__dtm.scrollTo(",
        ),
    ] {
        let (verb, input) = own_call(tool, params);
        assert_eq!(verb, "javascript_tool", "{tool}");
        assert!(
            input["text"].as_str().is_some_and(|t| t.contains(entry)),
            "{tool}: {input}"
        );
    }
    let (verb, input) = own_call(
        "browser_eval",
        json!({"action": "js", "expression": "document.title"}),
    );
    assert_eq!(verb, "javascript_tool");
    assert!(
        input["text"]
            .as_str()
            .is_some_and(|t| t.contains("\"document.title\""))
    );
    // Every mapped tool of the table has a sample here.
    let sampled: Vec<&str> = samples()
        .iter()
        .map(|(t, ..)| *t)
        .chain([
            "browser_eval",
            "browser_search",
            "browser_overview",
            "browser_locate",
            "browser_fill",
            "browser_form",
            "browser_click",
        ])
        .collect();
    for t in TOOLS {
        if matches!(t.kind, Kind::Maps { .. }) {
            assert!(sampled.contains(&t.name), "no sample for {}", t.name);
        }
    }
}

#[test]
fn browser_open_lists_the_tabs_later_steps_take_the_first_of() {
    let c = calls(json!({"steps": [
        {"tool": "browser_open", "params": {}},
        {"tool": "browser_navigate", "params": {"url": "about:blank"}}
    ]}));
    let verbs: Vec<&str> = c.iter().map(|(_, v, _)| v.as_str()).collect();
    assert_eq!(verbs, ["tabs_context", "navigate"]);
    assert_eq!(c[1].2["tabId"], "${STEP_1.tabs[0].tabId}");
}

#[test]
fn a_browser_click_aims_with_a_script_and_clicks_the_point_it_returns() {
    let c = calls(one_step(
        "browser_click",
        json!({"by": "text", "pattern": "More", "tabId": 1}),
    ));
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].0, "steps[0] browser_click (aim)");
    assert_eq!(c[0].1, "javascript_tool");
    assert_eq!(c[1].1, "computer");
    assert_eq!(
        c[1].2,
        json!({"tabId": 1, "action": "left_click", "coordinate": "${STEP_1.result}"})
    );
}

#[tokio::test]
async fn a_browser_click_reports_one_step_with_the_clicks_result() {
    let v = json!({"steps": [
        {"tool": "sleep", "params": {"ms": 0}},
        {"tool": "browser_click", "params": {"selector": "#go"}}
    ]});
    let (out, _, seen) = run(v, Scripted::new()).await;
    assert_eq!(out["status"], "passed", "{out:#}");
    let verbs: Vec<&str> = seen.iter().map(|(v, _)| v.as_str()).collect();
    assert_eq!(
        verbs,
        ["sleep", "tabs_context", "javascript_tool", "computer"]
    );
    assert_eq!(seen[3].1["coordinate"], json!([10, 20]));
    assert_eq!(out["results"].as_array().map(Vec::len), Some(2));
    assert_eq!(out["results"][1]["step"], 1);
}

#[test]
fn keyboard_sequences_and_replace_all_become_several_calls() {
    let c = calls(one_step(
        "keyboard",
        json!({"action": "sequence", "windowTitle": "Editor",
               "steps": [{"keys": "alt+f", "gapMs": 100}, {"keys": "s", "gapMs": 0}, {"keys": "Return"}]}),
    ));
    let summary: Vec<(&str, &str)> = c.iter().map(|(l, v, _)| (l.as_str(), v.as_str())).collect();
    assert_eq!(
        summary,
        [
            ("steps[0] keyboard (earlier key)", "key"),
            ("steps[0] keyboard (gap)", "sleep"),
            ("steps[0] keyboard (earlier key)", "key"),
            ("steps[0] keyboard", "key"),
        ]
    );
    assert_eq!(c[0].2, json!({"combo": "alt+f", "windowTitle": "Editor"}));
    assert_eq!(c[1].2, json!({"ms": 100}));
    let c = calls(one_step(
        "keyboard",
        json!({"action": "type", "text": "x", "replaceAll": true}),
    ));
    assert_eq!(c[0].0, "steps[0] keyboard (select all)");
    assert_eq!(c[0].2, json!({"combo": "ctrl+a"}));
    assert_eq!(c[1].1, "type");
    let p = problems(one_step(
        "keyboard",
        json!({"action": "sequence", "steps": [{"keys": "a", "holdMs": 50, "gapMs": 2000}, {"keys": "b", "gapMs": 2000},
               {"keys": "c", "gapMs": 2000}, {"keys": "d"}]}),
    ));
    let fields: Vec<&str> = p.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(
        fields,
        ["steps[0].params.steps[0].holdMs", "steps[0].params.steps"]
    );
}

#[test]
fn windows_only_tools_are_refused_by_name_with_the_reason_and_nothing_is_planned() {
    for t in TOOLS {
        let Kind::Refused(reason) = &t.kind else {
            continue;
        };
        let v = json!({"steps": [
            {"tool": "keyboard", "params": {"action": "type", "text": "MUST NOT RUN"}},
            {"tool": "sleep", "params": {"ms": 10}},
            {"tool": "sleep", "params": {"ms": 10}},
            {"tool": t.name, "params": {"anything": 1}}
        ]});
        let p = problems(v);
        assert_eq!(p.len(), 1, "{}: {p:?}", t.name);
        assert_eq!(p[0].field, "steps[3].tool");
        assert_eq!(p[0].step, Some(3));
        assert!(
            p[0].message.contains(t.name) && p[0].message.contains(reason),
            "{}",
            p[0].message
        );
    }
}

#[tokio::test]
async fn a_refused_macro_runs_nothing_and_says_so_in_desktop_touchs_shape_too() {
    let v = json!({"steps": [
        {"tool": "keyboard", "params": {"action": "type", "text": "MUST NOT RUN"}},
        {"tool": "clipboard", "params": {"action": "read"}},
        {"tool": "keyboard", "params": {"action": "tap"}}
    ]});
    let (out, content, seen) = run(v, Scripted::new()).await;
    assert!(seen.is_empty(), "nothing ran: {seen:?}");
    assert_eq!(out["status"], "invalid");
    assert_eq!(out["steps_total"], 3);
    assert_eq!(out["steps_completed"], 0);
    assert_eq!(out["results"], json!([]));
    let fields: Vec<&str> = out["errors"]
        .as_array()
        .map(|e| e.iter().filter_map(|p| p["field"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(fields, ["steps[1].tool", "steps[2].params.action"]);
    let warned: Vec<&Value> = out["warnings"]
        .as_array()
        .map(|w| w.iter().map(|w| &w["step"]).collect())
        .unwrap_or_default();
    assert_eq!(warned, [&json!(1), &json!(2)]);
    assert!(matches!(content.first(), Some(ContentItem::Text { .. })));
}

#[test]
fn unknown_tools_and_parameters_get_a_hint_in_the_callers_terms() {
    let p = problems(one_step("keybord", json!({})));
    assert_eq!(p[0].field, "steps[0].tool");
    assert!(
        p[0].message.contains("did you mean `keyboard`"),
        "{}",
        p[0].message
    );
    let p = problems(one_step(
        "mouse_click",
        json!({"x": 1, "y": 2, "windowtitle": "A"}),
    ));
    assert_eq!(p[0].field, "steps[0].params.windowtitle");
    assert!(
        p[0].message.contains("did you mean `windowTitle`"),
        "{}",
        p[0].message
    );
    let p = problems(one_step(
        "keyboard",
        json!({"action": "type", "text": "a", "keys": "b"}),
    ));
    assert_eq!(p[0].field, "steps[0].params.keys");
    assert!(
        p[0].message.contains("`keyboard` action \"type\""),
        "{}",
        p[0].message
    );
    let p = problems(one_step(
        "wait_until",
        json!({"condition": "window_appears", "target": {"windowTitle": "A", "elementNme": "x"}}),
    ));
    assert_eq!(p[0].field, "steps[0].params.target.elementNme");
    let p = problems(json!({"steps": [{"tool": "sleep", "params": {"ms": 1}, "args": {}}]}));
    assert_eq!(p[0].field, "steps[0].args");
}

#[test]
fn values_that_make_no_sense_here_are_refused_naming_the_field() {
    let cases = [
        (
            "screenshot",
            json!({"detail": "ocr"}),
            "steps[0].params.detail",
        ),
        (
            "screenshot",
            json!({"diffMode": true}),
            "steps[0].params.diffMode",
        ),
        (
            "screenshot",
            json!({"windowTitle": "A", "region": {"x": 0, "y": 0, "width": 5, "height": 5}}),
            "steps[0].params.region",
        ),
        (
            "mouse_click",
            json!({"x": 1, "y": 2, "lensId": "perc-1"}),
            "steps[0].params.lensId",
        ),
        ("mouse_click", json!({"x": 1}), "steps[0].params.y"),
        (
            "mouse_click",
            json!({"x": 1, "y": 2, "button": "side"}),
            "steps[0].params.button",
        ),
        (
            "click_element",
            json!({"windowTitle": "A", "automationId": "btnOK"}),
            "steps[0].params.automationId",
        ),
        (
            "click_element",
            json!({"name": "OK"}),
            "steps[0].params.windowTitle",
        ),
        (
            "click_element",
            json!({"windowTitle": "@active", "name": "OK"}),
            "steps[0].params.windowTitle",
        ),
        (
            "focus_window",
            json!({"title": "A", "chromeTabUrlContains": "x"}),
            "steps[0].params.chromeTabUrlContains",
        ),
        ("focus_window", json!({}), "steps[0].params.title"),
        ("keyboard", json!({"text": "a"}), "steps[0].params.action"),
        (
            "keyboard",
            json!({"action": "type"}),
            "steps[0].params.text",
        ),
        (
            "scroll",
            json!({"action": "raw", "direction": "down"}),
            "steps[0].params.x",
        ),
        (
            "scroll",
            json!({"action": "read", "windowTitle": "A"}),
            "steps[0].params.action",
        ),
        (
            "scroll",
            json!({"action": "to_element", "name": "OK", "windowTitle": "A"}),
            "steps[0].params.name",
        ),
        (
            "wait_until",
            json!({"condition": "terminal_output_contains", "target": {"windowTitle": "T", "pattern": "$"}}),
            "steps[0].params.condition",
        ),
        (
            "wait_until",
            json!({"condition": "focus_changes"}),
            "steps[0].params.condition",
        ),
        (
            "wait_until",
            json!({"condition": "window_appears", "target": {}}),
            "steps[0].params.target.windowTitle",
        ),
        (
            "wait_until",
            json!({"condition": "element_matches", "target": {"pattern": "x"}}),
            "steps[0].params.target.by",
        ),
        (
            "wait_until",
            json!({"condition": "window_appears", "target": {"windowTitle": "A"}, "timeoutMs": 90000}),
            "steps[0].params.timeoutMs",
        ),
        (
            "browser_navigate",
            json!({"url": "x", "tabId": "E3F1-CDP"}),
            "steps[0].params.tabId",
        ),
        (
            "browser_click",
            json!({"selector": "#a", "by": "text", "pattern": "a"}),
            "steps[0].params.by",
        ),
        ("browser_click", json!({}), "steps[0].params.selector"),
        (
            "browser_eval",
            json!({"action": "js"}),
            "steps[0].params.expression",
        ),
        ("sleep", json!({"ms": 20000}), "steps[0].params.ms"),
        ("sleep", json!({"ms": "soon"}), "steps[0].params.ms"),
    ];
    for (tool, params, field) in cases {
        let p = problems(one_step(tool, params.clone()));
        assert!(
            p.iter().any(|p| p.field == field),
            "{tool} {params}: expected a problem at {field}, got {p:#?}"
        );
    }
}

#[test]
fn every_problem_of_every_step_is_reported_at_once() {
    let p = problems(json!({"steps": [
        {"tool": "mouse_click", "params": {"x": "a", "y": "b"}},
        {"tool": "sleep", "params": {"ms": 1}},
        {"tool": "terminal", "params": {}},
        {"tool": "keyboard", "params": {"action": "press"}}
    ], "stop_on_error": "maybe"}));
    let fields: Vec<&str> = p.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "stop_on_error",
            "steps[0].params.x",
            "steps[0].params.y",
            "steps[2].tool",
            "steps[3].params.keys"
        ]
    );
}

#[tokio::test]
async fn a_failed_step_is_reported_0_based_with_code_and_warnings_and_stops_the_macro() {
    let v = json!({"steps": [
        {"tool": "sleep", "params": {"ms": 1}},
        {"tool": "focus_window", "params": {"title": "Nope"}},
        {"tool": "keyboard", "params": {"action": "type", "text": "never"}}
    ]});
    let exec = Scripted::failing(
        "focus_window",
        FailureCode::NotFound,
        "no window matches title~\"Nope\"",
    );
    let (out, _, seen) = run(v.clone(), exec).await;
    assert_eq!(seen.len(), 2, "stopped at the failure");
    assert_eq!(out["status"], "failed");
    assert_eq!(out["steps_total"], 3);
    assert_eq!(out["steps_completed"], 2);
    let failed = &out["results"][1];
    assert_eq!(failed["step"], 1);
    assert_eq!(failed["ok"], false);
    assert_eq!(failed["code"], "WindowNotFound");
    assert_eq!(failed["error"], "no window matches title~\"Nope\"");
    assert_eq!(failed["failure"]["code"], "not-found");
    let inner: Value =
        serde_json::from_str(failed["text"][0].as_str().unwrap_or("null")).unwrap_or(Value::Null);
    assert_eq!(
        inner,
        json!({"ok": false, "code": "WindowNotFound", "error": "no window matches title~\"Nope\""})
    );
    assert_eq!(
        out["warnings"],
        json!([{"step": 1, "tool": "focus_window", "code": "WindowNotFound", "error": "no window matches title~\"Nope\""}])
    );
    let mut v = v;
    v["stop_on_error"] = json!(false);
    let exec = Scripted::failing("focus_window", FailureCode::NotFound, "no window");
    let (out, _, seen) = run(v, exec).await;
    assert_eq!(seen.len(), 3, "stop_on_error false runs the rest");
    assert_eq!(out["steps_completed"], 3);
    assert_eq!(out["results"][2]["ok"], true);
}

#[tokio::test]
async fn codes_become_desktop_touchs_where_one_means_the_same() {
    let wait = json!({"steps": [{"tool": "wait_until", "params": {"condition": "window_appears", "target": {"windowTitle": "X"}, "timeoutMs": 100}}]});
    let (out, _, _) = run(
        wait,
        Scripted::failing("wait_for", FailureCode::Timeout, "after 100 ms"),
    )
    .await;
    assert_eq!(out["results"][0]["code"], "WaitTimeout");
    let press = one_step("click_element", json!({"windowTitle": "A", "name": "B"}));
    let (out, _, _) = run(
        press,
        Scripted::failing("press", FailureCode::NotFound, "no element"),
    )
    .await;
    assert_eq!(out["results"][0]["code"], "ElementNotFound");
    let keys = one_step(
        "keyboard",
        json!({"action": "press", "keys": "ctrl+alt+delete"}),
    );
    let (out, _, _) = run(
        keys,
        Scripted::failing("key", FailureCode::Denied, "blocked"),
    )
    .await;
    assert_eq!(out["results"][0]["code"], "BlockedKeyCombo");
    let other = one_step("mouse_click", json!({"x": 1, "y": 1, "windowTitle": "A"}));
    let (out, _, _) = run(
        other,
        Scripted::failing("click", FailureCode::WorldMoved, "moved"),
    )
    .await;
    assert_eq!(out["results"][0]["code"], "world-moved");
    let search = one_step(
        "browser_search",
        json!({"by": "text", "pattern": "zzz", "tabId": 1}),
    );
    let (out, _, _) = run(
        search,
        Scripted::failing(
            "javascript_tool",
            FailureCode::Failed,
            "running the script in tab 1: the script threw: Error: BrowserSearchNoResults: browser_search(text, \"zzz\") returned 0 results",
        ),
    )
    .await;
    assert_eq!(out["results"][0]["code"], "BrowserSearchNoResults");
    assert_eq!(
        out["results"][0]["error"],
        "browser_search(text, \"zzz\") returned 0 results"
    );
}

#[tokio::test]
async fn the_envelope_has_desktop_touchs_keys_and_value_shapes() {
    let mut v = seed_one();
    v["include"] = json!(["envelope"]);
    let (out, content, _) = run(v.clone(), Scripted::new()).await;
    let keys: Vec<&String> = out
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    let mut keys: Vec<&str> = keys.into_iter().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["_version", "as_of", "confidence", "data"]);
    assert_eq!(out["_version"], "1.0");
    let wallclock = out["as_of"]["wallclock_ms"].as_u64().unwrap_or(0);
    assert!(
        wallclock > 1_700_000_000_000,
        "epoch milliseconds: {wallclock}"
    );
    assert_eq!(out["as_of"].as_object().map(Map::len), Some(1));
    assert!(["fresh", "degraded", "stale"].contains(&out["confidence"].as_str().unwrap_or("")));
    assert_eq!(out["confidence"], "degraded");
    assert_eq!(out["data"]["steps_completed"], 4);
    assert_eq!(out["data"]["results"][0]["step"], 0);
    match content.first() {
        Some(ContentItem::Text { text }) => {
            assert!(text.starts_with("{\"_version\"") || text.contains("\"_version\":\"1.0\""))
        }
        other => panic!("{other:?}"),
    }
    // raw wins over envelope; unknown words are ignored.
    v["include"] = json!(["envelope", "raw"]);
    let (out, _, _) = run(v.clone(), Scripted::new()).await;
    assert!(out.get("_version").is_none());
    v["include"] = json!(["causal"]);
    let (out, _, _) = run(v.clone(), Scripted::new()).await;
    assert_eq!(out["status"], "passed");
    v["include"] = json!("envelope");
    let (out, _, _) = run(v, Scripted::new()).await;
    assert_eq!(out["status"], "invalid");
}

#[test]
fn our_own_verb_names_keep_working_and_text_stays_literal() {
    let c = calls(json!({"steps": [
        {"tool": "focus_window", "params": {"title": "Recorder"}},
        {"tool": "type", "params": {"text": "cost: ${HOME} \\${x}"}},
        {"tool": "key", "params": {"combo": "ctrl+c Return"}},
        {"tool": "click", "params": {"x": 1, "y": 2, "target": {"title": "A"}}},
        {"tool": "testkit_echo", "params": {"value": 1}},
        {"tool": "navigate", "params": {"tabId": 1, "url": "about:blank"}}
    ]}));
    let verbs: Vec<&str> = c.iter().map(|(_, v, _)| v.as_str()).collect();
    assert_eq!(
        verbs,
        ["focus_window", "type", "key", "click", "echo", "navigate"]
    );
    assert_eq!(
        c[1].2["text"], "cost: \\${HOME} \\\\${x}",
        "escaped for the engine"
    );
    let resolved = crate::vars::resolve(&c[1].2, &Nothing, UnknownPolicy::Reject);
    assert_eq!(
        resolved.ok().map(|v| v["text"].clone()),
        Some(json!("cost: ${HOME} \\${x}"))
    );
    // A schema problem of our verb's is named in the caller's terms.
    let b = batch(
        json!({"steps": [{"tool": "sleep", "params": {"ms": 1}}, {"tool": "click", "params": {"x": "far", "y": 2}}]}),
    );
    let Ok(b) = b else { panic!("maps") };
    let cat = catalog();
    let limits = Limits::default();
    let ctx = PlanContext {
        catalog: &cat,
        limits: &limits,
        session_vars: &|_| false,
        policy: UnknownPolicy::Reject,
    };
    let p = match crate::plan(&b, &ctx) {
        Ok(_) => panic!("the click's x is wrong"),
        Err(p) => p,
    };
    let p = user_problem(&p[0]);
    assert_eq!(p.field, "steps[1].params.x");
    assert_eq!(p.step, Some(1));
}

#[test]
fn the_tool_enum_lists_what_can_run_here() {
    let schema = RunMacro.input_schema(&catalog());
    let names: Vec<&str> = schema["properties"]["steps"]["items"]["properties"]["tool"]["enum"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for name in [
        "keyboard",
        "mouse_click",
        "browser_navigate",
        "wait_until",
        "get_ui_elements",
        "sleep",
        "type",
        "click",
        "navigate",
        "testkit_echo",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    for name in ["clipboard", "terminal", "run_macro", "wait_for_page_x"] {
        assert!(!names.contains(&name), "{name} not offered");
    }
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted, names, "sorted, once each");
}

#[test]
fn a_tool_whose_verb_is_missing_is_neither_offered_nor_planned() {
    let without: Vec<Arc<PluginSpec>> = catalog()
        .plugins()
        .filter(|p| p.name() == "desktop")
        .cloned()
        .collect();
    let desktop_only = Catalog::new(without, []);
    let schema = RunMacro.input_schema(&desktop_only);
    let names = schema["properties"]["steps"]["items"]["properties"]["tool"]["enum"].clone();
    assert!(
        !names
            .as_array()
            .is_some_and(|a| a.contains(&json!("browser_navigate")))
    );
    let p = match RunMacro.to_batch(&args(seed_two()), &desktop_only, &Limits::default()) {
        Ok(b) => panic!("no browser here: {b}"),
        Err(p) => p,
    };
    assert_eq!(p[0].field, "steps[0].tool");
    assert!(
        p[0].message.contains("browser plugin is not loaded"),
        "{}",
        p[0].message
    );
}

#[test]
fn waits_get_a_step_timeout_that_covers_them() {
    let b = batch(json!({"steps": [
        {"tool": "wait_until", "params": {"condition": "window_appears", "target": {"windowTitle": "A"}, "timeoutMs": 40000}},
        {"tool": "wait_until", "params": {"condition": "element_matches", "target": {"by": "text", "pattern": "x", "tabId": 1}, "timeoutMs": 50000}},
        {"tool": "sleep", "params": {"ms": 10000}}
    ]}));
    let Ok(b) = b else { panic!("maps") };
    assert_eq!(b["steps"][0]["timeout_ms"], 45_000);
    assert_eq!(b["steps"][1]["timeout_ms"], 55_000);
    assert!(
        b["steps"][2].get("timeout_ms").is_none(),
        "10 s fits the default"
    );
}

#[test]
fn helpers_and_pieces() {
    assert_eq!(combo("LCtrl+RShift+t"), "ctrl+shift+t");
    assert_eq!(combo("ctrl+c"), "ctrl+c");
    assert_eq!(role("Button"), "push button");
    assert_eq!(role("MenuItem"), "menu item");
    assert_eq!(role("toggle button"), "toggle button");
    let label = Label {
        index: 7,
        tool: "keyboard",
        helper: Some("select all"),
    }
    .to_string();
    assert_eq!(label, "steps[7] keyboard (select all)");
    let parsed =
        Label::parse(&label).map(|l| (l.index, l.tool.to_owned(), l.helper.map(str::to_owned)));
    assert_eq!(
        parsed,
        Some((7, "keyboard".to_owned(), Some("select all".to_owned())))
    );
    assert!(Label::parse("look").is_none());
    assert_eq!(
        page_code(
            "running the script in tab 2: the script threw: Error: ElementNotFound: no h9 (at x)"
        ),
        Some(("ElementNotFound", "no h9 (at x)"))
    );
    assert_eq!(page_code("the script threw: Error: Mine: x"), None);
    let p = Problem {
        step: Some(4),
        label: Some("steps[2] keyboard".into()),
        field: "steps[4].input.combo".into(),
        message: "bad".into(),
    };
    assert_eq!(user_problem(&p).field, "steps[2].params.combo");
    let p = Problem {
        field: "steps[4].verb".into(),
        ..p
    };
    assert_eq!(user_problem(&p).field, "steps[2].tool");
    assert!(json!(envelope(json!({}), 5))["as_of"] == json!({"wallclock_ms": 5}));
}

#[test]
fn the_tool_definition_stays_small() {
    // Every character is sent to the model in every conversation.
    let c = catalog();
    let size = RunMacro.description(&c).len() + RunMacro.input_schema(&c).to_string().len();
    assert!(size < 4_000, "run_macro's definition is {size} characters");
}

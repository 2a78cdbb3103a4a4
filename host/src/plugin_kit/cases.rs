//! `stephost plugin test`: a case file run against a component in the real
//! host, each case a one-step batch in one session, so state carries from case
//! to case as it does from step to step.

use std::path::Path;
use std::process::ExitCode;

use serde::Deserialize;
use serde_json::{Value, json};
use stephost::batch::{BatchStatus, NoObserver, Report, StepStatus};
use stephost::config::Config;
use stephost::session::SessionRef;
use stephost::{BatchOptions, Host};

/// The largest case file read: cases are hand-written, and the bound keeps a
/// wrong path (a video, a disk image) from being read whole.
const MAX_CASES_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    /// Defaults to the plugin the component describes.
    plugin: Option<String>,
    verb: String,
    #[serde(default = "empty_object")]
    input: Value,
    expect: Expect,
}

fn empty_object() -> Value {
    json!({})
}

/// What a case expects; exactly one of `value`, `error` and `invalid`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    /// The step passes with exactly this value.
    #[serde(default, deserialize_with = "present")]
    value: Option<Value>,
    /// The step fails.
    error: Option<ExpectError>,
    /// The batch is refused before the step runs (schema or check).
    invalid: Option<ExpectInvalid>,
    /// Some text item of the step's content contains this.
    text_contains: Option<String>,
}

/// `"value": null` means "the value is null", not "no value expected".
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectError {
    code: Option<String>,
    message_contains: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectInvalid {
    message_contains: Option<String>,
}

/// One case's outcome.
#[derive(Debug, serde::Serialize)]
struct Outcome {
    name: String,
    passed: bool,
    /// What differed, when it failed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    mismatches: Vec<String>,
    time_ms: f64,
}

pub(crate) async fn test(mut config: Config, file: &Path, cases: &Path, json: bool) -> ExitCode {
    let cases = match read_cases(cases) {
        Ok(cases) => cases,
        Err(e) => {
            eprintln!("stephost: {e:#}");
            return super::exit(super::EXIT_INPUT);
        }
    };
    config.plugins.dirs.push(file.to_owned());
    let host = match Host::start(config).await {
        Ok(host) => host,
        Err(e) => {
            eprintln!(
                "stephost: the host did not start with {}, so no case ran: {e:#}\n(`stephost plugin check {}` lists every problem)",
                file.display(),
                file.display()
            );
            return super::exit(crate::cli::EXIT_HOST);
        }
    };
    let source = file.display().to_string();
    let Some(plugin) = host
        .registry()
        .plugins()
        .find(|p| p.info().source == source)
        .map(|p| p.name().to_owned())
    else {
        eprintln!("stephost: {source} did not load as a plugin");
        return super::exit(crate::cli::EXIT_HOST);
    };
    let session = format!("plugin-test-{}", std::process::id());
    let mut outcomes = Vec::with_capacity(cases.len());
    for case in &cases {
        let request = json!({"steps": [{
            "plugin": case.plugin.as_deref().unwrap_or(&plugin),
            "verb": case.verb,
            "input": case.input,
        }]});
        let observer = NoObserver;
        let opts = BatchOptions {
            session: Some(SessionRef::Named(&session)),
            observer: &observer,
            ..BatchOptions::default()
        };
        let report = host.run_batch(&request, opts).await;
        let mismatches = judge(&case.expect, &report);
        let outcome = Outcome {
            name: case.name.clone(),
            passed: mismatches.is_empty(),
            mismatches,
            time_ms: report.time_ms,
        };
        if !json {
            let mark = if outcome.passed { "ok  " } else { "FAIL" };
            println!("{mark} {} ({:.1} ms)", outcome.name, outcome.time_ms);
            for mismatch in &outcome.mismatches {
                println!("       {mismatch}");
            }
        }
        outcomes.push(outcome);
    }
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    if json {
        let summary = json!({
            "plugin": plugin,
            "passed": outcomes.len() - failed,
            "failed": failed,
            "cases": outcomes,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&summary).unwrap_or_default()
        );
    } else {
        println!(
            "{} of {} cases passed",
            outcomes.len() - failed,
            outcomes.len()
        );
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn read_cases(path: &Path) -> anyhow::Result<Vec<Case>> {
    use anyhow::Context as _;
    let size = std::fs::metadata(path)
        .with_context(|| format!("cannot read the case file {}", path.display()))?
        .len();
    anyhow::ensure!(
        size <= MAX_CASES_BYTES,
        "{} is {size} bytes; a case file is at most {MAX_CASES_BYTES}",
        path.display()
    );
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the case file {}", path.display()))?;
    let file: CaseFile = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a case file ({{\"cases\": [{{\"name\", \"verb\", \"input\", \"expect\"}}]}})",
            path.display()
        )
    })?;
    anyhow::ensure!(!file.cases.is_empty(), "{} has no cases", path.display());
    for (i, case) in file.cases.iter().enumerate() {
        let e = &case.expect;
        let kinds = usize::from(e.value.is_some())
            + usize::from(e.error.is_some())
            + usize::from(e.invalid.is_some());
        anyhow::ensure!(
            kinds == 1 || (kinds == 0 && e.text_contains.is_some()),
            "{}: cases[{i}] (`{}`): `expect` takes exactly one of `value`, `error` and `invalid` (with `text_contains` beside `value`, or alone)",
            path.display(),
            case.name
        );
        anyhow::ensure!(
            case.input.is_object(),
            "{}: cases[{i}] (`{}`): `input` must be a JSON object",
            path.display(),
            case.name
        );
    }
    Ok(file.cases)
}

/// Every way `report` differs from `expect`.
fn judge(expect: &Expect, report: &Report) -> Vec<String> {
    let mut wrong = Vec::new();
    let step = report.steps.first();
    let refused = matches!(report.status, BatchStatus::Invalid | BatchStatus::Rejected);
    if let Some(invalid) = &expect.invalid {
        if !refused {
            wrong.push(format!(
                "expected the step to be refused before it ran; the batch {}",
                describe(report)
            ));
        } else if let Some(needle) = &invalid.message_contains {
            let all: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
            if !all.iter().any(|e| e.contains(needle.as_str())) {
                wrong.push(format!(
                    "expected a refusal mentioning {needle:?}; got: {}",
                    all.join("; ")
                ));
            }
        }
        return wrong;
    }
    if refused {
        let all: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
        wrong.push(format!(
            "the step was refused before it ran: {}",
            all.join("; ")
        ));
        return wrong;
    }
    let Some(step) = step else {
        wrong.push("no step ran".to_owned());
        return wrong;
    };
    if let Some(expected) = &expect.error {
        match (&step.status, &step.error) {
            (StepStatus::Passed, _) | (_, None) => wrong.push(format!(
                "expected a failure; the step passed with {}",
                compact(step.value.as_ref())
            )),
            (_, Some(error)) => {
                if let Some(code) = &expected.code
                    && error.code.as_str() != code
                {
                    wrong.push(format!(
                        "expected code `{code}`; got `{}`: {}",
                        error.code, error.message
                    ));
                }
                if let Some(needle) = &expected.message_contains
                    && !error.message.contains(needle.as_str())
                {
                    wrong.push(format!(
                        "expected a message containing {needle:?}; got {:?}",
                        error.message
                    ));
                }
            }
        }
    } else if step.status != StepStatus::Passed {
        let why = step
            .error
            .as_ref()
            .map(|e| format!("{}: {}", e.code, e.message))
            .unwrap_or_default();
        wrong.push(format!("expected the step to pass; it failed with {why}"));
        return wrong;
    }
    if let Some(expected) = &expect.value {
        let got = step.value.clone().unwrap_or(Value::Null);
        if &got != expected {
            wrong.push(format!(
                "expected value {}; got {}",
                compact(Some(expected)),
                compact(Some(&got))
            ));
        }
    }
    if let Some(needle) = &expect.text_contains {
        let texts: Vec<&str> = step
            .content
            .iter()
            .filter_map(|item| match item {
                stephost::batch::ContentItem::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        if !texts.iter().any(|t| t.contains(needle.as_str())) {
            wrong.push(format!(
                "expected a text containing {needle:?}; got {texts:?}"
            ));
        }
    }
    wrong
}

fn describe(report: &Report) -> String {
    match report.steps.first() {
        Some(step) if step.status == StepStatus::Passed => {
            format!("ran and passed with {}", compact(step.value.as_ref()))
        }
        Some(step) => format!(
            "ran and failed: {}",
            step.error
                .as_ref()
                .map(|e| format!("{}: {}", e.code, e.message))
                .unwrap_or_default()
        ),
        None => "ran no step".to_owned(),
    }
}

fn compact(value: Option<&Value>) -> String {
    value.map_or_else(|| "null".to_owned(), Value::to_string)
}

//! The batch engine end to end against the real testkit component: chaining,
//! validation, time limits, faults, retries.

mod common;

use std::time::{Duration, Instant};

use common::{host, host_with, run, step, to_json};
use serde_json::json;
use stephost::batch::{BatchStatus, StepStatus};
use stephost::{BatchOptions, batch::NoObserver};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn results_chain_into_later_steps() {
    let host = host().await;
    let report = run(
        &host,
        None,
        json!({"steps": [
            step("echo", json!({"value": {"items": [{"name": "alpha", "n": 7}]}})),
            step("echo", json!({"value": "${STEP_1.items[0].name}"})),
            step("echo", json!({"value": "${STEP_0.items[0].n}"})),
            step("echo", json!({"value": "name=${STEP_2}, n=${STEP_3}"})),
            step("echo", json!({"value": "${STEP_1}"})),
            step("echo", json!({"value": "\\${STEP_1} stays literal"})),
        ]}),
    )
    .await;
    assert_eq!(report.status, BatchStatus::Passed, "{:#?}", report);
    let values: Vec<_> = report
        .steps
        .iter()
        .map(|s| s.value.clone().expect("value"))
        .collect();
    assert_eq!(values[1], json!("alpha"));
    assert_eq!(values[2], json!(7), "a whole reference keeps the JSON type");
    assert_eq!(
        values[3],
        json!("name=alpha, n=7"),
        "references inside text are spliced"
    );
    assert_eq!(values[4], json!({"items": [{"name": "alpha", "n": 7}]}));
    assert_eq!(values[5], json!("${STEP_1} stays literal"));
    assert_eq!(report.steps_executed, 6);
    assert_eq!(report.never_started, 0);
}

#[tokio::test]
async fn assigned_names_live_on_in_the_session() {
    let host = host().await;
    let first = run(
        &host,
        Some("vars"),
        json!({"steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": 41}, "assign_to": "answer"},
                         step("echo", json!({"value": "${answer}"}))]}),
    )
    .await;
    assert_eq!(first.status, BatchStatus::Passed, "{first:#?}");
    assert_eq!(first.steps[1].value, Some(json!(41)));
    let second = run(
        &host,
        Some("vars"),
        json!({"steps": [step("echo", json!({"value": "${answer}"}))]}),
    )
    .await;
    assert_eq!(second.steps[0].value, Some(json!(41)));
    let other = run(
        &host,
        Some("other"),
        json!({"steps": [step("echo", json!({"value": "${answer}"}))]}),
    )
    .await;
    assert_eq!(
        other.status,
        BatchStatus::Invalid,
        "another session does not see the name"
    );
}

#[tokio::test]
async fn an_invalid_batch_names_every_problem_and_runs_nothing() {
    let host = host().await;
    let report = run(
        &host,
        Some("invalid"),
        json!({"steps": [
            step("count", json!({})),
            {"plugin": "nope", "verb": "echo"},
            step("ecoh", json!({"value": 1})),
            step("sleep", json!({"ms": "long"})),
            step("echo", json!({"value": "${STEP_6}"})),
            step("echo", json!({"value": "${missing}"})),
            {"plugin": "testkit", "verb": "echo", "input": {"value": 1}, "timeout_ms": 0, "label": "zero"},
            {"plugin": "testkit", "verb": "echo", "input": {"value": 1}, "colour": "red"},
        ], "on_failure": "sometimes"}),
    )
    .await;
    assert_eq!(report.status, BatchStatus::Invalid);
    assert_eq!(report.steps_executed, 0);
    let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    let has = |needle: &str| errors.iter().any(|e| e.contains(needle));
    assert!(has("on_failure"), "{errors:#?}");
    assert!(
        has("step 2: steps[1].plugin: unknown plugin `nope`"),
        "{errors:#?}"
    );
    assert!(
        has("step 3: steps[2].verb") && has("did you mean `echo`"),
        "{errors:#?}"
    );
    assert!(has("step 4: steps[3].input.ms"), "{errors:#?}");
    assert!(
        has("`${STEP_6}` refers to step 6, which cannot have run yet"),
        "{errors:#?}"
    );
    assert!(has("`${missing}`"), "{errors:#?}");
    assert!(has("step 7 (\"zero\"): steps[6].timeout_ms"), "{errors:#?}");
    assert!(has("steps[7].colour: unknown field"), "{errors:#?}");
    // The count step in the rejected batch never ran.
    let after = run(
        &host,
        Some("invalid"),
        json!({"steps": [step("count", json!({}))]}),
    )
    .await;
    assert_eq!(after.steps[0].value, Some(json!(1)));
}

#[tokio::test]
async fn a_runaway_spin_times_out_fast_and_the_batch_carries_on() {
    let host = host().await;
    let started = Instant::now();
    let report = run(
        &host,
        None,
        json!({"steps": [
            {"plugin": "testkit", "verb": "spin", "input": {}, "timeout_ms": 200},
            step("echo", json!({"value": "after"})),
        ], "on_failure": "continue"}),
    )
    .await;
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_millis(900), "took {elapsed:?}");
    assert_eq!(report.steps[0].status, StepStatus::TimedOut);
    assert_eq!(
        report.steps[0].error.as_ref().map(|e| e.code.as_str()),
        Some("timeout")
    );
    assert!(
        report.steps[0].time_ms >= 199.0 && report.steps[0].time_ms < 600.0,
        "{}",
        report.steps[0].time_ms
    );
    assert!(
        report.steps[0].notes.iter().any(|n| n.contains("dropped")),
        "{:?}",
        report.steps[0].notes
    );
    assert_eq!(report.steps[1].status, StepStatus::Passed);
    assert_eq!(report.status, BatchStatus::TimedOut);
}

#[tokio::test]
async fn a_guest_blocked_in_sleep_is_stopped_at_the_deadline() {
    let host = host().await;
    let started = Instant::now();
    let report = run(
        &host,
        None,
        json!({"steps": [{"plugin": "testkit", "verb": "sleep", "input": {"ms": 10000}, "timeout_ms": 200}]}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(report.steps[0].status, StepStatus::TimedOut);
    assert_eq!(report.status, BatchStatus::TimedOut);
}

#[tokio::test]
async fn the_batch_budget_stops_the_run_and_later_steps_never_start() {
    let host = host().await;
    let started = Instant::now();
    let report = run(
        &host,
        None,
        json!({"steps": [
            step("sleep", json!({"ms": 150})),
            step("sleep", json!({"ms": 5000})),
            step("echo", json!({"value": 1})),
        ], "timeout_ms": 300, "on_failure": "continue"}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(report.status, BatchStatus::TimedOut);
    assert_eq!(report.steps[0].status, StepStatus::Passed);
    assert_eq!(report.steps[1].status, StepStatus::TimedOut);
    assert_eq!(report.steps_executed, 2);
    assert_eq!(report.never_started, 1);
}

#[tokio::test]
async fn memory_past_the_limit_fails_clearly_and_the_host_carries_on() {
    let host = host_with(|c| c.limits.memory_mib = 64).await;
    let report = run(
        &host,
        Some("mem"),
        json!({"steps": [
            step("count", json!({})),
            step("alloc", json!({"mib": 16})),
            step("alloc", json!({"mib": 128})),
            step("echo", json!({"value": "still here"})),
            step("count", json!({})),
        ], "on_failure": "continue"}),
    )
    .await;
    assert_eq!(
        report.steps[1].status,
        StepStatus::Passed,
        "{:#?}",
        report.steps[1]
    );
    let error = report.steps[2].error.as_ref().expect("alloc failed");
    assert_eq!(error.code, "memory-limit");
    assert!(error.message.contains("64 MiB"), "{}", error.message);
    assert_eq!(report.steps[3].value, Some(json!("still here")));
    // The instance was re-created: its counter starts over.
    assert_eq!(report.steps[4].value, Some(json!(1)));
}

#[tokio::test]
async fn a_panic_poisons_only_its_own_instance() {
    let host = host().await;
    for session in ["a", "b"] {
        let r = run(
            &host,
            Some(session),
            json!({"steps": [step("count", json!({}))]}),
        )
        .await;
        assert_eq!(r.steps[0].value, Some(json!(1)));
    }
    let r = run(
        &host,
        Some("a"),
        json!({"steps": [step("panic", json!({"message": "boom"}))]}),
    )
    .await;
    let error = r.steps[0].error.as_ref().expect("panicked");
    assert_eq!(error.code, "trap");
    assert!(
        error.message.contains("boom"),
        "the panic message is quoted: {}",
        error.message
    );
    let a = run(
        &host,
        Some("a"),
        json!({"steps": [step("count", json!({}))]}),
    )
    .await;
    assert_eq!(
        a.steps[0].value,
        Some(json!(1)),
        "session a got a fresh instance"
    );
    let b = run(
        &host,
        Some("b"),
        json!({"steps": [step("count", json!({}))]}),
    )
    .await;
    assert_eq!(b.steps[0].value, Some(json!(2)), "session b kept its state");
}

#[tokio::test]
async fn flaky_with_retry_passes_on_the_third_run() {
    let host = host().await;
    let report = run(
        &host,
        None,
        json!({"steps": [{"plugin": "testkit", "verb": "flaky", "input": {"failures": 2},
                          "retry": {"attempts": 3, "on": ["world-moved"]}}]}),
    )
    .await;
    assert_eq!(report.status, BatchStatus::Passed, "{report:#?}");
    assert_eq!(report.steps[0].attempts, 3);
    assert_eq!(report.steps[0].value, Some(json!({"calls": 3})));
    assert_eq!(
        report.steps[0].notes.len(),
        2,
        "{:?}",
        report.steps[0].notes
    );
}

#[tokio::test]
async fn retries_stop_at_attempts_and_skip_unlisted_codes() {
    let host = host().await;
    let report = run(
        &host,
        None,
        json!({"steps": [
            {"plugin": "testkit", "verb": "flaky", "input": {"failures": 5}, "retry": {"attempts": 2}},
            {"plugin": "testkit", "verb": "flaky", "input": {"failures": 1, "code": "not-found"}, "retry": {"attempts": 3, "on": ["world-moved"]}},
        ], "on_failure": "continue"}),
    )
    .await;
    assert_eq!(report.steps[0].attempts, 2);
    assert_eq!(report.steps[0].status, StepStatus::Failed);
    assert_eq!(report.steps[1].attempts, 1, "not-found is not in `on`");
}

#[tokio::test]
async fn an_acting_verb_whose_input_fired_is_not_retried_unless_listed() {
    let host = host().await;
    let report = run(
        &host,
        None,
        json!({"steps": [
            {"plugin": "testkit", "verb": "fail", "input": {"code": "world-moved", "input_fired": true}, "retry": {"attempts": 3}},
            {"plugin": "testkit", "verb": "fail", "input": {"code": "world-moved", "input_fired": false}, "retry": {"attempts": 3}},
            {"plugin": "testkit", "verb": "fail", "input": {"code": "world-moved", "input_fired": true}, "retry": {"attempts": 3, "on": ["world-moved"]}},
        ], "on_failure": "continue"}),
    )
    .await;
    assert_eq!(report.steps[0].attempts, 1);
    assert!(
        report.steps[0]
            .notes
            .iter()
            .any(|n| n.contains("not retried")),
        "{:?}",
        report.steps[0].notes
    );
    assert_eq!(report.steps[1].attempts, 3, "input provably never fired");
    assert_eq!(report.steps[2].attempts, 3, "code listed explicitly");
}

#[tokio::test]
async fn on_failure_stop_ends_the_batch() {
    let host = host().await;
    let report = run(
        &host,
        None,
        json!({"steps": [
            step("echo", json!({"value": 1})),
            step("fail", json!({"code": "not-found", "message": "no such button"})),
            step("echo", json!({"value": 3})),
        ]}),
    )
    .await;
    assert_eq!(report.status, BatchStatus::Failed);
    assert_eq!(report.steps_executed, 2);
    assert_eq!(report.never_started, 1);
    let json = to_json(&report);
    assert_eq!(json["steps"][1]["error"]["code"], "not-found");
    assert_eq!(json["steps"][1]["error"]["message"], "no such button");
}

#[tokio::test]
async fn an_always_step_still_runs_after_a_failure_stopped_the_batch() {
    let host = host().await;
    let mut finally = step("echo", json!({"value": "finally"}));
    finally["always"] = json!(true);
    let report = run(
        &host,
        None,
        json!({"steps": [
            step("fail", json!({"code": "not-found"})),
            step("echo", json!({"value": "skipped"})),
            finally,
        ]}),
    )
    .await;
    assert_eq!(report.status, BatchStatus::Failed, "{report:#?}");
    let ran: Vec<usize> = report.steps.iter().map(|s| s.index).collect();
    assert_eq!(
        ran,
        [0, 2],
        "the middle step is skipped, the always step runs"
    );
    assert_eq!(report.steps[1].value, Some(json!("finally")));
    assert_eq!(report.never_started, 1);
    assert!(
        report.notes.iter().any(|n| n.contains("marked `always`")),
        "{:?}",
        report.notes
    );
}

#[tokio::test]
async fn a_reference_to_a_failed_step_fails_the_later_step_without_running_it() {
    let host = host().await;
    let report = run(
        &host,
        None,
        json!({"steps": [
            step("fail", json!({})),
            step("echo", json!({"value": "${STEP_1}"})),
        ], "on_failure": "continue"}),
    )
    .await;
    let error = report.steps[1].error.as_ref().expect("unresolved");
    assert_eq!(error.code, "unresolved-reference");
    assert!(!error.input_fired);
}

#[tokio::test]
async fn a_resolved_reference_is_checked_against_the_schema_again() {
    let host = host().await;
    let report = run(
        &host,
        None,
        json!({"steps": [
            step("echo", json!({"value": "soon"})),
            step("sleep", json!({"ms": "${STEP_1}"})),
        ]}),
    )
    .await;
    let error = report.steps[1]
        .error
        .as_ref()
        .expect("rejected at run time");
    assert_eq!(error.code, "invalid-input");
    assert!(error.message.contains("input.ms"), "{}", error.message);
}

#[tokio::test]
async fn cancellation_stops_the_running_step_and_the_rest() {
    let host = host().await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let report = host
        .run_batch(
            &json!({"steps": [step("spin", json!({})), step("echo", json!({"value": 1}))]}),
            BatchOptions {
                session: Some(stephost::session::SessionRef::Named("cancel")),
                observer: &NoObserver,
                cancel,
                ..BatchOptions::default()
            },
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_millis(800),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(report.status, BatchStatus::Cancelled);
    assert_eq!(report.steps[0].status, StepStatus::Cancelled);
    assert_eq!(report.never_started, 1);
    let again = run(
        &host,
        Some("cancel"),
        json!({"steps": [step("echo", json!({"value": "ok"}))]}),
    )
    .await;
    assert_eq!(
        again.status,
        BatchStatus::Passed,
        "the session is usable after a cancel"
    );
}

#[tokio::test]
async fn fuel_caps_cpu_per_step() {
    let host = host_with(|c| c.limits.fuel_per_step = 50_000_000).await;
    let report = run(&host, None, json!({"steps": [step("spin", json!({}))]})).await;
    let error = report.steps[0].error.as_ref().expect("out of fuel");
    assert_eq!(error.code, "out-of-fuel");
    assert!(
        error.message.contains("limits.fuel_per_step = 50000000"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn images_come_back_base64_and_labelled() {
    let host = host().await;
    let report = run(
        &host,
        None,
        json!({"steps": [step("image", json!({"width": 4, "height": 3}))]}),
    )
    .await;
    let json = to_json(&report);
    let image = json["steps"][0]["content"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["type"] == "image"))
        .expect("an image item")
        .clone();
    assert_eq!(image["mime_type"], "image/png");
    assert_eq!(image["label"], "step 1: image");
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(image["data"].as_str().expect("data"))
        .expect("base64");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(
        u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]),
        4
    );
    assert_eq!(
        u32::from_be_bytes([bytes[20], bytes[21], bytes[22], bytes[23]]),
        3
    );
}

#[tokio::test]
async fn plugin_logs_are_attached_to_their_step() {
    let host = host().await;
    let report = run(&host, None, json!({"steps": [step("log", json!({"message": "hello from the guest", "level": "warn"}))]})).await;
    let json = to_json(&report);
    assert_eq!(json["steps"][0]["logs"][0]["level"], "warn");
    assert_eq!(
        json["steps"][0]["logs"][0]["message"],
        "hello from the guest"
    );
}

#[tokio::test]
async fn the_report_has_the_documented_shape() {
    let host = host().await;
    let report = run(&host, None, json!({"steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": 1}, "label": "one"}]})).await;
    let json = to_json(&report);
    for key in [
        "status",
        "batch_id",
        "session_id",
        "steps_total",
        "steps_executed",
        "never_started",
        "time_ms",
        "steps",
    ] {
        assert!(json.get(key).is_some(), "missing {key}: {json}");
    }
    for key in [
        "index", "label", "plugin", "verb", "status", "attempts", "time_ms", "value",
    ] {
        assert!(
            json["steps"][0].get(key).is_some(),
            "missing steps[0].{key}: {json}"
        );
    }
    assert_eq!(json["status"], "passed");
    assert_eq!(json["steps"][0]["label"], "one");
}

#[tokio::test]
async fn a_name_whose_assigning_step_failed_never_reads_an_older_value() {
    let host = host().await;
    let first = run(
        &host,
        Some("stale"),
        json!({"steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": "old"}, "assign_to": "x"}]}),
    )
    .await;
    assert_eq!(first.status, BatchStatus::Passed);
    let report = run(
        &host,
        Some("stale"),
        json!({"steps": [
            {"plugin": "testkit", "verb": "fail", "input": {}, "assign_to": "x"},
            step("echo", json!({"value": "${x}"})),
        ], "on_failure": "continue"}),
    )
    .await;
    let error = report.steps[1].error.as_ref().expect("unresolved");
    assert_eq!(error.code, "unresolved-reference");
    assert!(
        error
            .message
            .contains("step 1, which assigns `x`, did not pass"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn recovery_runs_the_plugins_strategies_between_runs() {
    let host = host().await;
    let details = json!({
        "classification": "stuck",
        "recovery": [
            {"name": "bump", "tier": 2, "description": "count once",
             "actions": [{"verb": "count", "input": {}}]},
            {"name": "local", "tier": 1, "actions": [{"verb": "echo", "input": {"value": 1}}]},
            {"name": "broken", "tier": 2, "actions": [{"verb": "no-such-verb", "input": {}}]},
            {"tier": 2, "actions": []},
        ]
    });
    let report = run(
        &host,
        Some("recover"),
        json!({"steps": [
            {"plugin": "testkit", "verb": "fail", "input": {"details": details},
             "retry": {"attempts": 4, "on": ["failed"], "recover": true}},
            step("count", json!({})),
        ], "on_failure": "continue"}),
    )
    .await;
    let step0 = &report.steps[0];
    assert_eq!(step0.attempts, 4, "{step0:#?}");
    let rounds: Vec<(u8, &str)> = step0
        .recovery
        .iter()
        .map(|r| (r.tier, r.strategy.as_str()))
        .collect();
    assert_eq!(
        rounds,
        [(1, "local"), (2, "bump"), (2, "broken")],
        "tier 1 first, then tier 2 in the plugin's order"
    );
    assert_eq!(step0.recovery[1].actions[0].status, "passed");
    let broken = &step0.recovery[2].actions[0];
    assert_eq!(broken.status, "failed");
    assert!(
        broken
            .error
            .as_deref()
            .unwrap_or("")
            .contains("no verb `no-such-verb`"),
        "{broken:?}"
    );
    assert!(
        step0.recovery[0].notes[0].contains("recovery[3]"),
        "malformed entries are noted: {:?}",
        step0.recovery[0].notes
    );
    assert_eq!(step0.recovery[0].classification.as_deref(), Some("stuck"));
    assert!(step0.recovery.iter().all(|r| r.wait_ms > 0.0));
    assert_eq!(
        report.steps[1].value,
        Some(json!(2)),
        "the `bump` action really ran in the same instance"
    );

    // Without `recover` the same failure is only re-run.
    let plain = run(
        &host,
        None,
        json!({"steps": [{"plugin": "testkit", "verb": "fail", "input": {"details": details},
                          "retry": {"attempts": 2, "on": ["failed"]}}]}),
    )
    .await;
    assert!(plain.steps[0].recovery.is_empty());
    assert_eq!(plain.steps[0].attempts, 2);
}

#[tokio::test]
async fn retry_recover_must_be_a_boolean() {
    let host = host().await;
    let report = run(
        &host,
        None,
        json!({"steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": 1},
                          "retry": {"attempts": 2, "recover": "yes"}}]}),
    )
    .await;
    assert_eq!(report.status, BatchStatus::Invalid, "{report:#?}");
    assert!(
        report
            .errors
            .iter()
            .any(|e| e.to_string().contains("retry.recover")),
        "{:?}",
        report.errors
    );
}

/// Regression for the fuzz finding in fuzz/regressions/batch_plan/empty-unknown-key.json:
/// an unknown key that is empty (or not a plain name) was reported with an empty field.
#[tokio::test]
async fn odd_unknown_keys_are_named_quoted() {
    let host = host().await;
    let report = run(
        &host,
        None,
        json!({"steps": [{"plugin": "testkit", "verb": "count", "": 1, "a b": 2}], "": 0}),
    )
    .await;
    assert_eq!(report.status, BatchStatus::Invalid);
    let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    assert!(errors.iter().all(|e| !e.starts_with(':')), "{errors:#?}");
    let has = |needle: &str| errors.iter().any(|e| e.contains(needle));
    assert!(has("[\"\"]: unknown field"), "{errors:#?}");
    assert!(has("steps[0][\"\"]: unknown field"), "{errors:#?}");
    assert!(has("steps[0][\"a b\"]: unknown field"), "{errors:#?}");
}

#[tokio::test]
async fn result_report_and_session_sizes_are_capped_by_name() {
    let host = common::host_with(|c| {
        // echo returns its value and the same text as content: ~4 KB per step.
        c.limits.max_result_bytes = 6_000;
        c.limits.max_report_bytes = 9_000;
        c.limits.max_session_vars_bytes = 3_000;
    })
    .await;
    let big = "x".repeat(2_000);
    let huge = "y".repeat(4_000);
    assert!(huge.len() * 2 > 6_000);

    let report = run(
        &host,
        None,
        json!({"steps": [step("echo", json!({"value": huge}))]}),
    )
    .await;
    let error = report.steps[0].error.as_ref().expect("fails");
    assert_eq!(error.code, "result-too-large", "{error:?}");
    assert!(
        error.message.contains("limits.max_result_bytes = 6000"),
        "{error:?}"
    );
    assert!(report.steps[0].value.is_none());

    let report = run(
        &host,
        None,
        json!({"steps": [
            step("echo", json!({"value": big})),
            step("echo", json!({"value": "${STEP_1}"})),
            step("count", json!({})),
        ]}),
    )
    .await;
    assert_eq!(report.status, BatchStatus::Failed, "{report:#?}");
    assert_eq!(report.steps[0].status, StepStatus::Passed);
    let error = report.steps[1].error.as_ref().expect("fails");
    assert_eq!(error.code, "report-too-large");
    assert!(
        error.message.contains("limits.max_report_bytes = 9000"),
        "{error:?}"
    );
    assert!(report.steps[1].value.is_none() && report.steps[1].input.is_none());
    assert_eq!(
        report.steps_executed, 2,
        "the batch stops at the capped step"
    );

    let vars = |name: &str, value: &str| json!({"steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": value}, "assign_to": name}]});
    let first = run(&host, Some("s"), vars("a", &big)).await;
    assert_eq!(first.status, BatchStatus::Passed, "{first:#?}");
    let second = run(&host, Some("s"), vars("b", &big)).await;
    let error = second.steps[0].error.as_ref().expect("fails");
    assert_eq!(error.code, "session-vars-too-large", "{error:?}");
    assert!(
        error.message.contains("`b`") && error.message.contains("3000"),
        "{error:?}"
    );
    // Replacing `a` frees its old size; `b` was never set.
    let again = run(&host, Some("s"), vars("a", &big)).await;
    assert_eq!(
        again.status,
        BatchStatus::Passed,
        "{:?}",
        again.steps[0].error
    );
    let read = run(
        &host,
        Some("s"),
        json!({"steps": [step("echo", json!({"value": "${b}"}))]}),
    )
    .await;
    assert_eq!(
        read.status,
        BatchStatus::Invalid,
        "`b` does not exist: {read:#?}"
    );
}

/// The reproduction of issue 11: a 1 KiB result, repeated 1,024 times into a second step and
/// that repeated 8,192 times into a third, once would have asked for 8 GiB.
fn repeated_reference_attack(as_array_items: bool) -> serde_json::Value {
    let repeat = |reference: &str, times: usize| {
        if as_array_items {
            json!(vec![reference; times])
        } else {
            json!(reference.repeat(times))
        }
    };
    json!({"steps": [
        step("echo", json!({"value": "x".repeat(1_024)})),
        step("echo", json!({"value": repeat("${STEP_1}", 1_024)})),
        step("echo", json!({"value": repeat("${STEP_2}", 8_192)})),
    ]})
}

#[tokio::test]
async fn repeated_references_cannot_make_the_host_allocate_an_unbounded_input() {
    let host = host().await;
    for (as_array_items, field) in [(false, "input.value"), (true, "input.value[")] {
        let request = repeated_reference_attack(as_array_items);
        assert!(request.to_string().len() < 120_000, "a small request");
        let started = Instant::now();
        let report = run(&host, None, request).await;
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "refused quickly, took {:?}",
            started.elapsed()
        );
        assert_eq!(report.status, BatchStatus::Failed, "{:?}", report.summary());
        assert_eq!(report.steps_executed, 3);
        // The steps before it ran and keep their results.
        assert_eq!(report.steps[0].status, StepStatus::Passed);
        assert_eq!(report.steps[0].value, Some(json!("x".repeat(1_024))));
        assert_eq!(report.steps[1].status, StepStatus::Passed);
        let second = report.steps[1]
            .value
            .as_ref()
            .expect("step 2 keeps its value");
        assert!(second.to_string().len() > 1_024 * 1_024, "step 2 is 1 MiB");

        let third = &report.steps[2];
        assert_eq!(third.status, StepStatus::Failed);
        assert_eq!(third.attempts, 0, "nothing of the step ran");
        assert!(third.input.is_none() && third.value.is_none());
        let error = third.error.as_ref().expect("step 3 fails");
        assert_eq!(error.code, "input-too-large");
        assert!(!error.input_fired);
        for needle in [
            "step 3: ",
            field,
            "substituting `${STEP_2}`",
            "past limits.max_input_bytes = 16777216",
            "the step did not run",
        ] {
            assert!(
                error.message.contains(needle),
                "{needle}: {}",
                error.message
            );
        }
        let details = error.details.as_ref().expect("details name the limit");
        assert_eq!(details["limit"], "limits.max_input_bytes");
        assert_eq!(details["max"], 16_777_216);
        assert!(
            details["field"]
                .as_str()
                .is_some_and(|f| f.starts_with(field)),
            "{details}"
        );
    }
    // The host carries on.
    let after = run(
        &host,
        None,
        json!({"steps": [step("echo", json!({"value": 1}))]}),
    )
    .await;
    assert_eq!(after.status, BatchStatus::Passed);
}

#[tokio::test]
async fn a_chained_batch_within_the_input_limit_passes_up_to_the_byte() {
    // `{"value":"` + 3 × 2,000 bytes + `"}`: the resolved input of step 2.
    const RESOLVED: u64 = 6_012;
    let request = json!({"steps": [
        step("echo", json!({"value": "x".repeat(2_000)})),
        step("echo", json!({"value": "${STEP_1}${STEP_1}${STEP_1}"})),
        step("echo", json!({"value": {"a": "${STEP_1}", "n": ["${STEP_2}"]}})),
    ]});
    let exact = host_with(|c| c.limits.max_input_bytes = RESOLVED).await;
    let report = run(&exact, None, request.clone()).await;
    // Step 3 holds step 2's 6,000 bytes and step 1's 2,000: past the limit.
    assert_eq!(
        report.steps[1].status,
        StepStatus::Passed,
        "{:?}",
        report.summary()
    );
    let input = report.steps[1].input.as_ref().expect("the resolved input");
    assert_eq!(input.to_string().len() as u64, RESOLVED);
    let error = report.steps[2].error.as_ref().expect("step 3 is too large");
    assert_eq!(error.code, "input-too-large", "{error:?}");
    assert!(
        error.message.contains("limits.max_input_bytes = 6012"),
        "{error:?}"
    );

    let one_short = host_with(|c| c.limits.max_input_bytes = RESOLVED - 1).await;
    let report = run(&one_short, None, request.clone()).await;
    assert_eq!(report.steps[0].status, StepStatus::Passed);
    let error = report.steps[1].error.as_ref().expect("one byte too many");
    assert_eq!(error.code, "input-too-large", "{error:?}");
    assert!(
        error
            .message
            .contains("step 2: input.value: substituting `${STEP_1}`"),
        "{error:?}"
    );
    assert_eq!(report.steps_executed, 2, "the batch stops there");

    let roomy = host().await;
    let report = run(&roomy, None, request).await;
    assert_eq!(report.status, BatchStatus::Passed, "{:?}", report.summary());
    assert_eq!(
        report.steps[2].value,
        Some(json!({"a": "x".repeat(2_000), "n": ["x".repeat(6_000)]}))
    );
}

#[tokio::test]
async fn input_nesting_is_capped_as_written_and_once_resolved() {
    let host = host().await;
    let nest = |levels: usize, leaf: serde_json::Value| {
        let mut v = leaf;
        for _ in 0..levels {
            v = json!([v]);
        }
        v
    };
    // 1 level for the input object, 40 for the value: fine as written.
    let request = json!({"steps": [
        step("echo", json!({"value": nest(40, json!(1))})),
        step("echo", json!({"value": nest(30, json!("${STEP_1}"))})),
    ]});
    let report = run(&host, None, request).await;
    assert_eq!(report.steps[0].status, StepStatus::Passed);
    let error = report.steps[1]
        .error
        .as_ref()
        .expect("too deep once resolved");
    assert_eq!(error.code, "input-too-deep", "{error:?}");
    assert!(!error.input_fired);
    assert!(
        error.message.starts_with("step 2: input.value[0][0]")
            && error.message.contains("substituting `${STEP_1}`")
            && error.message.contains("past limits.max_input_depth = 64"),
        "{error:?}"
    );

    let request = json!({"steps": [step("echo", json!({"value": nest(64, json!(1))}))]});
    let report = run(&host, None, request).await;
    assert_eq!(report.status, BatchStatus::Invalid);
    assert_eq!(report.steps_executed, 0);
    let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("step 1: steps[0].input.value[0]")
                && e.contains("more than 64 levels deep, past limits.max_input_depth = 64")),
        "{errors:#?}"
    );
}

#[tokio::test]
async fn session_variables_too_big_to_substitute_are_refused_before_anything_runs() {
    let host = host_with(|c| c.limits.max_input_bytes = 10_000).await;
    let set = json!({"steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": "y".repeat(3_000)}, "assign_to": "big"}]});
    assert_eq!(
        run(&host, Some("big"), set).await.status,
        BatchStatus::Passed
    );
    let report = run(
        &host,
        Some("big"),
        json!({"steps": [
            step("count", json!({})),
            step("echo", json!({"value": ["${big}", "${big}", "${big}", "${big}"]})),
        ]}),
    )
    .await;
    assert_eq!(report.status, BatchStatus::Invalid);
    assert_eq!(report.steps_executed, 0, "not even step 1 ran");
    let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        errors,
        [
            "step 2: steps[1].input.value[3]: `${big}` (3002 bytes) brings the session variables this input substitutes to at least 12008 bytes, past limits.max_input_bytes = 10000; refer to a part of the variable (a path such as `${name.field}`) or store less in it"
        ]
    );
    let fits = run(
        &host,
        Some("big"),
        json!({"steps": [step("echo", json!({"value": ["${big}", "${big}", "${big}"]}))]}),
    )
    .await;
    assert_eq!(fits.status, BatchStatus::Passed, "{:?}", fits.summary());
}

#[tokio::test]
async fn a_tenant_cap_on_the_input_size_applies() {
    use stephost::tenancy::{TenantConfig, TenantLimits, TenantsFile, hash_token};
    let mut config = stephost::config::Config::default();
    config.engine.max_instances = 64;
    config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
    let tenant = TenantConfig {
        id: "small".into(),
        token_sha256: vec![hash_token("token-small")],
        plugins: vec!["*".into()],
        grants: Default::default(),
        limits: TenantLimits {
            max_input_bytes: Some(5_000),
            ..TenantLimits::default()
        },
    };
    let host = stephost::Host::start_with_tenants(
        config,
        Some(TenantsFile {
            tenants: vec![tenant],
        }),
    )
    .await
    .expect("host starts");
    let who = host
        .tenants()
        .authenticate("token-small")
        .expect("the token maps to the tenant");
    let report = host
        .run_batch(
            &json!({"steps": [
                step("echo", json!({"value": "z".repeat(2_000)})),
                step("echo", json!({"value": "${STEP_1}${STEP_1}${STEP_1}"})),
            ]}),
            BatchOptions {
                tenant: Some(who),
                ..BatchOptions::default()
            },
        )
        .await;
    assert_eq!(report.steps[0].status, StepStatus::Passed);
    let error = report.steps[1]
        .error
        .as_ref()
        .expect("past the tenant's cap");
    assert_eq!(error.code, "input-too-large", "{error:?}");
    assert!(
        error.message.contains("limits.max_input_bytes = 5000"),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_dry_run_plans_without_running_and_resolves_what_it_can() {
    let host = host().await;
    let count = || json!({"plugin": "testkit", "verb": "count", "input": {}});
    let first = run(&host, Some("dry"), json!({"steps": [count()]})).await;
    assert_eq!(first.steps[0].value, Some(json!(1)), "{first:#?}");
    let seed = run(
        &host,
        Some("dry"),
        json!({"steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": "Ada"}, "assign_to": "who"}]}),
    )
    .await;
    assert_eq!(seed.status, BatchStatus::Passed, "{seed:#?}");
    let planned = run(
        &host,
        Some("dry"),
        json!({"dry_run": true, "on_failure": "continue", "steps": [
            count(),
            {"plugin": "testkit", "verb": "echo", "input": {"value": {"name": "${who}", "then": "${STEP_1}"}},
             "assign_to": "greeting", "retry": {"attempts": 3}, "timeout_ms": 5000},
            step("echo", json!({"value": "${greeting}"})),
        ]}),
    )
    .await;
    assert_eq!(planned.status, BatchStatus::Planned, "{planned:#?}");
    assert!(planned.steps.is_empty());
    let plan = planned.plan.as_ref().expect("the plan");
    assert_eq!(plan.on_failure, "continue");
    assert_eq!(plan.steps.len(), 3);
    let echo = &plan.steps[1];
    assert_eq!(echo.status, "planned");
    // The session's variable is resolved; this batch's result is not.
    assert_eq!(
        echo.input,
        json!({"value": {"name": "Ada", "then": "${STEP_1}"}})
    );
    assert_eq!(echo.unresolved.len(), 1, "{echo:#?}");
    assert_eq!(echo.unresolved[0].field, "input.value.then");
    assert!(
        echo.unresolved[0].reason.contains("dry run"),
        "{:?}",
        echo.unresolved[0]
    );
    assert_eq!(echo.budget.timeout_ms, 5000);
    assert_eq!(echo.retry.attempts, 3);
    assert_eq!(echo.assign_to.as_deref(), Some("greeting"));
    let third = &plan.steps[2];
    assert!(
        third.unresolved[0].reason.contains("set by step 2"),
        "{third:#?}"
    );
    // Nothing ran: the counter goes on from where the real run left it.
    let after = run(&host, Some("dry"), json!({"steps": [count()]})).await;
    assert_eq!(after.steps[0].value, Some(json!(2)), "{after:#?}");
    // A dry run is validated like a real one.
    let bad = run(
        &host,
        Some("dry"),
        json!({"dry_run": "yes", "steps": [{"plugin": "testkit", "verb": "echo", "input": {}}]}),
    )
    .await;
    assert_eq!(bad.status, BatchStatus::Invalid, "{bad:#?}");
    let fields: Vec<&str> = bad.errors.iter().map(|p| p.field.as_str()).collect();
    assert!(fields.contains(&"dry_run"), "{fields:?}");
    assert!(fields.contains(&"steps[0].input"), "{fields:?}");
}

#[tokio::test]
async fn log_lines_count_against_the_report_limit() {
    // A plugin chooses its log lines as freely as its value: 1,000 steps of
    // 200 lines of 4 KiB would be 800 MB in one report if they were free.
    let host = common::host_with(|c| c.limits.max_report_bytes = 9_000).await;
    let line = "l".repeat(2_900);
    let steps: Vec<serde_json::Value> = (0..10)
        .map(|_| step("log", json!({"message": line})))
        .collect();
    let report = run(&host, None, json!({"steps": steps})).await;
    assert_eq!(report.status, BatchStatus::Failed, "{report:#?}");
    let capped = report
        .steps
        .iter()
        .position(|s| {
            s.error
                .as_ref()
                .is_some_and(|e| e.code == "report-too-large")
        })
        .expect("a step is capped");
    assert_eq!(capped, 3, "three lines of 2,900 bytes fit in 9,000");
    assert!(report.steps[capped].logs.is_empty());
    assert_eq!(report.steps_executed, 4);
}

//! Per-step host overhead: how much time stephost adds around a plugin call.
//!
//! Run with `cargo bench --bench step_overhead` (a plain `main`, `harness = false`,
//! timed with `std::time` only). It prints markdown tables; `BENCHMARKS.md` holds the
//! figures and the targets they are checked against:
//!
//! - a. steps in a batch, one warm session (the testkit instance already exists):
//!   1,000 `echo` steps, 1,000 steps each chained to the previous one with
//!   `${STEP_N}`, and for comparison the planner alone, a raw component call and a
//!   one-step batch, both in a warm session and in a fresh one (instantiation
//!   included). Target: under 50 us per step.
//! - b. one step from a cold start with a warm compile cache: `Host::start` plus the
//!   first batch in process, and `stephost run -` spawned as a process, from spawn to
//!   exit. Target: under 100 ms.
//!
//! Everything is measured twice: with the default configuration (what users get) and
//! with `engine.max_instances = 64`, to show what the pool size costs.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stephost::batch::{self, BatchStatus, PlanContext, Report, UnknownPolicy};
use stephost::config::Config;
use stephost::contract::CallBudget;
use stephost::runtime::PluginInstance;
use stephost::{BatchOptions, Host};
use tokio_util::sync::CancellationToken;

/// Steps in a long batch.
const STEPS: usize = 1_000;
/// Timed long batches per measurement.
const BATCHES: usize = 30;
/// Timed one-step batches and raw calls per measurement.
const SMALL_RUNS: usize = 1_000;
/// Fresh sessions (each instantiates testkit) per measurement.
const FRESH_SESSIONS: usize = 200;
/// Cold starts, in process and as a spawned process.
const COLD_RUNS: usize = 20;

/// Per-step target inside a batch.
const STEP_TARGET: Duration = Duration::from_micros(50);
/// Target from process start to the first step result, warm cache.
const COLD_TARGET: Duration = Duration::from_millis(100);

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime starts");
    let stephost = stephost_binary();
    println!("# stephost step overhead\n");
    println!("{}", machine());
    println!("binary: {}\n", stephost.display());

    let variants: [(&str, Option<u32>); 2] = [("defaults", None), ("max_instances=64", Some(64))];
    let mut table = Table::default();
    for (name, max_instances) in variants {
        let cache = tempfile::tempdir().expect("temp cache dir");
        let mut config = Config::default();
        config.engine.cache_dir = Some(cache.path().to_owned());
        if let Some(n) = max_instances {
            config.engine.max_instances = n;
        }
        runtime.block_on(in_batch(&mut table, name, &config));
        runtime.block_on(cold_in_process(&mut table, name, &config));
        cold_process(&mut table, name, &stephost, max_instances);
    }
    table.print();
}

// ---------------------------------------------------------------------------------------
// a. Steps in a batch
// ---------------------------------------------------------------------------------------

async fn in_batch(table: &mut Table, variant: &str, config: &Config) {
    let host = Host::start(config.clone()).await.expect("host starts");
    let echo = echo_batch();
    let chained = chained_batch();

    // 1,000 independent echo steps and 1,000 chained ones, each batch timed whole:
    // validation, the run and the report, as `run_batch` does them for every caller.
    for (what, request) in [
        ("1,000 echo steps", &echo),
        ("1,000 chained steps", &chained),
    ] {
        let runs = long_batches(&host, request).await;
        let per_step = |d: &Duration| *d / STEPS as u32;
        table.per_step(
            variant,
            &format!("{what}: run_batch / 1,000"),
            runs.iter().map(|r| per_step(&r.total)).collect(),
        );
        table.per_step(
            variant,
            &format!("{what}: run phase (report.time_ms) / 1,000"),
            runs.iter().map(|r| per_step(&r.run)).collect(),
        );
        table.per_step(
            variant,
            &format!("{what}: per-step time_ms in the report (1 us resolution)"),
            runs.iter().flat_map(|r| r.steps.iter().copied()).collect(),
        );
        table.per_step(
            variant,
            &format!("{what}: plan only / 1,000"),
            plan_only(&host, request).iter().map(per_step).collect(),
        );
    }

    // The same echo batch from request text to report text, as the CLI and MCP see it.
    let text = echo.to_string();
    let mut samples = Vec::with_capacity(BATCHES);
    for i in 0..BATCHES + 2 {
        let started = Instant::now();
        let request: Value = serde_json::from_str(&text).expect("batch JSON parses");
        let report = run_in(&host, Some("bench-text"), &request).await;
        let out = serde_json::to_string(&report).expect("report serializes");
        let elapsed = started.elapsed();
        std::hint::black_box(out);
        if i >= 2 {
            samples.push(elapsed / STEPS as u32);
        }
    }
    table.per_step(
        variant,
        "1,000 echo steps: parse + run_batch + serialize / 1,000",
        samples,
    );

    // The component call alone, no batch engine: what the per-step figures above
    // spend inside wasmtime and the guest.
    table.per_step(
        variant,
        "raw `invoke(echo)` on a live instance",
        raw_calls(&host, config).await,
    );

    // A one-step batch in a warm session, and in a fresh session each time
    // (instantiation of testkit included).
    let one = one_step_batch();
    let mut warm = Vec::with_capacity(SMALL_RUNS);
    for i in 0..SMALL_RUNS + 10 {
        let started = Instant::now();
        let report = run_in(&host, Some("bench-one"), &one).await;
        let elapsed = started.elapsed();
        check(&report);
        if i >= 10 {
            warm.push(elapsed);
        }
    }
    table.per_step(variant, "1-step batch, warm session", warm);
    let mut fresh = Vec::with_capacity(FRESH_SESSIONS);
    for _ in 0..FRESH_SESSIONS {
        let started = Instant::now();
        let report = run_in(&host, None, &one).await;
        let elapsed = started.elapsed();
        check(&report);
        fresh.push(elapsed);
        // Keep the pool and the session table from filling up.
        let id = report.session_id.expect("a fresh session has an id");
        host.sessions().remove(stephost::tenancy::LOCAL_TENANT, &id);
    }
    table.per_step(
        variant,
        "1-step batch, fresh session (instantiation included)",
        fresh,
    );
}

/// One timed long batch.
struct BatchRun {
    /// Around `run_batch`.
    total: Duration,
    /// The run phase, as the report states it.
    run: Duration,
    /// Each step's own `time_ms`.
    steps: Vec<Duration>,
}

async fn long_batches(host: &Host, request: &Value) -> Vec<BatchRun> {
    let session = format!("bench-{}", next_id());
    // Two untimed batches create the instance and warm caches.
    for _ in 0..2 {
        check(&run_in(host, Some(&session), request).await);
    }
    let mut runs = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        let started = Instant::now();
        let report = run_in(host, Some(&session), request).await;
        let total = started.elapsed();
        check(&report);
        assert_eq!(report.steps_executed, STEPS, "every step ran");
        runs.push(BatchRun {
            total,
            run: from_ms(report.time_ms),
            steps: report.steps.iter().map(|s| from_ms(s.time_ms)).collect(),
        });
    }
    runs
}

/// Validation alone (`batch::plan`), which `run_batch` does before running.
fn plan_only(host: &Host, request: &Value) -> Vec<Duration> {
    let ctx = PlanContext {
        catalog: host.catalog(),
        limits: &host.config().limits,
        session_vars: &|_| false,
        policy: UnknownPolicy::Reject,
    };
    let mut samples = Vec::with_capacity(BATCHES);
    for i in 0..BATCHES + 2 {
        let started = Instant::now();
        let plan = batch::plan(request, &ctx);
        let elapsed = started.elapsed();
        assert!(plan.is_ok(), "the bench batch is valid");
        std::hint::black_box(plan.ok());
        if i >= 2 {
            samples.push(elapsed);
        }
    }
    samples
}

/// `invoke("echo")` on one instance, bypassing the batch engine.
async fn raw_calls(host: &Host, config: &Config) -> Vec<Duration> {
    let plugin = host.registry().get("testkit").expect("testkit is built in");
    let budget = CallBudget {
        deadline: Instant::now() + Duration::from_secs(600),
        timeout: Duration::from_secs(600),
        fuel: config.limits.fuel_per_step,
        cancel: CancellationToken::new(),
    };
    let mut instance = PluginInstance::new(
        plugin.clone(),
        config.limits.memory_bytes(),
        config.limits.max_log_lines_per_step,
        &budget,
    )
    .await
    .expect("testkit instantiates");
    let input = r#"{"value":{"n":1,"tags":["a","b"],"name":"bench"}}"#;
    let mut samples = Vec::with_capacity(SMALL_RUNS);
    for i in 0..SMALL_RUNS + 10 {
        let started = Instant::now();
        let outcome = instance.invoke("echo", input, &budget).await;
        let elapsed = started.elapsed();
        assert!(
            matches!(outcome.result, Ok(Ok(_))),
            "raw echo call failed: {:?}",
            outcome.result.err()
        );
        if i >= 10 {
            samples.push(elapsed);
        }
    }
    samples
}

// ---------------------------------------------------------------------------------------
// b. One step from a cold start, warm compile cache
// ---------------------------------------------------------------------------------------

/// `Host::start` and the first batch in this process, a fresh host each time.
async fn cold_in_process(table: &mut Table, variant: &str, config: &Config) {
    // Fill the compile cache.
    drop(Host::start(config.clone()).await.expect("host starts"));
    let one = one_step_batch();
    let mut start = Vec::with_capacity(COLD_RUNS);
    let mut first = Vec::with_capacity(COLD_RUNS);
    let mut total = Vec::with_capacity(COLD_RUNS);
    for _ in 0..COLD_RUNS {
        let t0 = Instant::now();
        let host = Host::start(config.clone()).await.expect("host starts");
        let t1 = Instant::now();
        let report = run_in(&host, None, &one).await;
        let t2 = Instant::now();
        check(&report);
        start.push(t1 - t0);
        first.push(t2 - t1);
        total.push(t2 - t0);
        drop(host);
    }
    table.cold(variant, "in process: Host::start", start);
    table.cold(variant, "in process: first 1-step batch", first);
    table.cold(
        variant,
        "in process: Host::start + first step result",
        total,
    );
}

/// `stephost run -` with a one-step batch on stdin, from spawn to exit.
fn cold_process(table: &mut Table, variant: &str, stephost: &Path, max_instances: Option<u32>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = dir.path().join("cache");
    let config_file = max_instances.map(|n| {
        let path = dir.path().join("stephost.toml");
        std::fs::write(&path, format!("[engine]\nmax_instances = {n}\n")).expect("config written");
        path
    });
    let batch = one_step_batch().to_string();
    let spawn = || {
        let mut cmd = Command::new(stephost);
        if let Some(path) = &config_file {
            cmd.arg("--config").arg(path);
        }
        cmd.args(["run", "-"])
            .env("STEPHOST_CACHE_DIR", &cache)
            .env_remove("STEPHOST_CONFIG")
            .env_remove("STEPHOST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = cmd.spawn().expect("stephost spawns");
        child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(batch.as_bytes())
            .expect("batch written to stdin");
        let output = child.wait_with_output().expect("stephost exits");
        let elapsed = started.elapsed();
        assert!(
            output.status.success(),
            "stephost run - failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        elapsed
    };
    // The first run compiles testkit and fills the cache.
    let compile = spawn();
    table.cold(
        variant,
        "process: first run, empty cache (compiles)",
        vec![compile],
    );
    let samples = (0..COLD_RUNS).map(|_| spawn()).collect();
    table.cold(variant, "process: `stephost run -`, spawn to exit", samples);
}

// ---------------------------------------------------------------------------------------
// Batches and helpers
// ---------------------------------------------------------------------------------------

fn echo_step(value: Value) -> Value {
    json!({"plugin": "testkit", "verb": "echo", "input": {"value": value}})
}

/// A small object, so each step moves a little structure, not a bare number.
fn payload(n: usize) -> Value {
    json!({"n": n, "tags": ["a", "b"], "name": "bench"})
}

/// 1,000 independent echo steps.
fn echo_batch() -> Value {
    let steps: Vec<Value> = (0..STEPS).map(|i| echo_step(payload(i))).collect();
    json!({"steps": steps})
}

/// 1,000 echo steps, each passing on the previous step's value: step index i reads
/// `${STEP_i}`, which (1-based) is index i - 1.
fn chained_batch() -> Value {
    let mut steps = vec![echo_step(payload(0))];
    steps.extend((1..STEPS).map(|i| echo_step(json!(format!("${{STEP_{i}}}")))));
    json!({"steps": steps})
}

fn one_step_batch() -> Value {
    json!({"steps": [echo_step(payload(1))]})
}

async fn run_in(host: &Host, session: Option<&str>, request: &Value) -> Report {
    host.run_batch(
        request,
        BatchOptions {
            session: session.map(stephost::session::SessionRef::Named),
            ..BatchOptions::default()
        },
    )
    .await
}

fn check(report: &Report) {
    assert_eq!(
        report.status,
        BatchStatus::Passed,
        "bench batch did not pass: {}",
        report.summary()
    );
}

fn from_ms(ms: f64) -> Duration {
    Duration::from_secs_f64(ms / 1e3)
}

/// A distinct suffix per call, for session ids.
fn next_id() -> u128 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    u128::from(NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The `stephost` binary: cargo's path for benches, else next to this executable
/// (`target/release/examples/..` or `target/release/deps/..`), or `$STEPHOST_BIN`.
fn stephost_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("STEPHOST_BIN") {
        return PathBuf::from(path);
    }
    if let Some(path) = option_env!("CARGO_BIN_EXE_stephost") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("current exe path");
    let path = exe
        .parent()
        .and_then(Path::parent)
        .expect("the bench lives two levels under the target dir")
        .join("stephost");
    assert!(
        path.exists(),
        "{} does not exist; run `cargo build --release` first or set STEPHOST_BIN",
        path.display()
    );
    path
}

/// CPU model and core count, for the report header.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')))
        .map_or("unknown CPU", |(_, m)| m.trim());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    format!("machine: {model}, {cores} cores")
}

// ---------------------------------------------------------------------------------------
// Statistics and output
// ---------------------------------------------------------------------------------------

/// One row: a measurement's samples, summarised.
struct Row {
    variant: String,
    what: String,
    n: usize,
    median: Duration,
    p90: Duration,
    p99: Duration,
    target: Option<Duration>,
    micros: bool,
}

#[derive(Default)]
struct Table {
    rows: Vec<Row>,
}

impl Table {
    /// A row in microseconds, checked against the per-step target when it is one of the
    /// whole-batch figures.
    fn per_step(&mut self, variant: &str, what: &str, samples: Vec<Duration>) {
        let target = what.contains("run_batch / 1,000").then_some(STEP_TARGET);
        self.push(variant, what, samples, target, true);
    }

    /// A row in milliseconds, checked against the cold-start target for a first step
    /// result.
    fn cold(&mut self, variant: &str, what: &str, samples: Vec<Duration>) {
        let target = (what.contains("first step result") || what.contains("spawn to exit"))
            .then_some(COLD_TARGET);
        self.push(variant, what, samples, target, false);
    }

    fn push(
        &mut self,
        variant: &str,
        what: &str,
        mut samples: Vec<Duration>,
        target: Option<Duration>,
        micros: bool,
    ) {
        samples.sort_unstable();
        let row = Row {
            variant: variant.to_owned(),
            what: what.to_owned(),
            n: samples.len(),
            median: percentile(&samples, 50.0),
            p90: percentile(&samples, 90.0),
            p99: percentile(&samples, 99.0),
            target,
            micros,
        };
        // Progress on stderr while the rest runs.
        eprintln!(
            "{:>16}  {:<58} median {}",
            row.variant,
            row.what,
            show(row.median, row.micros)
        );
        self.rows.push(row);
    }

    fn print(&self) {
        println!("| config | measurement | n | median | p90 | p99 | target |");
        println!("|---|---|---:|---:|---:|---:|---|");
        for row in &self.rows {
            let target = match row.target {
                None => String::new(),
                Some(t) if row.median < t && row.p99 < t => {
                    format!("< {} met", show(t, row.micros))
                }
                Some(t) if row.median < t => format!("< {} met (median)", show(t, row.micros)),
                Some(t) => format!("< {} MISSED", show(t, row.micros)),
            };
            println!(
                "| {} | {} | {} | {} | {} | {} | {target} |",
                row.variant,
                row.what,
                row.n,
                show(row.median, row.micros),
                show(row.p90, row.micros),
                show(row.p99, row.micros),
            );
        }
        println!(
            "\np90/p99 are nearest-rank over n samples; with n = 30 p99 is the maximum, with n = 20 both are the top samples."
        );
    }
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn show(d: Duration, micros: bool) -> String {
    if micros {
        format!("{:.1} us", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    }
}

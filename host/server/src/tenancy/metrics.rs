//! Prometheus metrics: counters and histograms kept in memory, rendered in the
//! text exposition format at `/metrics`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use stephost_batch::{Report, StepStatus};

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

type Labels = Vec<(&'static str, String)>;

#[derive(Default)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

#[derive(Default)]
struct Inner {
    counters: BTreeMap<(&'static str, Labels), u64>,
    histograms: BTreeMap<(&'static str, Labels), Histogram>,
}

/// All metrics of one host.
#[derive(Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

/// A gauge value computed at scrape time.
pub struct Gauge {
    /// Metric name.
    pub name: &'static str,
    /// Help text.
    pub help: &'static str,
    /// Labels.
    pub labels: Vec<(&'static str, String)>,
    /// Value.
    pub value: f64,
}

const HELP: &[(&str, &str, &str)] = &[
    (
        "stephost_batches_total",
        "counter",
        "Batches finished, by tenant and status.",
    ),
    (
        "stephost_steps_total",
        "counter",
        "Steps executed, by tenant, plugin and status.",
    ),
    (
        "stephost_step_failures_total",
        "counter",
        "Failed or timed-out steps, by tenant and failure code.",
    ),
    (
        "stephost_timeouts_total",
        "counter",
        "Steps stopped at their deadline, by tenant.",
    ),
    (
        "stephost_rejections_total",
        "counter",
        "Batches refused by a limit, by tenant and limit.",
    ),
    (
        "stephost_step_duration_seconds",
        "histogram",
        "Step wall time, by tenant.",
    ),
    (
        "stephost_batch_duration_seconds",
        "histogram",
        "Batch wall time, by tenant.",
    ),
];

impl Metrics {
    fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        f(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Adds `by` to a counter.
    pub fn inc(&self, name: &'static str, labels: Labels, by: u64) {
        self.with(|m| *m.counters.entry((name, labels)).or_default() += by);
    }

    /// Records one observation in a histogram.
    pub fn observe(&self, name: &'static str, labels: Labels, seconds: f64) {
        self.with(|m| {
            let h = m.histograms.entry((name, labels)).or_default();
            if h.counts.is_empty() {
                h.counts = vec![0; BUCKETS.len()];
            }
            for (i, bound) in BUCKETS.iter().enumerate() {
                if seconds <= *bound {
                    h.counts[i] += 1;
                }
            }
            h.sum += seconds;
            h.count += 1;
        });
    }

    /// Records a finished batch and its steps.
    pub fn record_batch(&self, tenant: &str, report: &Report) {
        let t = || ("tenant", tenant.to_owned());
        let status = serde_json::to_value(report.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        self.inc("stephost_batches_total", vec![t(), ("status", status)], 1);
        self.observe(
            "stephost_batch_duration_seconds",
            vec![t()],
            report.time_ms / 1e3,
        );
        for step in &report.steps {
            let status = match step.status {
                StepStatus::Passed => "passed",
                StepStatus::Failed => "failed",
                StepStatus::TimedOut => "timed_out",
                StepStatus::Cancelled => "cancelled",
            };
            self.inc(
                "stephost_steps_total",
                vec![
                    t(),
                    ("plugin", step.plugin.clone()),
                    ("status", status.to_owned()),
                ],
                1,
            );
            self.observe(
                "stephost_step_duration_seconds",
                vec![t()],
                step.time_ms / 1e3,
            );
            if step.status == StepStatus::TimedOut {
                self.inc("stephost_timeouts_total", vec![t()], 1);
            }
            if let Some(error) = &step.error {
                self.inc(
                    "stephost_step_failures_total",
                    vec![t(), ("code", error.code.to_string())],
                    1,
                );
            }
        }
    }

    /// Renders everything, plus `gauges`, in the Prometheus text format.
    pub fn render(&self, gauges: &[Gauge]) -> String {
        let mut out = String::new();
        self.with(|m| {
            for (name, kind, help) in HELP {
                let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
                for ((n, labels), value) in &m.counters {
                    if n == name {
                        let _ = writeln!(out, "{name}{} {value}", render_labels(labels, None));
                    }
                }
                for ((n, labels), h) in &m.histograms {
                    if n != name {
                        continue;
                    }
                    for (bound, count) in BUCKETS.iter().zip(&h.counts) {
                        let le = format!("{bound}");
                        let _ = writeln!(
                            out,
                            "{name}_bucket{} {count}",
                            render_labels(labels, Some(&le))
                        );
                    }
                    let _ = writeln!(
                        out,
                        "{name}_bucket{} {}",
                        render_labels(labels, Some("+Inf")),
                        h.count
                    );
                    let _ = writeln!(out, "{name}_sum{} {}", render_labels(labels, None), h.sum);
                    let _ = writeln!(
                        out,
                        "{name}_count{} {}",
                        render_labels(labels, None),
                        h.count
                    );
                }
            }
        });
        let mut last = "";
        for gauge in gauges {
            if gauge.name != last {
                let _ = writeln!(
                    out,
                    "# HELP {} {}\n# TYPE {} gauge",
                    gauge.name, gauge.help, gauge.name
                );
                last = gauge.name;
            }
            let _ = writeln!(
                out,
                "{}{} {}",
                gauge.name,
                render_labels(&gauge.labels, None),
                gauge.value
            );
        }
        out
    }
}

fn render_labels(labels: &[(&'static str, String)], le: Option<&str>) -> String {
    let mut parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if let Some(le) = le {
        parts.push(format!("le=\"{le}\""));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_histograms_and_gauges() {
        let m = Metrics::default();
        m.inc(
            "stephost_batches_total",
            vec![("tenant", "a".into()), ("status", "passed".into())],
            2,
        );
        m.observe(
            "stephost_step_duration_seconds",
            vec![("tenant", "a".into())],
            0.002,
        );
        let text = m.render(&[Gauge {
            name: "stephost_live_sessions",
            help: "Live sessions.",
            labels: vec![("tenant", "a\"b".into())],
            value: 3.0,
        }]);
        assert!(
            text.contains("stephost_batches_total{tenant=\"a\",status=\"passed\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("stephost_step_duration_seconds_bucket{tenant=\"a\",le=\"0.001\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("stephost_step_duration_seconds_bucket{tenant=\"a\",le=\"0.005\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("stephost_step_duration_seconds_count{tenant=\"a\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("stephost_live_sessions{tenant=\"a\\\"b\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE stephost_live_sessions gauge"),
            "{text}"
        );
    }
}

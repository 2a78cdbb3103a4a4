//! Traces kept for `resources/read`: per tenant, for a bounded time and size,
//! so a batch's trace can be fetched after the call that made it and no
//! tenant can read another's or fill the host's memory with them.
//!
//! A page is kept as the buffer it was built in (no copy), and a page larger
//! than a tenant's whole allowance is not built at all ([`Traces::build`]).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use stephost_batch::trace::{MAX_PAGE_BYTES, TooLarge, trace_page};
use stephost_batch::{Limits, Report};

/// The URI scheme and path every trace is named under.
pub const TRACE_PREFIX: &str = "stephost://traces/";

/// How long a trace is kept.
const KEEP_FOR: Duration = Duration::from_secs(3600);
/// The most traces kept per tenant (the oldest go first).
const MAX_PER_TENANT: usize = 64;
/// The most trace bytes kept per tenant (the oldest go first); no page
/// larger than this is built.
const MAX_BYTES_PER_TENANT: usize = MAX_PAGE_BYTES;

/// One kept trace.
struct Kept {
    batch_id: String,
    /// The page as it was built: an `Arc<str>` would copy it.
    html: Arc<String>,
    at: Instant,
}

/// Every tenant's recent traces.
#[derive(Default)]
pub struct Traces {
    by_tenant: Mutex<BTreeMap<String, VecDeque<Kept>>>,
}

/// A trace as `resources/list` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEntry {
    /// `stephost://traces/<batch_id>`.
    pub uri: String,
    /// Its size in bytes.
    pub bytes: usize,
}

impl Traces {
    /// Builds the trace of `report` (the run of `request` under `limits`)
    /// and keeps it as `tenant`'s; returns its URI and size. A page larger
    /// than a tenant's whole allowance is counted (up to that size), not
    /// built.
    ///
    /// # Errors
    /// [`TooLarge`] when it was not built.
    pub fn build(
        &self,
        tenant: &str,
        request: &Value,
        report: &Report,
        limits: &Limits,
    ) -> Result<(String, usize), TooLarge> {
        let html = trace_page(request, report, limits, MAX_BYTES_PER_TENANT)?;
        let bytes = html.len();
        let uri = self.put(tenant, &report.batch_id, html).ok_or(TooLarge {
            max: MAX_BYTES_PER_TENANT,
        })?;
        Ok((uri, bytes))
    }

    /// Keeps `html` as `tenant`'s trace of `batch_id`; returns its URI. A
    /// trace larger than a tenant's whole allowance is not kept (`None`).
    pub fn put(&self, tenant: &str, batch_id: &str, html: String) -> Option<String> {
        if html.len() > MAX_BYTES_PER_TENANT {
            return None;
        }
        let mut all = self
            .by_tenant
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let kept = all.entry(tenant.to_owned()).or_default();
        expire(kept);
        kept.push_back(Kept {
            batch_id: batch_id.to_owned(),
            html: Arc::new(html),
            at: Instant::now(),
        });
        let mut bytes: usize = kept.iter().map(|k| k.html.len()).sum();
        while kept.len() > MAX_PER_TENANT || bytes > MAX_BYTES_PER_TENANT {
            match kept.pop_front() {
                Some(old) => bytes -= old.html.len(),
                None => break,
            }
        }
        Some(format!("{TRACE_PREFIX}{batch_id}"))
    }

    /// `tenant`'s trace at `uri`, if it is still kept.
    pub fn get(&self, tenant: &str, uri: &str) -> Option<Arc<String>> {
        let batch_id = uri.strip_prefix(TRACE_PREFIX)?;
        let mut all = self
            .by_tenant
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let kept = all.get_mut(tenant)?;
        expire(kept);
        kept.iter()
            .find(|k| k.batch_id == batch_id)
            .map(|k| k.html.clone())
    }

    /// `tenant`'s kept traces, oldest first.
    pub fn list(&self, tenant: &str) -> Vec<TraceEntry> {
        let mut all = self
            .by_tenant
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(kept) = all.get_mut(tenant) else {
            return Vec::new();
        };
        expire(kept);
        kept.iter()
            .map(|k| TraceEntry {
                uri: format!("{TRACE_PREFIX}{}", k.batch_id),
                bytes: k.html.len(),
            })
            .collect()
    }
}

fn expire(kept: &mut VecDeque<Kept>) {
    while kept.front().is_some_and(|k| k.at.elapsed() > KEEP_FOR) {
        kept.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_are_per_tenant_and_bounded() {
        let traces = Traces::default();
        let uri = traces.put("a", "b-1", "<p>one</p>".into()).expect("kept");
        assert_eq!(uri, "stephost://traces/b-1");
        assert_eq!(
            traces.get("a", &uri).as_deref().map(String::as_str),
            Some("<p>one</p>")
        );
        assert_eq!(traces.get("b", &uri), None, "another tenant reads nothing");
        assert_eq!(traces.get("a", "stephost://traces/b-2"), None);
        for n in 0..MAX_PER_TENANT + 5 {
            traces.put("a", &format!("b-x{n}"), "x".into());
        }
        assert_eq!(traces.list("a").len(), MAX_PER_TENANT);
        assert_eq!(traces.get("a", &uri), None, "the oldest went first");
        assert_eq!(
            traces.put("a", "huge", "x".repeat(MAX_BYTES_PER_TENANT + 1)),
            None
        );
    }

    #[test]
    fn a_page_past_the_allowance_is_not_built() {
        let traces = Traces::default();
        // 9 MiB of quotes is 18 MiB as JSON and 63 MiB on the page, once as
        // the input and once as the value.
        let quotes = "\"".repeat(9 * 1024 * 1024);
        let step = stephost_batch::StepReport {
            index: 0,
            label: None,
            plugin: "testkit".into(),
            verb: "echo".into(),
            status: stephost_batch::StepStatus::Passed,
            attempts: 1,
            time_ms: 1.0,
            input: Some(serde_json::json!({"value": quotes})),
            value: Some(Value::String(quotes)),
            error: None,
            content: Vec::new(),
            logs: Vec::new(),
            recovery: Vec::new(),
            notes: Vec::new(),
        };
        let report = Report {
            steps: vec![step],
            time_ms: 1.0,
            ..Report::invalid("b-big".into(), None, 1, Vec::new())
        };
        let refused = traces
            .build(
                "a",
                &serde_json::json!({"steps": [{}]}),
                &report,
                &Limits::default(),
            )
            .expect_err("not built");
        assert_eq!(refused.max, MAX_BYTES_PER_TENANT);
        assert!(traces.list("a").is_empty());

        let small = Report {
            time_ms: 1.0,
            ..Report::invalid("b-small".into(), None, 0, Vec::new())
        };
        let (uri, bytes) = traces
            .build(
                "a",
                &serde_json::json!({"steps": []}),
                &small,
                &Limits::default(),
            )
            .expect("built");
        assert_eq!(uri, "stephost://traces/b-small");
        assert_eq!(traces.get("a", &uri).map(|html| html.len()), Some(bytes));
    }
}

//! Traces kept for `resources/read`: per tenant, for a bounded time and size,
//! so a batch's trace can be fetched after the call that made it and no
//! tenant can read another's or fill the host's memory with them.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The URI scheme and path every trace is named under.
pub const TRACE_PREFIX: &str = "stephost://traces/";

/// How long a trace is kept.
const KEEP_FOR: Duration = Duration::from_secs(3600);
/// The most traces kept per tenant (the oldest go first).
const MAX_PER_TENANT: usize = 64;
/// The most trace bytes kept per tenant (the oldest go first).
const MAX_BYTES_PER_TENANT: usize = 64 * 1024 * 1024;

/// One kept trace.
struct Kept {
    batch_id: String,
    html: Arc<str>,
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
            html: Arc::from(html),
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
    pub fn get(&self, tenant: &str, uri: &str) -> Option<Arc<str>> {
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
        assert_eq!(traces.get("a", &uri).as_deref(), Some("<p>one</p>"));
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
}

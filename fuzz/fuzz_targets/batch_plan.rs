//! `batch_plan`: the whole-batch planner (`stephost_batch::plan`) against a catalog
//! of the built-in plugins (their real verbs and schemas, from the snapshot), under
//! both reference policies and with and without session variables.
//!
//! Input: JSON text is planned as it is (what a client sends); anything else
//! drives a structured generator that builds batches from the catalog's own
//! plugins, verbs and input schemas, so most steps get past the first checks and
//! reach references, limits and schema validation.

#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use stephost_fuzz::{POLICIES, check, fixture, json, schema};

fuzz_target!(|data: &[u8]| {
    let fixture = fixture();
    let request = match json::parse(data) {
        Some(request) => request,
        None => {
            let mut u = Unstructured::new(data);
            let max_steps = fixture.limits.max_steps_per_batch;
            match schema::batch(&mut u, &fixture.catalog, max_steps) {
                Ok(request) => request,
                Err(_) => return,
            }
        }
    };
    for policy in POLICIES {
        let _ = check::plan(&request, policy, &|_| false);
        let _ = check::plan(&request, policy, &check::session_var);
    }
});

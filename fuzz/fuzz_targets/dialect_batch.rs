//! `dialect_batch`: the generic `batch` tool's mapping (`Dialect::to_batch`, then
//! the planner, as the MCP server runs it) and its `render` of reports.
//!
//! Input: JSON text is taken as the tool arguments; anything else builds the
//! arguments from the tool's own input schema with the catalog's plugins, verbs
//! and verb schemas, and a report to render.

#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use stephost_batch::dialects::Dialect;
use stephost_batch::dialects::batch::Batch;
use stephost_fuzz::{check, fixture, json, report, schema};

fuzz_target!(|data: &[u8]| {
    if let Some(Value::Object(args)) = json::parse(data) {
        check::dialect(&Batch, &args);
        return;
    }
    let _ = structured(&mut Unstructured::new(data));
});

fn structured(u: &mut Unstructured<'_>) -> Result<()> {
    let fixture = fixture();
    let catalog = &fixture.catalog;
    let args = if u.arbitrary()? {
        // The batch schema lists plugin names but leaves verbs and inputs open:
        // build steps from the verbs' own schemas instead.
        schema::batch(u, catalog, fixture.limits.max_steps_per_batch)?
    } else {
        schema::instance(u, &Batch.input_schema(catalog))?
    };
    if let Value::Object(args) = &args {
        check::dialect(&Batch, args);
    }
    let plugins: Vec<&str> = catalog.names().collect();
    check::render(&Batch, &report::report(u, &plugins)?);
    Ok(())
}

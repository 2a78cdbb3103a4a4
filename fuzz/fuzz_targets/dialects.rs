//! `dialects`: every MCP tool the server offers, batch dialects and single verbs
//! alike, built the way the server builds its tool catalog (`fixture::tools`:
//! every built-in dialect whose plugin is loaded, then one tool per plugin verb),
//! so dialects added later are fuzzed here without a new target.
//!
//! Input: the first byte picks the tool (in catalog order: the batch tools first,
//! then one tool per plugin verb); the rest, when JSON text, is the tool
//! arguments, else it builds the arguments from the tool's published input schema
//! and a report for the tool's `render`.

#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use stephost_batch::dialects::Dialect;
use stephost_fuzz::{check, fixture, json, report, schema};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let tools = &fixture().tools;
    if tools.is_empty() {
        return;
    }
    let dialect = tools[usize::from(pick) % tools.len()].as_ref();
    if let Some(Value::Object(args)) = json::parse(rest) {
        check::dialect(dialect, &args);
        return;
    }
    let _ = structured(dialect, &mut Unstructured::new(rest));
});

fn structured(dialect: &dyn Dialect, u: &mut Unstructured<'_>) -> Result<()> {
    let catalog = &fixture().catalog;
    if let Value::Object(args) = schema::instance(u, &dialect.input_schema(catalog))? {
        check::dialect(dialect, &args);
    }
    let plugins: Vec<&str> = catalog.names().collect();
    check::render(dialect, &report::report(u, &plugins)?);
    Ok(())
}

//! `dialects`: every MCP tool the server offers, batch dialects and single verbs
//! alike, taken from the server's own tool catalog, so dialects added later are
//! fuzzed here without a new target.
//!
//! Input: the first byte picks the tool (in catalog order: the batch tools first,
//! then one tool per plugin verb); the rest, when JSON text, is the tool
//! arguments, else it builds the arguments from the tool's published input schema
//! and a report for the tool's `render`.

#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use stephost::dialects::Dialect;
use stephost_fuzz::{check, fixture, json, report, schema};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let catalog = &fixture().catalog;
    let tools = catalog.tools();
    if tools.is_empty() {
        return;
    }
    let tool = &tools[usize::from(pick) % tools.len()];
    let dialect = catalog
        .get(&tool.name)
        .expect("every listed tool has a dialect");
    if let Some(Value::Object(args)) = json::parse(rest) {
        check::dialect(dialect.as_ref(), &args);
        return;
    }
    let schema = Value::Object((*tool.input_schema).clone());
    let _ = structured(dialect.as_ref(), &schema, &mut Unstructured::new(rest));
});

fn structured(dialect: &dyn Dialect, schema: &Value, u: &mut Unstructured<'_>) -> Result<()> {
    if let Value::Object(args) = schema::instance(u, schema)? {
        check::dialect(dialect, &args);
    }
    let plugins: Vec<&str> = fixture().host.registry().names().collect();
    check::render(dialect, &report::report(u, &plugins)?);
    Ok(())
}

//! `dialect_single`: one plugin verb as its own MCP tool (`SingleVerb`): its
//! mapping of tool arguments (including the `session_id` it strips or keeps) to a
//! one-step batch, planned as the server would, and its `render` of reports.
//!
//! Input: the first byte picks the plugin verb; the rest, when JSON text, is the
//! tool arguments, else it builds the arguments from the tool's input schema and a
//! report to render.

#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use stephost_batch::dialects::Dialect;
use stephost_batch::dialects::single::SingleVerb;
use stephost_fuzz::{check, fixture, json, report, schema, tool_name};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let catalog = &fixture().catalog;
    let verbs: Vec<_> = catalog
        .plugins()
        .flat_map(|p| p.verb_names().map(move |v| (p.clone(), v.to_owned())))
        .collect();
    if verbs.is_empty() {
        return;
    }
    let (plugin, verb) = verbs[usize::from(pick) % verbs.len()].clone();
    let tool = SingleVerb::new(tool_name(&plugin, &verb), plugin, verb);
    if let Some(Value::Object(args)) = json::parse(rest) {
        check::dialect(&tool, &args);
        return;
    }
    let _ = structured(&tool, &mut Unstructured::new(rest));
});

fn structured(tool: &SingleVerb, u: &mut Unstructured<'_>) -> Result<()> {
    let catalog = &fixture().catalog;
    if let Value::Object(args) = schema::instance(u, &tool.input_schema(catalog))? {
        check::dialect(tool, &args);
    }
    let plugins: Vec<&str> = catalog.names().collect();
    check::render(tool, &report::report(u, &plugins)?);
    Ok(())
}

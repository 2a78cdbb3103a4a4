//! `stephost plugin check`: a component examined as this host would load and
//! serve it, with every problem at once.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use stephost_contract::ContractVersion;
use stephost_contract::review::Severity;
use stephost_runtime::{Finding, Inspection, Stage};

use crate::Host;
use crate::mcp;

/// What checking a component found.
#[derive(Debug, Serialize)]
pub struct CheckReport {
    /// Whether this host would load the component and serve its tools.
    pub ok: bool,
    /// The contract versions this host serves.
    pub host_serves: Vec<&'static str>,
    /// What loading found.
    #[serde(flatten)]
    pub inspection: Inspection,
    /// Each verb's MCP tool, once the component described itself.
    pub tools: Vec<ToolName>,
}

/// One verb's MCP tool name.
#[derive(Debug, Serialize)]
pub struct ToolName {
    /// The verb.
    pub verb: String,
    /// Its tool name over MCP.
    pub tool: String,
    /// Who else claims that name, if anyone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clashes_with: Option<String>,
}

impl CheckReport {
    /// Errors, then warnings.
    pub fn problems(&self) -> impl Iterator<Item = &Finding> {
        let of = |severity| {
            self.inspection
                .problems
                .iter()
                .filter(move |p| p.severity() == severity)
        };
        of(Severity::Error).chain(of(Severity::Warning))
    }
}

/// Examines the component at `path` against `host`: its plugins, grants,
/// pins and MCP tool names.
pub async fn check(host: &Host, path: &Path) -> CheckReport {
    let mut inspection = host.registry().inspect(path).await;
    let mut tools = Vec::new();
    if let Some(spec) = inspection.spec.clone() {
        let renames = &host.config().mcp.tool_names;
        let mut claimed = match mcp::claimed_names(host) {
            Ok(claimed) => claimed,
            Err(e) => {
                inspection
                    .problems
                    .push(Finding::error(Stage::Names, e.to_string()));
                BTreeMap::new()
            }
        };
        // The configuration may load this very file: its own tools are no clash.
        let own = format!("{}.", spec.name());
        claimed.retain(|_, owner| !owner.starts_with(&own));
        let mut all = claimed.clone();
        for verb in spec.verb_names() {
            let tool = mcp::tool_name_for(&spec, verb, renames);
            all.entry(tool.clone())
                .or_insert_with(|| format!("{}.{verb}", spec.name()));
            let clash = claimed.get(&tool).cloned();
            if let Some(first) = &clash {
                let owner = format!("{}.{verb}", spec.name());
                inspection.problems.push(Finding::error(
                    Stage::Names,
                    format!(
                        "verb `{verb}`: its MCP tool `{tool}` is already {first}'s; `serve` refuses to start with both. Rename it in the config: [mcp.tool_names] \"{owner}\" = \"{}\"",
                        mcp::suggest_name(&owner, &all)
                    ),
                ));
            }
            claimed.insert(tool.clone(), format!("{}.{verb}", spec.name()));
            tools.push(ToolName {
                verb: verb.to_owned(),
                tool,
                clashes_with: clash,
            });
        }
    }
    CheckReport {
        ok: inspection.loads(),
        host_serves: ContractVersion::ALL.iter().map(|v| v.as_str()).collect(),
        inspection,
        tools,
    }
}

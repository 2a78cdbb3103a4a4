//! `stephost plugin check`: the report, as text or JSON, and its exit code.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use stephost::Host;
use stephost::check::CheckReport;
use stephost::config::Config;
use stephost::contract::review::Severity;
use stephost::runtime::Stage;

/// Checks `file` against a host started from `config` (which does not load
/// `file` itself unless the config names it).
pub(crate) async fn check(config: Config, file: &Path, json: bool) -> ExitCode {
    if let Err(e) = std::fs::metadata(file) {
        eprintln!("stephost: cannot read {}: {e}", file.display());
        return super::exit(super::EXIT_INPUT);
    }
    let host = match Host::start(config).await {
        Ok(host) => host,
        Err(e) => {
            eprintln!("stephost: the host did not start, so nothing was checked: {e:#}");
            return super::exit(crate::cli::EXIT_HOST);
        }
    };
    let report = stephost::check::check(&host, file).await;
    let text = if json {
        serde_json::to_string_pretty(&report).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    } else {
        render(&report)
    };
    println!("{text}");
    if report.ok {
        ExitCode::SUCCESS
    } else if report
        .inspection
        .problems
        .iter()
        .any(|p| p.stage == Stage::Read)
    {
        super::exit(super::EXIT_INPUT)
    } else {
        ExitCode::FAILURE
    }
}

/// The report for a person: facts first, then every problem.
pub(crate) fn render(report: &CheckReport) -> String {
    let found = &report.inspection;
    let mut out = String::new();
    let verdict = if report.ok { "loads" } else { "REFUSED" };
    let _ = writeln!(out, "{}: {verdict}", found.file);
    let _ = writeln!(
        out,
        "  size       {} bytes, sha256 {}",
        group(found.size_bytes),
        found.sha256
    );
    let served = format!(
        "{}-{}",
        report.host_serves.first().copied().unwrap_or(""),
        report.host_serves.last().copied().unwrap_or("")
    );
    match found.contract {
        Some(version) => {
            let _ = writeln!(out, "  contract   {version} (this host serves {served})");
        }
        None => {
            let _ = writeln!(out, "  contract   unknown (this host serves {served})");
        }
    }
    if let Some(ms) = found.first_compile_ms {
        let cached = found
            .cached_load_ms
            .map(|c| format!(", {c} ms from the compile cache"))
            .unwrap_or_default();
        let _ = writeln!(out, "  compile    {ms} ms the first time{cached}");
    }
    // What every plugin has is one line per package; what needs a grant or
    // is not offered, one line each.
    let mut basics: Vec<(String, Vec<&str>)> = Vec::new();
    let mut lines = Vec::new();
    for import in &found.imports {
        let need = match (import.known, import.grant, import.granted) {
            (true, None, _) => {
                let (package, rest) = import.name.split_once('/').unwrap_or((&import.name, ""));
                let (interface, version) = rest.split_once('@').unwrap_or((rest, ""));
                let package = format!("{package}@{version}");
                match basics.iter_mut().find(|(p, _)| *p == package) {
                    Some((_, interfaces)) => interfaces.push(interface),
                    None => basics.push((package, vec![interface])),
                }
                continue;
            }
            (false, _, _) => "not offered by this host".to_owned(),
            (true, Some(key), Some(true)) => format!("needs `{key}`: granted"),
            (true, Some("rf_libraries"), Some(false)) => {
                "loads, but no library is granted in `rf_libraries`: every call is refused"
                    .to_owned()
            }
            (true, Some(key), Some(false)) => format!("needs `{key}`: NOT granted"),
            (true, Some(key), None) => format!("needs `{key}`"),
        };
        lines.push(format!("{} ({need})", import.name));
    }
    if !basics.is_empty() {
        let listed: Vec<String> = basics
            .iter()
            .map(|(package, interfaces)| format!("{package}: {}", interfaces.join(", ")))
            .collect();
        lines.insert(0, format!("every plugin has: {}", listed.join("; ")));
    }
    for (i, line) in lines.iter().enumerate() {
        let head = if i == 0 {
            "  imports   "
        } else {
            "            "
        };
        let _ = writeln!(out, "{head} {line}");
    }
    if let Some(spec) = &found.spec {
        let info = spec.info();
        let _ = writeln!(
            out,
            "  plugin     {} {}: {}",
            info.name, info.version, info.description
        );
        let width = report.tools.iter().map(|t| t.verb.len()).max().unwrap_or(0);
        for (i, tool) in report.tools.iter().enumerate() {
            let head = if i == 0 {
                "  verbs     "
            } else {
                "            "
            };
            let clash = tool
                .clashes_with
                .as_ref()
                .map(|owner| format!(" (CLASHES with {owner})"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{head} {:<width$}  MCP tool `{}`{clash}",
                tool.verb, tool.tool
            );
        }
    } else if let Some(name) = &found.name {
        let _ = writeln!(out, "  plugin     {name}");
    }
    let problems: Vec<_> = report.problems().collect();
    if problems.is_empty() {
        let _ = writeln!(out, "no problems");
    } else {
        let errors = problems
            .iter()
            .filter(|p| p.severity() == Severity::Error)
            .count();
        let _ = writeln!(
            out,
            "{errors} error(s), {} warning(s):",
            problems.len() - errors
        );
        for problem in problems {
            let tag = match problem.severity() {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            let _ = writeln!(out, "  {tag}: {}", problem.problem);
        }
    }
    out.trim_end().to_owned()
}

/// `1234567` as `1,234,567`.
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

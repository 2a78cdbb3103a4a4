//! The `stephost` command: run a batch, list plugins, or serve MCP.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}

//! The `stephost` command: run a batch, list plugins, or serve MCP.

mod cli;
mod plugin_kit;

use std::process::ExitCode;

// Why: a batch's JSON (request, plan, report, reply) is many small
// short-lived allocations across tokio's worker threads, where glibc's malloc
// spent a quarter of a 200-step batch's server time (BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    cli::main()
}

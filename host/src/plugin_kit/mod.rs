//! `stephost plugin new | check | test`: what a plugin author runs, in any of
//! the three languages the templates cover.

mod cases;
mod check;
mod templates;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

pub(crate) use cases::test;
pub(crate) use check::check;
pub(crate) use templates::{Lang, new};

/// What `stephost plugin` does.
#[derive(Subcommand)]
pub(crate) enum PluginCommand {
    /// Create a plugin project: builds to a component with one command, with
    /// a passing native test, a case file for `plugin test` and a README.
    New {
        /// Plugin name: lower-case `[a-z][a-z0-9-]*` (steps address it by this).
        name: String,
        /// Language of the project.
        #[arg(long, value_enum, default_value_t = Lang::Rust)]
        lang: Lang,
        /// Folder to create (default: ./NAME); must not exist or be empty.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Load a component as this host would and report everything found: its
    /// contract version, imports and the grants they need, schema problems
    /// with their JSON pointers, MCP tool names and clashes, size and compile
    /// time. Exit 0: the host loads it and serves its tools (warnings allowed);
    /// 1: it has problems the host refuses; 2: the file cannot be read;
    /// 3: the host itself cannot start (bad config).
    Check {
        /// The component (`.wasm`).
        file: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        host: crate::cli::HostArgs,
    },
    /// Run the cases of CASES.json against a component in the real host, in
    /// order, in one session. Exit 0: every case passed; 1: a case failed;
    /// 2: the case file is unusable; 3: the host or the component did not start.
    Test {
        /// The component (`.wasm`).
        file: PathBuf,
        /// The case file: `{"cases": [{"name", "verb", "input", "expect"}]}`.
        cases: PathBuf,
        /// Print the results as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        host: crate::cli::HostArgs,
    },
}

/// Exit code for unusable input (a file that cannot be read, a bad case file).
const EXIT_INPUT: u8 = 2;

fn exit(code: u8) -> ExitCode {
    ExitCode::from(code)
}

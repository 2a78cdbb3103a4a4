//! The project templates of `stephost plugin new`, built into the binary so a
//! fresh machine needs no checkout: each language's files, the contract's WIT
//! and, for Rust, the guest SDK.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

/// A template's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Lang {
    /// Rust on the guest SDK (`cargo build --release --target wasm32-wasip2`).
    Rust,
    /// JavaScript with componentize-js (`npm install && npm run build`).
    Js,
    /// Python with componentize-py (`sh build.sh`).
    Python,
}

/// The version of wit-bindgen the SDK is built with (plugins/Cargo.toml).
const WIT_BINDGEN: &str = "0.63.0";

const RUST: &[(&str, &str)] = &[
    (
        ".gitignore",
        include_str!("../../templates/rust/.gitignore"),
    ),
    (
        "Cargo.toml",
        include_str!("../../templates/rust/Cargo.toml"),
    ),
    ("README.md", include_str!("../../templates/rust/README.md")),
    (
        "cases.json",
        include_str!("../../templates/rust/cases.json"),
    ),
    (
        "rust-toolchain.toml",
        include_str!("../../templates/rust/rust-toolchain.toml"),
    ),
    (
        "src/lib.rs",
        include_str!("../../templates/rust/src/lib.rs"),
    ),
];
const JS: &[(&str, &str)] = &[
    (".gitignore", include_str!("../../templates/js/.gitignore")),
    ("README.md", include_str!("../../templates/js/README.md")),
    ("cases.json", include_str!("../../templates/js/cases.json")),
    (
        "package.json",
        include_str!("../../templates/js/package.json"),
    ),
    (
        "src/plugin.js",
        include_str!("../../templates/js/src/plugin.js"),
    ),
    (
        "src/verbs.js",
        include_str!("../../templates/js/src/verbs.js"),
    ),
    (
        "test/verbs.test.js",
        include_str!("../../templates/js/test/verbs.test.js"),
    ),
];
const PYTHON: &[(&str, &str)] = &[
    (
        ".gitignore",
        include_str!("../../templates/python/.gitignore"),
    ),
    (
        "README.md",
        include_str!("../../templates/python/README.md"),
    ),
    ("app.py", include_str!("../../templates/python/app.py")),
    ("build.sh", include_str!("../../templates/python/build.sh")),
    (
        "cases.json",
        include_str!("../../templates/python/cases.json"),
    ),
    (
        "requirements.txt",
        include_str!("../../templates/python/requirements.txt"),
    ),
    (
        "test_verbs.py",
        include_str!("../../templates/python/test_verbs.py"),
    ),
    ("verbs.py", include_str!("../../templates/python/verbs.py")),
];

/// The contract every template builds against, written to `wit/`.
const WIT: &[(&str, &str)] = &[
    (
        "wit/desktop.wit",
        include_str!("../../../wit/0.5.0/desktop.wit"),
    ),
    ("wit/log.wit", include_str!("../../../wit/0.5.0/log.wit")),
    (
        "wit/python.wit",
        include_str!("../../../wit/0.5.0/python.wit"),
    ),
    (
        "wit/rf-library.wit",
        include_str!("../../../wit/0.5.0/rf-library.wit"),
    ),
    (
        "wit/types.wit",
        include_str!("../../../wit/0.5.0/types.wit"),
    ),
    (
        "wit/webdriver.wit",
        include_str!("../../../wit/0.5.0/webdriver.wit"),
    ),
    (
        "wit/worlds.wit",
        include_str!("../../../wit/0.5.0/worlds.wit"),
    ),
];

/// The guest SDK's sources, written to `sdk/src/` of a Rust project.
const SDK: &[(&str, &str)] = &[
    (
        "sdk/src/args.rs",
        include_str!("../../../plugins/sdk/src/args.rs"),
    ),
    (
        "sdk/src/desktop.rs",
        include_str!("../../../plugins/sdk/src/desktop.rs"),
    ),
    (
        "sdk/src/failure.rs",
        include_str!("../../../plugins/sdk/src/failure.rs"),
    ),
    (
        "sdk/src/lib.rs",
        include_str!("../../../plugins/sdk/src/lib.rs"),
    ),
    (
        "sdk/src/log.rs",
        include_str!("../../../plugins/sdk/src/log.rs"),
    ),
    (
        "sdk/src/mock.rs",
        include_str!("../../../plugins/sdk/src/mock.rs"),
    ),
    (
        "sdk/src/output.rs",
        include_str!("../../../plugins/sdk/src/output.rs"),
    ),
    (
        "sdk/src/plugin.rs",
        include_str!("../../../plugins/sdk/src/plugin.rs"),
    ),
    (
        "sdk/src/python.rs",
        include_str!("../../../plugins/sdk/src/python.rs"),
    ),
    (
        "sdk/src/rf_library.rs",
        include_str!("../../../plugins/sdk/src/rf_library.rs"),
    ),
    (
        "sdk/src/tests.rs",
        include_str!("../../../plugins/sdk/src/tests.rs"),
    ),
    (
        "sdk/src/webdriver.rs",
        include_str!("../../../plugins/sdk/src/webdriver.rs"),
    ),
];

impl Lang {
    fn files(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Lang::Rust => RUST,
            Lang::Js => JS,
            Lang::Python => PYTHON,
        }
    }

    /// What to run in the new project, in order, for the README's promise.
    fn next_steps(self, name: &str) -> Vec<String> {
        let module = name.replace('-', "_");
        match self {
            Lang::Rust => vec![
                "cargo test".to_owned(),
                "cargo build --release --target wasm32-wasip2".to_owned(),
                format!("stephost plugin check target/wasm32-wasip2/release/{module}.wasm"),
                format!(
                    "stephost plugin test target/wasm32-wasip2/release/{module}.wasm cases.json"
                ),
            ],
            Lang::Js => vec![
                "npm install".to_owned(),
                "npm test".to_owned(),
                "npm run build".to_owned(),
                format!("stephost plugin check {name}.wasm"),
                format!("stephost plugin test {name}.wasm cases.json"),
            ],
            Lang::Python => vec![
                "python3 -m unittest".to_owned(),
                "sh build.sh".to_owned(),
                format!("stephost plugin check {name}.wasm"),
                format!("stephost plugin test {name}.wasm cases.json"),
            ],
        }
    }
}

/// Every file of a `lang` project named `name`, with its text.
pub(crate) fn project(lang: Lang, name: &str) -> Vec<(String, String)> {
    let module = name.replace('-', "_");
    let fill = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{module}}", &module)
    };
    let mut files: Vec<(String, String)> = lang
        .files()
        .iter()
        .map(|(path, text)| ((*path).to_owned(), fill(text)))
        .collect();
    files.extend(
        WIT.iter()
            .map(|(path, text)| ((*path).to_owned(), (*text).to_owned())),
    );
    if lang == Lang::Rust {
        for (path, text) in SDK {
            // In the checkout the SDK reads the contract two folders up; in a
            // project it is the project's own wit/.
            let text = if *path == "sdk/src/lib.rs" {
                text.replace("path: \"../../wit/0.5.0\"", "path: \"../wit\"")
            } else {
                (*text).to_owned()
            };
            files.push(((*path).to_owned(), text));
        }
        files.push(("sdk/Cargo.toml".to_owned(), sdk_manifest()));
    }
    files
}

/// The SDK's manifest for a project: the checkout's inherits its settings
/// from the plugins workspace, which a project does not have.
fn sdk_manifest() -> String {
    format!(
        r#"[package]
name = "stephost-plugin-sdk"
description = "Guest SDK for stephost plugins (stephost:plugin@0.5.0), as written by `stephost plugin new`."
version = "{version}"
edition = "2024"
rust-version = "1.95"
license = "Apache-2.0"
publish = false

[lib]
name = "stephost_plugin"

[dependencies]
wit-bindgen = "{WIT_BINDGEN}"
serde_json = "1"
"#,
        version = env!("CARGO_PKG_VERSION"),
    )
}

/// `stephost plugin new`: writes the project and says what to run next.
pub(crate) fn new(name: &str, lang: Lang, dir: Option<&Path>) -> ExitCode {
    match write_project(name, lang, dir) {
        Ok(dir) => {
            println!(
                "created {} ({lang:?} plugin `{name}`); next:",
                dir.display()
            );
            println!("  cd {}", dir.display());
            for step in lang.next_steps(name) {
                println!("  {step}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("stephost: {e:#}");
            super::exit(super::EXIT_INPUT)
        }
    }
}

fn write_project(name: &str, lang: Lang, dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    anyhow::ensure!(
        valid,
        "`{name}` is not a plugin name: plugin names are lower-case `[a-z][a-z0-9-]*` (steps address the plugin by it)"
    );
    let dir = dir.map_or_else(|| PathBuf::from(name), Path::to_owned);
    if let Ok(mut entries) = std::fs::read_dir(&dir) {
        anyhow::ensure!(
            entries.next().is_none(),
            "{} already exists and is not empty; choose another --dir",
            dir.display()
        );
    }
    for (path, text) in project(lang, name) {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdk_copy_is_complete_and_reads_the_projects_wit() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../plugins/sdk/src");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .expect("the SDK sources")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .map(|name| format!("sdk/src/{name}"))
            .collect();
        on_disk.sort();
        let embedded: Vec<&str> = SDK.iter().map(|(path, _)| *path).collect();
        assert_eq!(on_disk, embedded, "templates.rs must list every SDK source");
        let files = project(Lang::Rust, "hello-world");
        let lib = files
            .iter()
            .find(|(path, _)| path == "sdk/src/lib.rs")
            .map(|(_, text)| text.as_str())
            .unwrap_or_default();
        assert!(lib.contains("path: \"../wit\""), "the SDK must read wit/");
        let manifest = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../plugins/Cargo.toml"
        ))
        .expect("plugins/Cargo.toml");
        assert!(
            manifest.contains(&format!("wit-bindgen = \"{WIT_BINDGEN}\"")),
            "WIT_BINDGEN must match plugins/Cargo.toml"
        );
    }

    #[test]
    fn every_template_fills_its_names_and_carries_the_contract() {
        for lang in [Lang::Rust, Lang::Js, Lang::Python] {
            let files = project(lang, "hello-world");
            for (path, text) in &files {
                let placeholder = text.match_indices("{{").any(|(at, _)| {
                    let rest = &text[at + 2..];
                    let word = rest.len()
                        - rest
                            .trim_start_matches(|c: char| c.is_ascii_lowercase())
                            .len();
                    word > 0 && rest[word..].starts_with("}}")
                });
                assert!(!placeholder, "{lang:?} {path} keeps a placeholder");
            }
            for needed in ["README.md", "cases.json", "wit/worlds.wit", "wit/types.wit"] {
                assert!(
                    files.iter().any(|(path, _)| path == needed),
                    "{lang:?} has no {needed}"
                );
            }
        }
        let wit_files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../wit/0.5.0"))
            .expect("wit/0.5.0")
            .count();
        assert_eq!(
            WIT.len(),
            wit_files,
            "templates.rs must list every WIT file"
        );
    }
}

//! Builds the default guest plugins (the `plugins/` workspace) to WebAssembly
//! components and embeds them in the host, so `target/release/stephost` needs no
//! plugin files next to it.
//!
//! Steps: read the plugin crates from `plugins/Cargo.toml`, make sure the
//! `wasm32-wasip2` target is installed, run one nested `cargo build --workspace
//! --release --target wasm32-wasip2` for that workspace, copy each component into
//! `OUT_DIR` and write `OUT_DIR/embedded_plugins.rs`, which `src/embedded.rs`
//! includes.
//!
//! It also compiles the Python evaluator (`python/evaluator.py`, CPython with Robot
//! Framework beside it) to a component with componentize-py and embeds it as
//! `OUT_DIR/embedded_evaluator.rs`; see [`build_python_evaluator`].
//!
//! Std-only on purpose: the parsing below covers the plain Cargo.toml files of this
//! repository, not TOML in general.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The target every plugin is built for.
const WASM_TARGET: &str = "wasm32-wasip2";

/// The first eight bytes of a WebAssembly component (a core module has version 1).
const COMPONENT_HEADER: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

/// Environment that cargo sets for this build script, or that configures the host
/// build, and must not reach the guest build: host rustflags are wrong for wasm, and
/// the package, profile and target variables describe the host crate, not the guests.
/// `RUSTC` is deliberately kept: it is this toolchain's rustc, whose sysroot
/// `ensure_wasm_target` checked.
const CLEARED_VARS: &[&str] = &[
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_BUILD_TARGET",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET_DIR",
    "RUSTC_WORKSPACE_WRAPPER", // e.g. clippy-driver under `cargo clippy`
    "RUSTC_LINKER",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_CRATE_NAME",
    "OUT_DIR",
    "TARGET",
    "HOST",
    "PROFILE",
    "OPT_LEVEL",
    "DEBUG",
    "NUM_JOBS",
];

/// Prefixes of further variables cleared for the same reason.
const CLEARED_PREFIXES: &[&str] = &[
    "CARGO_PROFILE_",
    "CARGO_CFG_",
    "CARGO_FEATURE_",
    "CARGO_PKG_",
    "CARGO_MANIFEST_",
    "DEP_",
];

/// One plugin crate of the `plugins/` workspace.
struct Plugin {
    /// Package name; also the name the host registers the plugin under.
    name: String,
    /// File name of the built component (`<lib name>.wasm`).
    artifact: String,
}

fn main() {
    let manifest_dir = PathBuf::from(env_var("CARGO_MANIFEST_DIR"));
    // This crate is host/runtime; the repository root is two levels up.
    let root = manifest_dir
        .ancestors()
        .nth(2)
        .expect("host/runtime sits two levels below the repository root")
        .to_path_buf();
    // Another plugins workspace may stand in for plugins/ (one whose WIT sits
    // beside it as here): for building the host against a released set of
    // plugins while plugins/ is being changed.
    println!("cargo::rerun-if-env-changed=STEPHOST_PLUGINS_WORKSPACE");
    let plugins_dir = env::var_os("STEPHOST_PLUGINS_WORKSPACE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("plugins"));
    // The Python evaluator's tools are the repository's (scripts/deps.sh), whichever
    // plugins workspace is built.
    let evaluator_tools = root.join(".cache").join("evaluator");
    let root = plugins_dir.parent().map(Path::to_path_buf).unwrap_or(root);
    let out_dir = PathBuf::from(env_var("OUT_DIR"));

    // Rebuild the plugins when the contract or any plugin source changes. Directories
    // are scanned recursively by cargo; plugins/target is deliberately not listed,
    // since the nested build writes there every time.
    rerun_if_changed(&root.join("wit"));
    rerun_if_changed(&plugins_dir.join("Cargo.toml"));
    rerun_if_changed(&plugins_dir.join("Cargo.lock"));

    let plugins = find_plugins(&plugins_dir);
    ensure_wasm_target(&root);
    build_plugins(&plugins_dir);

    let release_dir = plugins_dir.join("target").join(WASM_TARGET).join("release");
    let mut generated = String::from("&[\n");
    for plugin in &plugins {
        let built = release_dir.join(&plugin.artifact);
        let bytes = fs::read(&built).unwrap_or_else(|e| {
            panic!(
                "plugin `{}`: expected component {} after the build: {e}",
                plugin.name,
                built.display()
            )
        });
        assert!(
            bytes.starts_with(&COMPONENT_HEADER),
            "plugin `{}`: {} is not a WebAssembly component (is its crate-type cdylib \
             and the target {WASM_TARGET}?)",
            plugin.name,
            built.display()
        );
        // Embed a copy in OUT_DIR so the host does not depend on plugins/target staying put.
        let embedded = out_dir.join(&plugin.artifact);
        write(&embedded, &bytes);
        let path = embedded.to_str().expect("OUT_DIR is valid UTF-8");
        writeln!(
            generated,
            "    EmbeddedPlugin {{ name: {:?}, bytes: include_bytes!({path:?}) }},",
            plugin.name
        )
        .expect("writing to a String cannot fail");
    }
    generated.push_str("]\n");
    write(&out_dir.join("embedded_plugins.rs"), generated.as_bytes());

    let evaluator = build_python_evaluator(&manifest_dir, &evaluator_tools, &out_dir);
    let generated = match evaluator {
        Some(path) => {
            // The compile cache keys the component by its digest: taken here once,
            // not by every host start over 28 MB.
            let digest = sha256_hex(&read_bytes(&path));
            let path = path.to_str().expect("OUT_DIR is valid UTF-8");
            format!("Some((include_bytes!({path:?}), {digest:?}))\n")
        }
        None => "None\n".to_owned(),
    };
    write(&out_dir.join("embedded_evaluator.rs"), generated.as_bytes());
}

/// Compiles `python/evaluator.py` with componentize-py into `OUT_DIR/python_evaluator.wasm`.
///
/// componentize-py and the packages bundled beside the evaluator (Robot Framework)
/// come from `scripts/deps.sh`, which installs them into `cache` (`.cache/evaluator`
/// at the repository root); `STEPHOST_COMPONENTIZE_PY` and `STEPHOST_EVALUATOR_SITE` point
/// elsewhere. `STEPHOST_NO_PYTHON_EVALUATOR=1` builds a host without the evaluator
/// (`None`): the rf plugin then evaluates with its own evaluator only, and says so
/// where that is not enough.
fn build_python_evaluator(manifest_dir: &Path, cache: &Path, out_dir: &Path) -> Option<PathBuf> {
    for key in [
        "STEPHOST_NO_PYTHON_EVALUATOR",
        "STEPHOST_COMPONENTIZE_PY",
        "STEPHOST_EVALUATOR_SITE",
    ] {
        println!("cargo::rerun-if-env-changed={key}");
    }
    if env::var("STEPHOST_NO_PYTHON_EVALUATOR").is_ok_and(|v| v == "1") {
        println!(
            "cargo::warning=STEPHOST_NO_PYTHON_EVALUATOR=1: building without the Python evaluator"
        );
        return None;
    }
    let source = manifest_dir.join("python");
    for module in python_modules(&source) {
        rerun_if_changed(&module);
    }
    rerun_if_changed(&source.join("wit"));
    rerun_if_changed(&source.join("requirements.txt"));
    rerun_if_changed(&source.join("build-requirements.txt"));
    // deps.sh rewrites the stamp whenever it reinstalls the tools.
    rerun_if_changed(&cache.join("stamp"));
    let componentize = env::var_os("STEPHOST_COMPONENTIZE_PY")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache.join("venv").join("bin").join("componentize-py"));
    let site = env::var_os("STEPHOST_EVALUATOR_SITE")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache.join("site"));
    assert!(
        componentize.is_file() && site.join("robot").is_dir(),
        "the Python evaluator needs componentize-py ({}) and Robot Framework in {}: run \
         scripts/deps.sh, or set STEPHOST_COMPONENTIZE_PY and STEPHOST_EVALUATOR_SITE, or \
         build without the evaluator with STEPHOST_NO_PYTHON_EVALUATOR=1",
        componentize.display(),
        site.display()
    );
    let output = out_dir.join("python_evaluator.wasm");
    // This script also reruns for every plugin change; the evaluator only needs
    // componentize-py's ~10 s when its own inputs changed.
    let fingerprint = evaluator_fingerprint(&source, cache, &componentize, &site);
    let fingerprint_file = out_dir.join("python_evaluator.fingerprint");
    if output.is_file() && fs::read_to_string(&fingerprint_file).ok() == Some(fingerprint.clone()) {
        return Some(output);
    }
    let status = Command::new(&componentize)
        .arg("-d")
        .arg(source.join("wit"))
        .args(["-w", "evaluator", "componentize", "-p"])
        .arg(&source)
        .arg("-p")
        .arg(&site)
        .arg("evaluator")
        .arg("-o")
        .arg(&output)
        // componentize-py writes its progress to stdout, which cargo reads as directives.
        .stdout(io::stderr())
        .stderr(Stdio::inherit())
        .status()
        .unwrap_or_else(|e| panic!("could not run {}: {e}", componentize.display()));
    assert!(
        status.success(),
        "componentize-py failed to build the Python evaluator ({status}); the errors are above"
    );
    let bytes = read_bytes(&output);
    assert!(
        bytes.starts_with(&COMPONENT_HEADER),
        "{} is not a WebAssembly component",
        output.display()
    );
    write(&fingerprint_file, fingerprint.as_bytes());
    Some(output)
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .fold(String::new(), |mut out, byte| {
            write!(out, "{byte:02x}").expect("writing to a String cannot fail");
            out
        })
}

/// What the evaluator component is built from: its sources, the installed tools'
/// stamp, and where the tools are.
fn evaluator_fingerprint(source: &Path, cache: &Path, componentize: &Path, site: &Path) -> String {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    let mut files = python_modules(source);
    files.push(cache.join("stamp"));
    if let Ok(entries) = fs::read_dir(source.join("wit")) {
        let mut wit: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
        wit.sort();
        files.extend(wit);
    }
    for file in files {
        file.hash(&mut hasher);
        fs::read(&file).unwrap_or_default().hash(&mut hasher);
    }
    componentize.hash(&mut hasher);
    site.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// The evaluator's own modules: every `.py` file in `python/` (componentize-py
/// bundles the folder, and `evaluator.py` imports the others).
fn python_modules(source: &Path) -> Vec<PathBuf> {
    let mut modules: Vec<PathBuf> = fs::read_dir(source)
        .unwrap_or_else(|e| panic!("{}: {e}", source.display()))
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "py"))
        .collect();
    modules.sort();
    modules
}

/// Reads the plugin crates: the members of `plugins/Cargo.toml` whose library is a
/// `cdylib` (a member that is a plain library, shared by plugins, is not embedded).
fn find_plugins(plugins_dir: &Path) -> Vec<Plugin> {
    let workspace_toml = read(&plugins_dir.join("Cargo.toml"));
    let mut plugins = Vec::new();
    for member in workspace_members(&workspace_toml) {
        assert!(
            !member.contains(['*', '?', '[']),
            "plugins/Cargo.toml: member `{member}` is a glob; host/runtime/build.rs needs the \
             members listed one by one"
        );
        let crate_dir = plugins_dir.join(&member);
        rerun_if_changed(&crate_dir);
        let manifest = read(&crate_dir.join("Cargo.toml"));
        let lib = section(&manifest, "lib");
        if !lib.contains("cdylib") {
            continue;
        }
        // Test-only plugins (`embed = false`) are built for the tests but not built in.
        let metadata = section(&manifest, "package.metadata.stephost");
        if metadata
            .lines()
            .any(|line| line.replace(' ', "") == "embed=false")
        {
            continue;
        }
        let name = string_value(&section(&manifest, "package"), "name")
            .unwrap_or_else(|| panic!("plugins/{member}/Cargo.toml: no `name` in [package]"));
        // The artifact is named after the library, which defaults to the package name.
        let lib_name = string_value(&lib, "name").unwrap_or_else(|| name.replace('-', "_"));
        plugins.push(Plugin {
            name,
            artifact: format!("{lib_name}.wasm"),
        });
    }
    plugins
}

/// The `members` array of the `[workspace]` section.
fn workspace_members(workspace_toml: &str) -> Vec<String> {
    // Prefix a newline so every key, the first included, follows one; this skips
    // look-alikes such as `default-members`.
    let workspace = format!("\n{}", section(workspace_toml, "workspace"));
    let Some(start) = workspace
        .match_indices("\nmembers")
        .map(|(i, key)| i + key.len())
        .find(|&i| workspace[i..].trim_start().starts_with('='))
    else {
        return Vec::new();
    };
    let rest = &workspace[start..];
    let (Some(open), Some(close)) = (rest.find('['), rest.find(']')) else {
        panic!("plugins/Cargo.toml: `members` must be an array of strings");
    };
    quoted_strings(&rest[open + 1..close])
}

/// The body of `[name]`, from its header to the next one, trimmed and without
/// comments. Enough for this repository's manifests (double-quoted strings, no `#`
/// inside values), not a TOML parser.
fn section(toml: &str, name: &str) -> String {
    let header = format!("[{name}]");
    let mut body = String::new();
    let mut inside = false;
    for line in toml.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.starts_with('[') && !inside_array(&body) {
            inside = line == header;
        } else if inside {
            body.push_str(line);
            body.push('\n');
        }
    }
    body
}

/// Whether `text` ends inside an unclosed `[` (a multi-line array value).
fn inside_array(text: &str) -> bool {
    text.matches('[').count() > text.matches(']').count()
}

/// The value of `key = "value"` in a section body.
fn string_value(section: &str, key: &str) -> Option<String> {
    section.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| quoted_strings(v).into_iter().next())?
    })
}

/// Every double-quoted string in `text`, in order.
fn quoted_strings(text: &str) -> Vec<String> {
    text.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// Makes sure this toolchain can build for `wasm32-wasip2`, installing the target with
/// rustup when it is missing. `rust-toolchain.toml` lists it too, but rustup does not
/// install listed targets when `RUSTUP_AUTO_INSTALL=0`, and a fresh machine has only
/// the host target.
fn ensure_wasm_target(root: &Path) {
    let rustc = env_var("RUSTC");
    let printed = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .unwrap_or_else(|| panic!("could not run `{rustc} --print sysroot`"));
    let sysroot = PathBuf::from(String::from_utf8_lossy(&printed.stdout).trim());
    let target_dir = sysroot.join("lib").join("rustlib").join(WASM_TARGET);
    if target_dir.is_dir() {
        return;
    }

    // Install for the toolchain that is building us: the one rustup chose, or the
    // one the sysroot belongs to (~/.rustup/toolchains/<name>).
    let toolchain = env::var("RUSTUP_TOOLCHAIN").ok().or_else(|| {
        let parent = sysroot.parent()?;
        (parent.file_name()? == "toolchains")
            .then(|| sysroot.file_name()?.to_str().map(str::to_owned))?
    });
    let mut rustup = Command::new("rustup");
    rustup
        .args(["target", "add", WASM_TARGET])
        .current_dir(root);
    if let Some(toolchain) = &toolchain {
        rustup.args(["--toolchain", toolchain]);
    }
    let how = match &toolchain {
        Some(toolchain) => format!("rustup target add {WASM_TARGET} --toolchain {toolchain}"),
        None => format!("rustup target add {WASM_TARGET}"),
    };
    println!("cargo::warning=installing the {WASM_TARGET} target for the plugins: {how}");
    let installed = rustup
        .stdout(io::stderr())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        installed && target_dir.is_dir(),
        "the {WASM_TARGET} target is missing from {} and could not be installed; \
         run `{how}` and build again",
        sysroot.display()
    );
}

/// Runs the nested `cargo build` of the plugin workspace.
fn build_plugins(plugins_dir: &Path) {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target_dir = plugins_dir.join("target");
    let mut cmd = Command::new(cargo);
    // Run where a developer would, so cargo finds the same config files.
    cmd.current_dir(plugins_dir)
        // --workspace: every member, even when `default-members` names fewer.
        .args(["build", "--workspace", "--release", "--target", WASM_TARGET])
        .arg("--manifest-path")
        .arg(plugins_dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        // Our stdout is read by cargo as build-script directives; the nested
        // build's output belongs on stderr, which cargo shows when we fail.
        .stdout(io::stderr())
        .stderr(Stdio::inherit());
    for (key, _) in env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if CLEARED_VARS.contains(&key) || CLEARED_PREFIXES.iter().any(|p| key.starts_with(p)) {
            cmd.env_remove(key);
        }
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("could not run cargo to build the plugins: {e}"));
    assert!(
        status.success(),
        "building the plugins failed ({status}); the errors are above. To reproduce: \
         cd {} && cargo build --workspace --release --target {WASM_TARGET}",
        plugins_dir.display()
    );
}

/// Writes a file into `OUT_DIR`.
fn write(path: &Path, bytes: &[u8]) {
    fs::write(path, bytes).unwrap_or_else(|e| panic!("could not write {}: {e}", path.display()));
}

/// Asks cargo to run this script again when `path` (a file, or any file under a
/// directory) changes.
fn rerun_if_changed(path: &Path) {
    println!("cargo::rerun-if-changed={}", path.display());
}

/// Reads a text file this script cannot do without.
fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("could not read {}: {e}", path.display()))
}

/// Reads a file this script built.
fn read_bytes(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|e| panic!("could not read {}: {e}", path.display()))
}

/// A variable cargo always sets for build scripts.
fn env_var(key: &str) -> String {
    env::var(key).unwrap_or_else(|_| panic!("cargo sets {key} for build scripts"))
}

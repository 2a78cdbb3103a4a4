//! The Robot Framework session: variables, imported libraries, the log of the running
//! keyword, and keyword lookup and execution with RF's rules.
//!
//! One [`Session`] lives in the plugin instance, and the host gives each of its sessions
//! its own instance, so variables set by one `run_keyword` call are there for the next.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use crate::args::Resolve;
use crate::error::{RfError, RfResult};
use crate::keywords::{self, Keyword};
use crate::matching::{format_recommendations, normalize, normalize_name, recommend};
use crate::pylib::PyLibrary;
use crate::remote::{RemoteLibrary, Transport};
use crate::resource::ResourceLib;
use crate::value::{Value, seq2str, seq2str2};
use crate::variables::search::{search, unescape, whole_variable};
use crate::variables::{Arg, Store};

/// RF log levels, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// TRACE.
    Trace,
    /// DEBUG.
    Debug,
    /// INFO (and HTML, CONSOLE).
    Info,
    /// WARN.
    Warn,
    /// ERROR (and FAIL).
    Error,
    /// NONE: as a threshold, nothing is logged.
    None,
}

impl Level {
    /// Parses an RF level name.
    pub fn parse(name: &str) -> Option<Level> {
        Some(match name.to_uppercase().as_str() {
            "TRACE" => Level::Trace,
            "DEBUG" => Level::Debug,
            "INFO" | "HTML" | "CONSOLE" => Level::Info,
            "WARN" => Level::Warn,
            "ERROR" | "FAIL" => Level::Error,
            "NONE" => Level::None,
            _ => return None,
        })
    }

    /// The RF name.
    pub fn name(self) -> &'static str {
        match self {
            Level::Trace => "TRACE",
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
            Level::None => "NONE",
        }
    }
}

/// One log line of the running keyword.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// Its level.
    pub level: Level,
    /// The message.
    pub message: String,
}

/// An imported library.
pub(crate) struct Library {
    /// The name keywords are qualified with (the alias given with `AS`, if any).
    pub(crate) name: String,
    /// What it is.
    pub(crate) kind: LibKind,
}

impl Library {
    /// The library's real name (`Collections` for `Collections AS C2`, `Remote`).
    pub(crate) fn real_name(&self) -> &'static str {
        match &self.kind {
            LibKind::Static(real) => real,
            LibKind::Remote(_) => "Remote",
            LibKind::Python(lib) => lib.real,
            LibKind::Resource(_) => "Resource",
        }
    }
}

pub(crate) enum LibKind {
    /// BuiltIn, String, Collections or DateTime, implemented here; the string is the real
    /// name.
    Static(&'static str),
    /// A remote library (`Import Library  Remote  http://...`).
    Remote(RemoteLibrary),
    /// A standard library that runs as RF's own Python in the host's interpreter (XML).
    Python(PyLibrary),
    /// A resource file's keywords (`Import Resource`).
    Resource(ResourceLib),
}

/// What a keyword name resolved to.
enum Found {
    Static(usize, &'static Keyword),
    /// A remote keyword, with the values its embedded arguments took from the
    /// name used (none for a plain name).
    Remote(usize, String, Vec<String>),
    /// A keyword of a library in the interpreter, by its index there.
    Python(usize, usize),
    /// A keyword of a resource file, by its index there, with the values its
    /// embedded arguments took from the name used (none for a plain name).
    Resource(usize, usize, Vec<String>),
}

/// What a user keyword returns for the values `RETURN` (or `Return From Keyword`)
/// gives: none is `None`, one is itself, more are a list.
pub(crate) fn returned(mut values: Vec<Value>) -> Value {
    match values.len() {
        0 => Value::None,
        1 => values.remove(0),
        _ => Value::list(values),
    }
}

/// Deepest nesting of keywords running keywords; RF's own limit and message.
const MAX_DEPTH: usize = 100;

/// A Robot Framework session.
pub struct Session {
    /// The variables.
    pub store: Store,
    logs: Vec<LogLine>,
    threshold: Level,
    pub(crate) libraries: Vec<Library>,
    search_order: Vec<String>,
    depth: usize,
    rng: u64,
    pub(crate) transport: Box<dyn Transport>,
    /// The test and suite the session stands for: tags, message, documentation, metadata.
    pub(crate) context: crate::keywords::RunContext,
    /// Whether the current call reached anything besides the session's own state (a
    /// remote library, a library outside [`PURE_LIBRARIES`]): only then can the same
    /// call fail differently when run again.
    pub(crate) reached_out: bool,
    /// What the last `Return From Keyword` / `Run Keyword And Return` gives the user
    /// keyword it unwinds to (its values, or the failure it carries).
    pub(crate) returned: Option<RfResult<Value>>,
}

/// The libraries whose keywords read nothing but their arguments and the session: a
/// call of theirs that failed fails the same way every time it is repeated (DateTime
/// reads the clock only in `Get Current Date`, which does not fail by it).
/// OperatingSystem is not one: files change under it.
pub(crate) const PURE_LIBRARIES: &[&str] = &["BuiltIn", "String", "Collections", "DateTime"];

impl Session {
    /// A new session that reaches remote libraries through `transport`.
    pub fn new(transport: Box<dyn Transport>) -> Self {
        Self {
            store: Store::new(),
            logs: Vec::new(),
            threshold: Level::Info,
            libraries: ["BuiltIn", "String", "Collections"]
                .into_iter()
                .map(|name| Library {
                    name: name.to_string(),
                    kind: LibKind::Static(name),
                })
                .collect(),
            search_order: Vec::new(),
            depth: 0,
            rng: RandomState::new().hash_one(0x5eed_u64) | 1,
            transport,
            context: Default::default(),
            reached_out: false,
            returned: None,
        }
    }

    /// Logs `message` at `level`, if the current log level lets it through.
    pub fn log(&mut self, level: Level, message: impl Into<String>) {
        if level >= self.threshold && self.threshold != Level::None {
            self.logs.push(LogLine {
                level,
                message: message.into(),
            });
        }
    }

    /// Logs at INFO.
    pub fn info(&mut self, message: impl Into<String>) {
        self.log(Level::Info, message);
    }

    /// Takes the log lines collected so far.
    pub fn take_logs(&mut self) -> Vec<LogLine> {
        std::mem::take(&mut self.logs)
    }

    /// The current log level.
    pub fn log_level(&self) -> Level {
        self.threshold
    }

    /// Sets the log level, returning the old one.
    pub fn set_log_level(&mut self, level: Level) -> Level {
        let old = self.threshold;
        self.threshold = level;
        self.store.set("LOG_LEVEL", Value::str(level.name()));
        old
    }

    /// Sets the library search order, returning the old one.
    pub fn set_search_order(&mut self, order: Vec<String>) -> Vec<String> {
        std::mem::replace(&mut self.search_order, order)
    }

    /// A random number in `0..n` (n > 0), from a generator seeded with WASI randomness
    /// (std's `RandomState` draws its keys from `wasi:random`).
    pub fn random_below(&mut self, n: usize) -> usize {
        // xorshift64*: plenty for random test strings, and no extra dependency.
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        (r % (n.max(1) as u64)) as usize
    }

    /// Runs keyword `name` with `args`, as RF would run `name    arg    arg`.
    pub fn run(&mut self, name: &str, args: &[Arg]) -> RfResult<Value> {
        if self.depth >= MAX_DEPTH {
            return Err(RfError::fail(
                "Maximum limit of started keywords and control structures exceeded.",
            ));
        }
        self.depth += 1;
        let result = self.run_inner(name, args);
        self.depth -= 1;
        result
    }

    fn run_inner(&mut self, name: &str, args: &[Arg]) -> RfResult<Value> {
        match self.find(name)? {
            Found::Static(lib, kw) => {
                let full_name = format!("{}.{}", self.libraries[lib].name, kw.info.name);
                let Some(run) = kw.run else {
                    return Err(RfError {
                        code: crate::error::Code::Failed,
                        ..RfError::fail(format!(
                            "Keyword '{full_name}' is not supported in the rf sandbox: it needs a running Robot Framework test or suite."
                        ))
                    });
                };
                if !PURE_LIBRARIES.contains(&kw.info.library) {
                    self.reached_out = true;
                }
                let resolve = Resolve {
                    full_name: &full_name,
                    spec: &kw.spec,
                    resolve_until: kw.info.resolve,
                };
                let bound = resolve.bind(&self.store, args)?;
                run(self, &bound)
            }
            Found::Remote(lib, kw, embedded) if embedded.is_empty() => {
                self.reached_out = true;
                crate::remote::run_keyword(self, lib, &kw, args)
            }
            Found::Remote(lib, kw, embedded) => {
                // As RF passes them: the embedded values first (variables in
                // them resolved), then the arguments given.
                self.reached_out = true;
                let all: Vec<Arg> = embedded
                    .into_iter()
                    .map(Arg::Raw)
                    .chain(args.iter().cloned())
                    .collect();
                crate::remote::run_keyword(self, lib, &kw, &all)
            }
            // Pure, like the libraries implemented here: nothing outside the
            // session and the arguments can make a second run differ.
            Found::Python(lib, kw) => crate::pylib::run_keyword(self, lib, kw, args),
            Found::Resource(lib, kw, embedded) => {
                crate::resource::run_keyword(self, (lib, kw), &embedded, args)
            }
        }
    }

    /// RF's keyword lookup: BDD prefixes, `Library.Keyword`, then every library;
    /// duplicates are resolved by search order and by preferring a custom (remote)
    /// library over a standard one, as RF does.
    fn find(&mut self, name: &str) -> RfResult<Found> {
        if name.is_empty() {
            return Err(RfError::invalid("Keyword name cannot be empty."));
        }
        let lower = name.to_lowercase();
        for prefix in ["given ", "when ", "then ", "and ", "but "] {
            if lower.starts_with(prefix)
                && let Some(found) = self.try_find(name[prefix.len()..].trim_start())?
            {
                return Ok(found);
            }
        }
        match self.try_find(name)? {
            Some(found) => Ok(found),
            None => Err(self.not_found(name)),
        }
    }

    fn try_find(&mut self, name: &str) -> RfResult<Option<Found>> {
        if name.contains('.') {
            let tokens: Vec<&str> = name.split('.').collect();
            let mut hits = Vec::new();
            for i in 1..tokens.len() {
                let owner = tokens[..i].join(".");
                let kw = tokens[i..].join(".");
                let owner_norm = normalize(&owner, &[], true, true);
                let kw_norm = normalize_name(&kw);
                for (li, lib) in self.libraries.iter().enumerate() {
                    if normalize(&lib.name, &[], true, true) == owner_norm {
                        hits.extend(self.keywords_in(li, &kw, &kw_norm));
                    }
                }
            }
            match hits.len() {
                0 => {}
                1 => return Ok(hits.pop()),
                _ => {
                    return Err(self.multiple(name, &hits, false));
                }
            }
        }
        let mut hits = Vec::new();
        let norm = normalize_name(name);
        for li in 0..self.libraries.len() {
            hits.extend(self.keywords_in(li, name, &norm));
        }
        // As in RF, a resource file's keyword comes before any library's.
        if hits.iter().any(|f| matches!(f, Found::Resource(..))) {
            hits.retain(|f| matches!(f, Found::Resource(..)));
        }
        if hits.len() > 1 {
            for lib_name in &self.search_order {
                let norm = normalize(lib_name, &[], true, true);
                let ordered: Vec<usize> = hits
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| {
                        normalize(&self.libraries[lib_of(f)].name, &[], true, true) == norm
                    })
                    .map(|(i, _)| i)
                    .collect();
                if !ordered.is_empty() {
                    hits = hits
                        .into_iter()
                        .enumerate()
                        .filter(|(i, _)| ordered.contains(i))
                        .map(|(_, f)| f)
                        .collect();
                    break;
                }
            }
        }
        if hits.len() == 2 {
            // A standard-library keyword and another one: RF uses the other ("custom") one
            // and warns, unless the custom one is itself a run-keyword variant.
            let is_standard = |f: &Found| matches!(f, Found::Static(..) | Found::Python(..));
            let pick = if is_standard(&hits[0]) {
                Some((0, 1))
            } else if is_standard(&hits[1]) {
                Some((1, 0))
            } else {
                None
            };
            if let Some((s, c)) = pick {
                let (sname, cname) = (self.full_name(&hits[s]), self.full_name(&hits[c]));
                let kw_name = match &hits[s] {
                    Found::Static(_, kw) => kw.info.name.to_string(),
                    Found::Remote(_, k, _) => k.clone(),
                    Found::Python(li, k) | Found::Resource(li, k, _) => {
                        self.py_keyword(*li, *k).to_string()
                    }
                };
                let custom_is_run_variant =
                    matches!(&hits[c], Found::Static(_, kw) if kw.info.resolve.is_some());
                if !custom_is_run_variant {
                    let describe = |li: usize| {
                        let lib = &self.libraries[li];
                        let real = lib.real_name();
                        let alias = if lib.name != real {
                            format!(" imported as '{}'", lib.name)
                        } else {
                            String::new()
                        };
                        (real, alias)
                    };
                    let (custom_real, custom_alias) = describe(lib_of(&hits[c]));
                    let (std_real, std_alias) = describe(lib_of(&hits[s]));
                    self.log(
                        Level::Warn,
                        format!(
                            "Keyword '{kw_name}' found both from a custom library '{custom_real}'{custom_alias} and a standard library '{std_real}'{std_alias}. The custom keyword is used. To select explicitly, and to get rid of this warning, use either '{cname}' or '{sname}'."
                        ),
                    );
                }
                return Ok(Some(hits.swap_remove(c)));
            }
        }
        match hits.len() {
            0 => Ok(None),
            1 => Ok(hits.pop()),
            _ => Err(self.multiple(name, &hits, true)),
        }
    }

    /// The keywords of library `li` named `name` (normalized: `norm`); for a
    /// remote library or resource file with no such name, its keywords whose
    /// embedded arguments match `name`, as RF prefers an exact name over an
    /// embedded match.
    fn keywords_in(&self, li: usize, name: &str, norm: &str) -> Vec<Found> {
        match &self.libraries[li].kind {
            LibKind::Static(real) => keywords::named(norm)
                .iter()
                .filter(|kw| kw.info.library == *real)
                .map(|kw| Found::Static(li, kw))
                .collect(),
            LibKind::Remote(lib) => {
                let exact: Vec<Found> = lib
                    .named(norm)
                    .map(|k| Found::Remote(li, k.clone(), Vec::new()))
                    .collect();
                if !exact.is_empty() {
                    return exact;
                }
                lib.embedded_matches(name)
                    .into_iter()
                    .map(|(kw, values)| Found::Remote(li, kw, values))
                    .collect()
            }
            LibKind::Python(lib) => lib
                .find(norm)
                .map(|k| Found::Python(li, k))
                .into_iter()
                .collect(),
            LibKind::Resource(lib) => match lib.find(norm) {
                Some(k) => vec![Found::Resource(li, k, Vec::new())],
                None => lib
                    .embedded_matches(name)
                    .into_iter()
                    .map(|(k, values)| Found::Resource(li, k, values))
                    .collect(),
            },
        }
    }

    fn full_name(&self, f: &Found) -> String {
        match f {
            Found::Static(li, kw) => format!("{}.{}", self.libraries[*li].name, kw.info.name),
            Found::Remote(li, k, _) => format!("{}.{}", self.libraries[*li].name, k),
            Found::Python(li, k) | Found::Resource(li, k, _) => {
                format!("{}.{}", self.libraries[*li].name, self.py_keyword(*li, *k))
            }
        }
    }

    /// The name of keyword `kw` of interpreter library `li`.
    fn py_keyword(&self, li: usize, kw: usize) -> &str {
        match &self.libraries[li].kind {
            LibKind::Python(lib) => lib.keywords.get(kw).map_or("", |k| k.name.as_str()),
            LibKind::Resource(lib) => lib.keywords.get(kw).map_or("", |k| k.name.as_str()),
            _ => "",
        }
    }

    fn multiple(&self, name: &str, hits: &[Found], implicit: bool) -> RfError {
        let mut error = format!("Multiple keywords with name '{name}' found");
        if implicit {
            error.push_str(". Give the full name of the keyword you want to use");
        }
        let mut names: Vec<String> = hits.iter().map(|f| self.full_name(f)).collect();
        names.sort();
        let mut lines = vec![format!("{error}:")];
        lines.extend(names);
        RfError::fail(lines.join("\n    "))
    }

    /// RF's "No keyword with name 'X' found." with its recommendations.
    fn not_found(&self, name: &str) -> RfError {
        let message = format!("No keyword with name '{name}' found.");
        let use_full = name.contains('.');
        let mut candidates: Vec<(String, String)> = Vec::new();
        for (full, short) in self.all_keyword_names() {
            let shown = if use_full { full.clone() } else { short };
            candidates.push((full, normalize(&shown, &["_"], true, true)));
        }
        let norm = normalize(name, &["_"], true, true);
        let recommendations = recommend(&norm, &candidates, 10);
        if !recommendations.is_empty() {
            return RfError::not_found(format_recommendations(&message, &recommendations));
        }
        // A missing separator: `Log Hello` written with one space.
        let mut prefixes: Vec<&(String, String)> = candidates
            .iter()
            .filter(|(_, n)| !n.is_empty() && norm.starts_with(n.as_str()))
            .collect();
        prefixes.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
        if !prefixes.is_empty() {
            let names: Vec<String> = prefixes.iter().map(|(f, _)| f.clone()).collect();
            return RfError::not_found(format!(
                "{message} Did you try using keyword {} and forgot to use enough whitespace between keyword and arguments?",
                seq2str(&names, "'", ", ", " or ")
            ));
        }
        RfError::not_found(message)
    }

    /// (full name, keyword name) of every keyword of every imported library.
    pub fn all_keyword_names(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for lib in &self.libraries {
            match &lib.kind {
                LibKind::Static(real) => {
                    for kw in keywords::registry()
                        .iter()
                        .filter(|k| k.info.library == *real)
                    {
                        out.push((
                            format!("{}.{}", lib.name, kw.info.name),
                            kw.info.name.to_string(),
                        ));
                    }
                }
                LibKind::Remote(r) => {
                    for k in r.keyword_names() {
                        out.push((format!("{}.{}", lib.name, k), k.clone()));
                    }
                }
                LibKind::Python(p) => {
                    for k in &p.keywords {
                        out.push((format!("{}.{}", lib.name, k.name), k.name.clone()));
                    }
                }
                LibKind::Resource(r) => {
                    for k in &r.keywords {
                        out.push((format!("{}.{}", lib.name, k.name), k.name.clone()));
                    }
                }
            }
        }
        out
    }

    /// Whether a keyword exists (for `Keyword Should Exist`), or RF's error.
    pub fn keyword_exists(&mut self, name: &str) -> RfResult<()> {
        self.find(name).map(|_| ())
    }

    /// Runs a keyword whose name and arguments are still raw test data, as `Run Keyword`
    /// does: variables in the name are resolved (`@{list}` spreads into name and
    /// arguments), the arguments are left for the keyword itself.
    pub fn run_raw(&mut self, name: &Arg, args: &[Arg]) -> RfResult<Value> {
        let (name, args) = self.resolve_name(name, args)?;
        self.run(&name, &args)
    }

    /// RF's `_replace_variables_in_name`.
    pub fn resolve_name(&mut self, name: &Arg, args: &[Arg]) -> RfResult<(String, Vec<Arg>)> {
        match name {
            Arg::Value(Value::Str(s)) => Ok((s.clone(), args.to_vec())),
            Arg::Value(_) => Err(RfError::fail("Keyword name must be a string.")),
            Arg::Raw(s) => {
                if search(s, "$@&%", true)?.is_none() {
                    return Ok((unescape(s), args.to_vec()));
                }
                if whole_variable(s, "@").is_some() {
                    let mut all = vec![name.clone()];
                    all.extend(args.iter().cloned());
                    let resolved = self.store.replace_list_until(&all, 1)?;
                    let Some(first) = resolved.first() else {
                        let shown: Vec<String> = all.iter().map(Arg::display).collect();
                        return Err(RfError::data(format!(
                            "Keyword name missing: Given arguments {} resolved to an empty list.",
                            Value::list(shown.into_iter().map(Value::Str).collect()).repr()
                        )));
                    };
                    let name = match self.store.replace_scalar(first)? {
                        Value::Str(s) => s,
                        _ => return Err(RfError::fail("Keyword name must be a string.")),
                    };
                    return Ok((name, resolved[1..].to_vec()));
                }
                match self.store.replace_scalar_str(s)? {
                    Value::Str(n) => Ok((n, args.to_vec())),
                    _ => Err(RfError::fail("Keyword name must be a string.")),
                }
            }
        }
    }

    /// Assigns a keyword's return value to its targets as RF's `${a}    ${b} =` does: one
    /// target takes the value as it is; several unpack a list-like value (None gives each
    /// scalar None), and one `@{list}` among them takes what the scalars leave. Every
    /// count is checked before anything is assigned.
    pub fn assign_all(&mut self, targets: &[String], value: Value) -> RfResult<()> {
        match targets {
            [] => return Ok(()),
            [one] => return self.assign(one, value),
            _ => {}
        }
        let names: Vec<&str> = targets
            .iter()
            .map(|t| t.trim().trim_end_matches('=').trim_end())
            .collect();
        let list_at = names.iter().position(|n| n.starts_with('@'));
        if names.iter().filter(|n| n.starts_with('@')).count() > 1 {
            return Err(RfError::invalid(
                "Assignment can contain only one list variable.",
            ));
        }
        if names.iter().any(|n| n.starts_with('&')) {
            return Err(RfError::invalid(
                "Dictionary variable cannot be assigned with other variables.",
            ));
        }
        let minimum = names.len() - usize::from(list_at.is_some());
        let expected_list = |v: &Value| {
            RfError::data(format!(
                "Cannot set variables: Expected list-like value, got {}.",
                v.type_name()
            ))
        };
        let items = match &value {
            Value::None => vec![Value::None; minimum],
            Value::Str(_) => return Err(expected_list(&value)),
            other => other.list_items().ok_or_else(|| expected_list(other))?,
        };
        let values: Vec<Value> = match list_at {
            None if items.len() != minimum => {
                return Err(RfError::data(format!(
                    "Cannot set variables: Expected {minimum} return values, got {}.",
                    items.len()
                )));
            }
            None => items,
            Some(_) if items.len() < minimum => {
                return Err(RfError::data(format!(
                    "Cannot set variables: Expected {minimum} or more return values, got {}.",
                    items.len()
                )));
            }
            Some(at) => {
                let rest = items.len() - minimum;
                let mut values: Vec<Value> = items[..at].to_vec();
                values.push(Value::list(items[at..at + rest].to_vec()));
                values.extend_from_slice(&items[at + rest..]);
                values
            }
        };
        for (name, value) in names.iter().zip(values) {
            self.assign(name, value)?;
        }
        Ok(())
    }

    /// Assigns a keyword's return value to `${name}`, `@{name}` or `&{name}` (a bare name
    /// means `${name}`), with RF's checks and its `${x} = value` log line.
    pub fn assign(&mut self, target: &str, value: Value) -> RfResult<()> {
        let target = target.trim().trim_end_matches('=').trim_end();
        let (identifier, base) = match whole_variable(target, "$@&") {
            Some(m) if m.items.is_empty() => (m.identifier, self.store_base(&m.base)?),
            Some(_) => {
                return Err(RfError::invalid(format!(
                    "Item assignment to '{target}' is not supported by the rf plugin's assign."
                )));
            }
            None if !target.is_empty() && !target.contains(['{', '}']) => ('$', target.to_string()),
            None => {
                return Err(RfError::invalid(format!(
                    "Invalid variable name '{target}'."
                )));
            }
        };
        let decorated = format!("{identifier}{{{base}}}");
        let value = match (identifier, &value) {
            // RF: a keyword returning None gives `@{x} =` an empty list, `&{x} =` an empty dict.
            ('@', Value::None) => Value::list(Vec::new()),
            ('&', Value::None) => Value::dict(Vec::new(), true),
            _ => value,
        };
        let value = match identifier {
            '@' => match value.list_items() {
                Some(items) => Value::list(items),
                None => {
                    return Err(RfError::data(format!(
                        "Cannot set variable '{decorated}': Expected list-like value, got {}.",
                        value.type_name()
                    )));
                }
            },
            '&' => match &value {
                Value::Dict(d) => Value::dict(d.borrow().items.clone(), true),
                _ => {
                    return Err(RfError::data(format!(
                        "Cannot set variable '{decorated}': Expected dictionary-like value, got {}.",
                        value.type_name()
                    )));
                }
            },
            _ => value,
        };
        let message = format_assign_message(&decorated, &value);
        self.info(message);
        self.store.set(&base, value);
        Ok(())
    }

    fn store_base(&self, base: &str) -> RfResult<String> {
        if search(base, "$@&%", true)?.is_some() {
            return self.store.replace_string(base);
        }
        Ok(base.to_string())
    }

    /// Imports a library by name (`Import Library`): the libraries implemented here
    /// (optionally under an alias), XML in the host's interpreter, `Remote`, and any
    /// other from a library server the host runs, when it is granted.
    pub fn import_library(
        &mut self,
        name: &str,
        args: &[Value],
        alias: Option<String>,
    ) -> RfResult<()> {
        let lib_name = alias.clone();
        match name {
            "BuiltIn" | "String" | "Collections" => {
                let static_name: &'static str = match name {
                    "BuiltIn" => "BuiltIn",
                    "String" => "String",
                    _ => "Collections",
                };
                if let Some(alias) = lib_name
                    && !self.libraries.iter().any(|l| l.name == alias)
                {
                    self.libraries.push(Library {
                        name: alias,
                        kind: LibKind::Static(static_name),
                    });
                }
                Ok(())
            }
            // Only after an import, as in RF; and only when the host lends folders.
            "OperatingSystem" => {
                keywords::operating_system::check_importable()?;
                let name = lib_name.unwrap_or_else(|| "OperatingSystem".to_string());
                if !self.libraries.iter().any(|l| l.name == name) {
                    self.libraries.push(Library {
                        name,
                        kind: LibKind::Static("OperatingSystem"),
                    });
                }
                Ok(())
            }
            "DateTime" => {
                if !args.is_empty() {
                    return Err(RfError::fail(format!(
                        "Library 'DateTime' expected 0 arguments, got {}.",
                        args.len()
                    )));
                }
                // Like RF, an alias is a library of its own: `DT.Convert Date` works after
                // `AS DT`, `DateTime.Convert Date` only after a plain import.
                let name = lib_name.unwrap_or_else(|| "DateTime".to_string());
                if !self.libraries.iter().any(|l| l.name == name) {
                    self.libraries.push(Library {
                        name,
                        kind: LibKind::Static("DateTime"),
                    });
                }
                Ok(())
            }
            "XML" => {
                let lib = crate::pylib::import(self, "XML", args)?;
                let name = lib_name.unwrap_or_else(|| "XML".to_string());
                let count = lib.keywords.len();
                self.install("XML", name, LibKind::Python(lib), count, args);
                Ok(())
            }
            "Remote" => {
                self.reached_out = true;
                let lib = crate::remote::import(self, args)?;
                let name = lib_name.unwrap_or_else(|| "Remote".to_string());
                let count = lib.keyword_names().len();
                self.install("Remote", name, LibKind::Remote(lib), count, args);
                Ok(())
            }
            // Never a silent no-op: an import that passed would let every later
            // keyword of the library fail as "not found", or worse, a batch
            // that only imports would report PASS having done nothing. Any
            // other library is real Python: the host runs it, if the operator
            // enabled it for this session.
            other => self.import_hosted(other, args, lib_name),
        }
    }

    /// Imports `name` from a library server the host runs (`rf-library`), as
    /// a remote library named as Robot Framework names it.
    fn import_hosted(&mut self, name: &str, args: &[Value], alias: Option<String>) -> RfResult<()> {
        use stephost_plugin::rf_library;
        self.reached_out = true;
        let texts: Vec<String> = args.iter().map(Value::to_str).collect();
        let server = rf_library::start(name, &texts).map_err(|error| {
            let standard = if STANDARD_LIBRARIES.contains(&name) {
                format!(
                    " ('{name}' is one of Robot Framework's standard libraries; the rf sandbox runs BuiltIn, String, Collections, DateTime, OperatingSystem and XML itself)"
                )
            } else {
                String::new()
            };
            crate::remote::host_refusal(
                &format!("library '{name}'"),
                error,
                &format!(
                    "{standard}. A library served by a Robot Framework of your own is reachable with Import Library    Remote    http://host:port."
                ),
            )
        })?;
        let lib = crate::remote::connect(self, server.url, None, true)?;
        let lib_name = alias.unwrap_or(server.name);
        let count = lib.keyword_names().len();
        self.install(name, lib_name, LibKind::Remote(lib), count, args);
        Ok(())
    }

    /// Adds a resource file's keywords under `name` (the file's base name),
    /// replacing an earlier import of a file of that name.
    pub(crate) fn add_resource(&mut self, name: String, lib: ResourceLib) {
        self.libraries.retain(|l| l.name != name);
        self.libraries.push(Library {
            name,
            kind: LibKind::Resource(lib),
        });
    }

    /// Adds an imported library under `name`, replacing one imported under that
    /// name before (RF reuses it), and logs the import as RF does.
    fn install(&mut self, real: &str, name: String, kind: LibKind, count: usize, args: &[Value]) {
        self.libraries.retain(|l| l.name != name);
        let alias = if name == real {
            String::new()
        } else {
            format!(", as '{name}'")
        };
        self.libraries.push(Library { name, kind });
        let shown: Vec<String> = args.iter().map(Value::to_str).collect();
        self.info(format!(
            "Imported library '{real}' with arguments [ {} ] ({count} keywords{alias}).",
            shown.join(" | ")
        ));
    }
}

fn lib_of(f: &Found) -> usize {
    match f {
        Found::Static(li, _)
        | Found::Remote(li, _, _)
        | Found::Python(li, _)
        | Found::Resource(li, _, _) => *li,
    }
}

/// Robot Framework's standard libraries besides the four implemented here.
const STANDARD_LIBRARIES: &[&str] = &["Dialogs", "Easter", "Process", "Screenshot", "Telnet"];

/// RF's `format_assign_message`: `${x} = value`, `@{x} = [ a | b ]`, `&{x} = { k=v }`,
/// long values cut at 200 characters.
pub fn format_assign_message(name: &str, value: &Value) -> String {
    let text = match name.chars().next() {
        Some('@') => seq2str2(&value.list_items().unwrap_or_default()),
        Some('&') => match value {
            Value::Dict(d) if !d.borrow().items.is_empty() => {
                let items: Vec<String> = d
                    .borrow()
                    .items
                    .iter()
                    .map(|(k, v)| format!("{}={}", k.to_str(), v.to_str()))
                    .collect();
                format!("{{ {} }}", items.join(" | "))
            }
            _ => "{ }".into(),
        },
        _ => value.to_str(),
    };
    let cut: String = if text.chars().count() > 200 {
        format!("{}...", text.chars().take(200).collect::<String>())
    } else {
        text
    };
    format!("{name} = {cut}")
}

//! Robot Framework's remote library interface: any RF library served over XML-RPC (for
//! example by `robotremoteserver`) becomes usable with `Import Library    Remote    URI`.
//!
//! Follows robot/libraries/Remote.py: keyword names from `get_library_information` or
//! `get_keyword_names`, argument specs from `get_keyword_arguments` (validated here
//! before calling), arguments coerced to XML-RPC types as RF coerces them, and the
//! `run_keyword` result struct turned back into RF's outcome: return value, error
//! message, traceback, `continuable`/`fatal` flags, and the keyword's output split into
//! log messages by its `*LEVEL*` markers. Keyword tags (for recovery strategies, see
//! [`crate::recovery`]) come from `get_library_information` or `get_keyword_tags`, plus a
//! `Tags:` section of the documentation, as RF reads them.

pub mod http;
pub mod xmlrpc;

use std::collections::BTreeMap;

use crate::args::{Param, Resolve, Spec, Ty};
use crate::engine::{Level, Session};
use crate::error::{RfError, RfResult};
use crate::matching::printable_name;
use crate::value::Value;
use crate::variables::Arg;
pub use http::{HttpError, Transport, default_transport};
use xmlrpc::{Response, Rpc, decode_response, encode_call};

/// Metadata of one remote keyword, fetched when first needed.
#[derive(Debug, Clone, Default)]
struct KeywordMeta {
    args: Option<Vec<String>>,
    doc: Option<String>,
    /// Tags the server reported (not those in the documentation).
    tags: Option<Vec<String>>,
}

/// An imported remote library.
pub struct RemoteLibrary {
    uri: String,
    timeout: Option<f64>,
    /// Keyword names as RF shows them (`Add Numbers`).
    names: Vec<String>,
    /// The same keywords' names as the server knows them (`add_numbers`), in `names` order.
    orig_names: Vec<String>,
    meta: BTreeMap<String, KeywordMeta>,
    /// `get_library_information` answered, so `meta` is complete.
    full_info: bool,
    /// `get_keyword_tags` answered with a fault: the server has no such method, so it is
    /// not asked again (RF then treats its keywords as having no server tags).
    no_tags_method: bool,
    /// Served by the host for this session (`Import Library    Process`): its URL is
    /// an internal detail, not shown in listings.
    hosted: bool,
    /// The keywords with embedded arguments (by shown name), their patterns
    /// compiled once here rather than at every lookup that misses.
    embedded: Vec<(String, crate::matching::Embedded)>,
    /// `names` normalized, in the same order: every keyword lookup of the
    /// session asks every library, so they are normalized once, at import.
    normalized: Vec<String>,
}

impl RemoteLibrary {
    /// The keyword names, as RF shows them (`printable_name` of the server's names).
    pub fn keyword_names(&self) -> &[String] {
        &self.names
    }

    /// The server's own name for keyword `name` (as listed by [`Self::keyword_names`]).
    fn orig_name<'a>(&'a self, name: &'a str) -> &'a str {
        self.names
            .iter()
            .position(|n| n == name)
            .map_or(name, |i| &self.orig_names[i])
    }

    /// The server URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Whether the host runs this library for the session.
    pub fn is_hosted(&self) -> bool {
        self.hosted
    }

    /// The keywords whose embedded arguments `name` matches, with the values
    /// it gives them.
    pub fn embedded_matches(&self, name: &str) -> Vec<(String, Vec<String>)> {
        self.embedded
            .iter()
            .filter_map(|(kw, pattern)| pattern.values(name).map(|values| (kw.clone(), values)))
            .collect()
    }

    /// The keyword names whose normalized form is `norm`.
    pub fn named(&self, norm: &str) -> impl Iterator<Item = &String> {
        self.names
            .iter()
            .zip(&self.normalized)
            .filter(move |(_, n)| *n == norm)
            .map(|(name, _)| name)
    }

    /// Compiles the patterns of the keywords with embedded arguments and
    /// normalizes the names, once they are known.
    fn with_embedded(mut self) -> Self {
        self.normalized = self
            .names
            .iter()
            .map(|n| crate::matching::normalize_name(n))
            .collect();
        self.embedded = self
            .names
            .iter()
            .filter(|n| n.contains("${"))
            .filter_map(|n| crate::matching::Embedded::parse(n).map(|e| (n.clone(), e)))
            .collect();
        self
    }
}

/// Why a call failed: the transport or the XML, or an XML-RPC fault (code, string).
enum CallError {
    Transport(HttpError),
    Xml(String),
    Fault(i64, String),
}

impl CallError {
    /// As Python's `str()` of the error (`<Fault 1: '...'>` for faults).
    fn python_text(&self) -> String {
        match self {
            CallError::Transport(e) => e.message.clone(),
            CallError::Xml(e) => e.clone(),
            CallError::Fault(code, m) => {
                format!("<Fault {code}: {}>", Value::str(m.as_str()).repr())
            }
        }
    }
}

fn call(
    s: &mut Session,
    uri: &str,
    timeout: Option<f64>,
    method: &str,
    params: &[Rpc],
) -> Result<Rpc, CallError> {
    let body = encode_call(method, params);
    let reply = s
        .transport
        .post(uri, body.as_bytes(), timeout)
        .map_err(CallError::Transport)?;
    let text = String::from_utf8_lossy(&reply);
    match decode_response(&text) {
        Ok(Response::Value(v)) => Ok(v),
        Ok(Response::Fault(code, message)) => Err(CallError::Fault(code, message)),
        Err(e) => Err(CallError::Xml(e)),
    }
}

/// `Remote(uri='http://127.0.0.1:8270', timeout=None)`: connects and reads the keywords.
pub fn import(s: &mut Session, args: &[Value]) -> RfResult<RemoteLibrary> {
    let mut uri = "http://127.0.0.1:8270".to_string();
    let mut timeout = None;
    let mut positional = 0;
    for arg in args {
        let text = arg.to_str();
        if let Some(u) = text.strip_prefix("uri=") {
            uri = u.to_string();
        } else if let Some(t) = text.strip_prefix("timeout=") {
            timeout = Some(t.to_string());
        } else {
            match positional {
                0 => uri = text,
                1 => timeout = Some(text),
                _ => {
                    return Err(RfError::invalid(format!(
                        "Library 'Remote' expected 0 to 2 arguments, got {}.",
                        args.len()
                    )));
                }
            }
            positional += 1;
        }
    }
    if !uri.contains("://") {
        uri = format!("http://{uri}");
    }
    let timeout = match timeout.filter(|t| !t.is_empty() && t.to_uppercase() != "NONE") {
        Some(t) => Some(crate::timefmt::timestr_to_secs(&Value::Str(t)).map_err(RfError::value)?),
        None => None,
    };
    connect(s, uri, timeout, false)
}

/// Why the host ran nothing for an import of `subject` (`library 'Process'`,
/// `variable file '/srv/v.py'`), as the import's failure: a grant's refusal is
/// `denied` (with `denied_extra` after it), RF's own import error is kept as it
/// is and is `invalid-input` (the same import fails the same way again).
pub fn host_refusal(
    subject: &str,
    error: stephost_plugin::rf_library::LibraryError,
    denied_extra: &str,
) -> RfError {
    use stephost_plugin::rf_library::LibraryError;
    match error {
        LibraryError::NotGranted(why) => {
            RfError::denied(format!("Importing {subject} failed: {why}{denied_extra}"))
        }
        LibraryError::ImportFailed(message) => RfError::invalid(message),
        LibraryError::Unavailable(why) => {
            RfError::fail(format!("Importing {subject} failed: {why}"))
        }
    }
}

/// Reads the keywords of the remote server at `uri`: an explicit `Remote`
/// import, or (`hosted`) a server the host started for a library.
pub fn connect(
    s: &mut Session,
    uri: String,
    timeout: Option<f64>,
    hosted: bool,
) -> RfResult<RemoteLibrary> {
    let mut lib = RemoteLibrary {
        uri: uri.clone(),
        timeout,
        names: Vec::new(),
        orig_names: Vec::new(),
        meta: BTreeMap::new(),
        full_info: false,
        no_tags_method: false,
        hosted,
        embedded: Vec::new(),
        normalized: Vec::new(),
    };
    // RF asks for everything at once first and falls back to one call per item.
    if let Ok(Rpc::Struct(info)) = call(s, &uri, timeout, "get_library_information", &[]) {
        for (name, kw) in info {
            if name.starts_with("__") && name.ends_with("__") {
                continue;
            }
            let args = kw.member("args").map(rpc_strings);
            let doc = kw.member("doc").map(Rpc::text);
            // RF reads only this struct then: no `tags` member means no tags.
            let tags = Some(kw.member("tags").map(rpc_strings).unwrap_or_default());
            lib.names.push(printable_name(&name));
            lib.orig_names.push(name.clone());
            lib.meta.insert(name, KeywordMeta { args, doc, tags });
        }
        lib.full_info = true;
        return Ok(lib.with_embedded());
    }
    match call(s, &uri, timeout, "get_keyword_names", &[]) {
        Ok(Rpc::Array(names)) => {
            lib.orig_names = names.iter().map(Rpc::text).collect();
            lib.names = lib.orig_names.iter().map(|n| printable_name(n)).collect();
            Ok(lib.with_embedded())
        }
        Ok(other) => Err(RfError::fail(format!(
            "Initializing library 'Remote' with arguments [ {uri} ] failed: get_keyword_names returned {}, not a list.",
            other.to_value().repr()
        ))),
        Err(CallError::Transport(e)) if e.denied => Err(RfError::denied(e.message)),
        Err(e) => Err(RfError::fail(format!(
            "Getting keyword names from library 'Remote' failed: Calling dynamic method 'get_keyword_names' failed: Connecting remote server at {uri} failed: {}",
            e.python_text()
        ))),
    }
}

fn rpc_strings(v: &Rpc) -> Vec<String> {
    match v {
        Rpc::Array(items) => items
            .iter()
            .map(|i| match i {
                // RF 4+ servers may send `[name, default]` pairs.
                Rpc::Array(pair) if pair.len() == 2 => {
                    format!("{}={}", pair[0].text(), pair[1].text())
                }
                other => other.text(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn library(s: &Session, lib: usize) -> RfResult<&RemoteLibrary> {
    match s.libraries.get(lib).map(|l| &l.kind) {
        Some(crate::engine::LibKind::Remote(r)) => Ok(r),
        _ => Err(RfError::fail("internal error: not a remote library")),
    }
}

fn library_mut(s: &mut Session, lib: usize) -> RfResult<&mut RemoteLibrary> {
    match s.libraries.get_mut(lib).map(|l| &mut l.kind) {
        Some(crate::engine::LibKind::Remote(r)) => Ok(r),
        _ => Err(RfError::fail("internal error: not a remote library")),
    }
}

/// The argument spec of remote keyword `kw` (`['a', 'b=1', '*args', '**kwargs']`).
pub fn keyword_args(s: &mut Session, lib: usize, kw: &str) -> RfResult<Vec<String>> {
    let r = library(s, lib)?;
    let kw = r.orig_name(kw).to_string();
    let kw = kw.as_str();
    if let Some(args) = r.meta.get(kw).and_then(|m| m.args.clone()) {
        return Ok(args);
    }
    let (uri, timeout, full) = (r.uri.clone(), r.timeout, r.full_info);
    let args = if full {
        vec!["*args".to_string()]
    } else {
        match call(
            s,
            &uri,
            timeout,
            "get_keyword_arguments",
            &[Rpc::Str(kw.to_string())],
        ) {
            Ok(v) => rpc_strings(&v),
            // RF's default when the server cannot tell: anything goes.
            Err(_) => vec!["*args".to_string()],
        }
    };
    library_mut(s, lib)?
        .meta
        .entry(kw.to_string())
        .or_default()
        .args = Some(args.clone());
    Ok(args)
}

/// The documentation of remote keyword `kw`.
pub fn keyword_doc(s: &mut Session, lib: usize, kw: &str) -> RfResult<String> {
    let r = library(s, lib)?;
    let kw = r.orig_name(kw).to_string();
    let kw = kw.as_str();
    if let Some(doc) = r.meta.get(kw).and_then(|m| m.doc.clone()) {
        return Ok(doc);
    }
    let (uri, timeout, full) = (r.uri.clone(), r.timeout, r.full_info);
    let doc = if full {
        String::new()
    } else {
        call(
            s,
            &uri,
            timeout,
            "get_keyword_documentation",
            &[Rpc::Str(kw.to_string())],
        )
        .map(|v| v.text())
        .unwrap_or_default()
    };
    library_mut(s, lib)?
        .meta
        .entry(kw.to_string())
        .or_default()
        .doc = Some(doc.clone());
    Ok(doc)
}

/// The tags of remote keyword `kw`, as RF's `all_tags` has them: the server's tags
/// (`get_library_information`'s `tags`, else `get_keyword_tags`) followed by those of a
/// `Tags:` section in its documentation (the only way to tag keywords through a server
/// that implements neither, such as robotremoteserver 1.1.1).
///
/// A server without `get_keyword_tags` (an XML-RPC fault) has no server tags, as in RF,
/// and is not asked again. `None` when the server could not be reached: nothing is
/// cached then, and callers should not ask about this library's other keywords now.
pub fn keyword_tags(s: &mut Session, lib: usize, kw: &str) -> Option<Vec<String>> {
    let r = library(s, lib).ok()?;
    let orig = r.orig_name(kw).to_string();
    let known = r.meta.get(&orig).and_then(|m| m.tags.clone());
    let (uri, timeout, skip) = (r.uri.clone(), r.timeout, r.full_info || r.no_tags_method);
    let mut tags = match known {
        Some(tags) => tags,
        None if skip => Vec::new(),
        None => {
            let fetched = match call(
                s,
                &uri,
                timeout,
                "get_keyword_tags",
                &[Rpc::Str(orig.clone())],
            ) {
                Ok(v) => rpc_strings(&v),
                Err(CallError::Fault(..)) => {
                    library_mut(s, lib).ok()?.no_tags_method = true;
                    Vec::new()
                }
                Err(_) => return None,
            };
            library_mut(s, lib).ok()?.meta.entry(orig).or_default().tags = Some(fetched.clone());
            fetched
        }
    };
    let doc = keyword_doc(s, lib, kw).unwrap_or_default();
    tags.extend(doc_tags(&doc));
    Some(tags)
}

/// Tags in a keyword's documentation: a `Tags:` line (bold or italic allowed, one or two
/// colons) and the indented lines after it, comma-separated, as RF 7.5's docstring
/// parser reads them. Older RF versions read only a last `Tags:` line, which this covers.
fn doc_tags(doc: &str) -> Vec<String> {
    let mut text = String::new();
    let mut in_section = false;
    for line in doc.lines() {
        if let Some(inline) = tags_header(line) {
            text.push(',');
            text.push_str(inline);
            in_section = true;
        } else if in_section && line.chars().take(2).all(char::is_whitespace) {
            // Python's `not line or line[:2].isspace()`: empty, or indented by two.
            text.push(' ');
            text.push_str(line);
        } else {
            in_section = false;
        }
    }
    text.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// The inline text of a `Tags:` header line (`*Tags:*  a, b` -> `a, b`), if it is one.
fn tags_header(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches(['*', '_']);
    let head = rest.get(..4)?;
    if !head.eq_ignore_ascii_case("tags") {
        return None;
    }
    let rest = rest[4..].trim_start_matches(['*', '_']);
    let rest = rest.strip_prefix("::").or_else(|| rest.strip_prefix(':'))?;
    let rest = rest.trim_start_matches(['*', '_']);
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim())
}

/// Whether remote keyword `kw` accepts `count` positional arguments and nothing else,
/// by its argument spec (a keyword whose spec is unknown accepts anything, as in RF).
pub fn accepts_positional(s: &mut Session, lib: usize, kw: &str, count: usize) -> bool {
    let Ok(args) = keyword_args(s, lib, kw) else {
        return false;
    };
    let spec = spec_of(&args);
    let required = spec
        .positional
        .iter()
        .filter(|p| p.default.is_none())
        .count();
    let fits = count >= required && (spec.varargs.is_some() || count <= spec.positional.len());
    fits && spec.named_only.iter().all(|p| p.default.is_some())
}

/// A dynamic library's argument list as an RF spec.
pub(crate) fn spec_of(args: &[String]) -> Spec {
    let mut spec = Spec::default();
    let mut named_only = false;
    for a in args {
        let param = |name: &str, default| Param {
            name: name.to_string(),
            ty: Ty::Any,
            default,
        };
        if a == "*" {
            named_only = true;
        } else if let Some(n) = a.strip_prefix("**") {
            spec.kwargs = Some(param(n, None));
        } else if let Some(n) = a.strip_prefix('*') {
            spec.varargs = Some(param(n, None));
            named_only = true;
        } else {
            let p = match a.split_once('=') {
                Some((n, d)) => param(n, Some(Some(Value::str(d)))),
                None => param(a, None),
            };
            if named_only {
                spec.named_only.push(p);
            } else {
                spec.positional.push(p);
            }
        }
    }
    spec
}

/// RF's `ArgumentCoercer`: what XML-RPC can carry.
fn coerce(v: &Value) -> RfResult<Rpc> {
    Ok(match v {
        Value::Str(s) => coerce_str(s)?,
        Value::Int(i) => Rpc::Int(*i),
        Value::Bool(b) => Rpc::Bool(*b),
        Value::Float(f) => Rpc::Double(*f),
        Value::Bytes(b) => Rpc::Binary(b.clone()),
        Value::None => Rpc::Str(String::new()),
        Value::TimeDelta(t) => Rpc::Double(t.total_seconds()),
        // RF sends these as XML-RPC dateTime.iso8601, which this client does not write.
        Value::DateTime(_) | Value::Date(_) => {
            return Err(RfError::fail(format!(
                "The rf sandbox cannot pass {} value '{}' to a remote keyword: XML-RPC dates are not supported here. Convert it to a string first.",
                v.type_name(),
                v.to_str()
            )));
        }
        Value::List(_) | Value::Tuple(_) => Rpc::Array(
            v.list_items()
                .unwrap_or_default()
                .iter()
                .map(coerce)
                .collect::<RfResult<_>>()?,
        ),
        Value::Dict(d) => {
            let mut members = Vec::new();
            for (k, v) in d.borrow().items.iter() {
                let key = match k {
                    Value::None => String::new(),
                    other => other.to_str(),
                };
                if let Rpc::Binary(_) = coerce_str(&key)? {
                    return Err(RfError::value(format!(
                        "Dictionary keys cannot be binary. Got {}.",
                        Value::Bytes(key.chars().map(|c| c as u8).collect()).repr()
                    )));
                }
                members.push((key, coerce(v)?));
            }
            Rpc::Struct(members)
        }
        // RF's coercer: a mapping as a struct, a sequence as an array, else its text.
        Value::Object(o) => match o.as_dict().or_else(|| o.as_list()) {
            Some(items) => coerce(&items)?,
            None => coerce_str(&v.to_str())?,
        },
    })
}

/// Strings with control characters XML cannot hold travel as binary (Latin-1).
fn coerce_str(s: &str) -> RfResult<Rpc> {
    let binary = s
        .chars()
        .any(|c| matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}'));
    if !binary {
        return Ok(Rpc::Str(s.to_string()));
    }
    s.chars()
        .map(|c| u8::try_from(u32::from(c)).ok())
        .collect::<Option<Vec<u8>>>()
        .map(Rpc::Binary)
        .ok_or_else(|| {
            RfError::value(format!(
                "Cannot represent {} as binary.",
                Value::str(s).repr()
            ))
        })
}

/// Splits a remote keyword's output into log messages by `*LEVEL*` markers, as RF's
/// `StdoutLogSplitter` does (text before the first marker is INFO).
pub fn split_output(output: &str) -> Vec<(Level, String)> {
    let output = output.trim();
    if output.is_empty() {
        return Vec::new();
    }
    let mut messages: Vec<(Level, String)> = Vec::new();
    let mut level = Level::Info;
    let mut current = String::new();
    let mut started = false;
    for line in output.split_inclusive('\n') {
        if let Some((lvl, rest)) = level_marker(line) {
            if started || !current.is_empty() {
                messages.push((level, current.trim().to_string()));
            }
            current = rest.to_string();
            level = lvl;
            started = true;
        } else {
            current.push_str(line);
        }
    }
    messages.push((level, current.trim().to_string()));
    messages
}

/// `*WARN*`, `*INFO:1234*` ... at the start of a line.
fn level_marker(line: &str) -> Option<(Level, &str)> {
    let rest = line.strip_prefix('*')?;
    let end = rest.find('*')?;
    let marker = &rest[..end];
    let (name, ts) = match marker.split_once(':') {
        Some((n, t)) => (n, Some(t)),
        None => (marker, None),
    };
    if let Some(t) = ts
        && (t.is_empty() || !t.chars().all(|c| c.is_ascii_digit() || c == '.'))
    {
        return None;
    }
    let level = match name {
        "TRACE" => Level::Trace,
        "DEBUG" => Level::Debug,
        "INFO" | "CONSOLE" | "HTML" => Level::Info,
        "WARN" => Level::Warn,
        "ERROR" => Level::Error,
        _ => return None,
    };
    Some((level, &rest[end + 1..]))
}

/// Runs remote keyword `kw` of library `lib` with raw arguments.
pub fn run_keyword(s: &mut Session, lib: usize, kw: &str, args: &[Arg]) -> RfResult<Value> {
    let spec = spec_of(&keyword_args(s, lib, kw)?);
    let lib_name = s.libraries[lib].name.clone();
    let full_name = format!("{lib_name}.{kw}");
    let resolve = Resolve {
        full_name: &full_name,
        spec: &spec,
        resolve_until: None,
    };
    let (positional, named) = resolve.resolve_dynamic(&s.store, args)?;
    let r = library(s, lib)?;
    let (uri, timeout, hosted) = (r.uri.clone(), r.timeout, r.hosted);
    let mut params = vec![
        Rpc::Str(r.orig_name(kw).to_string()),
        Rpc::Array(positional.iter().map(coerce).collect::<RfResult<_>>()?),
    ];
    if !named.is_empty() {
        let mut members = Vec::new();
        for (k, v) in &named {
            members.push((k.clone(), coerce(v)?));
        }
        params.push(Rpc::Struct(members));
    }
    let result = match call(s, &uri, timeout, "run_keyword", &params) {
        Ok(r) => r,
        Err(CallError::Fault(_, m)) => return Err(RfError::fail(m)),
        Err(CallError::Xml(e)) => {
            return Err(RfError::fail(format!(
                "Processing XML-RPC return value failed. Most often this happens when the return value contains characters that are not valid in XML. Original error was: ExpatError: {e}"
            )));
        }
        Err(CallError::Transport(e)) if e.denied => return Err(RfError::denied(e.message)),
        Err(CallError::Transport(e)) => {
            let hint = if hosted {
                format!(
                    " (the process the host ran library '{lib_name}' in has ended; `Import Library` of it again starts a new one)"
                )
            } else {
                String::new()
            };
            return Err(RfError::fail(format!(
                "Connection to remote server broken: {}{hint}",
                e.message
            )));
        }
    };
    let Some(status) = result.member("status") else {
        return Err(RfError::fail(format!(
            "Invalid remote result dictionary: {}",
            result.to_value().repr()
        )));
    };
    let text = |name: &str| result.member(name).map(Rpc::text).unwrap_or_default();
    for (level, message) in split_output(&text("output")) {
        s.log(level, message);
    }
    if status.text() != "PASS" {
        let flag = |name: &str| result.member(name).is_some_and(|v| v.to_value().truthy());
        let mut error = RfError::fail(text("error"));
        error.traceback = text("traceback");
        error.fatal = flag("fatal");
        error.continuable = flag("continuable");
        if !error.traceback.is_empty() {
            s.log(Level::Debug, error.traceback.clone());
        }
        return Err(error);
    }
    Ok(result
        .member("return")
        .map(Rpc::to_value)
        .unwrap_or_else(|| Value::str("")))
}

#[cfg(test)]
mod tests;

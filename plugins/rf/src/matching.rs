//! Name matching the way Robot Framework does it: normalized names (case, spaces and
//! underscores ignored), "did you mean" recommendations (Python's `difflib` close matches,
//! reimplemented so the suggestions and their order are RF's), and glob patterns
//! (`fnmatch`) as `Should Match` and `Run Keyword And Expect Error` use them.

use std::collections::BTreeMap;

/// RF's `normalize`: whitespace removed (`spaceless`), case folded (`caseless`), and every
/// string in `ignore` removed.
pub fn normalize(s: &str, ignore: &[&str], caseless: bool, spaceless: bool) -> String {
    let mut out: String = if spaceless {
        s.split_whitespace().collect()
    } else {
        s.to_string()
    };
    if caseless {
        out = crate::pystr::casefold(&out);
    }
    for ign in ignore {
        let ign = if caseless {
            crate::pystr::casefold(ign)
        } else {
            ign.to_string()
        };
        if !ign.is_empty() {
            out = out.replace(&ign, "");
        }
    }
    out
}

/// A keyword or variable name normalized for lookup: case, spaces and underscores ignored.
pub fn normalize_name(s: &str) -> String {
    normalize(s, &["_"], true, true)
}

/// A keyword name with embedded arguments (`Bill Should Have ${count} Lines`) as RF
/// matches it: literal parts as written, case ignored, each `${name}` any text (as
/// little as possible) and `${name:pattern}` the pattern, over the whole name.
/// Compiled once per keyword (a library's keywords are known at import).
#[derive(Debug)]
pub struct Embedded {
    regex: regex::Regex,
    /// The capture group of each variable, in order (a custom pattern's own
    /// groups come between them).
    groups: Vec<usize>,
    /// Each variable's name (`${id:\d+}` -> `id`), in the same order.
    names: Vec<String>,
}

impl Embedded {
    /// None for a name without embedded arguments, or with a pattern that
    /// does not compile.
    pub fn parse(template: &str) -> Option<Self> {
        let mut pattern = String::from("(?i)^");
        let mut groups = Vec::new();
        let mut names = Vec::new();
        let mut next_group = 1;
        let mut rest = template;
        while let Some(start) = rest.find("${") {
            pattern.push_str(&regex::escape(&rest[..start]));
            let body = &rest[start + 2..];
            // The variable ends at the `}` that balances its `{`: patterns such as
            // `\d{3}` have braces of their own.
            let mut depth = 1usize;
            let end = body.char_indices().find_map(|(i, c)| {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(i)
            })?;
            groups.push(next_group);
            next_group += 1;
            match body[..end].split_once(':') {
                Some((name, custom)) => {
                    names.push(name.trim().to_string());
                    next_group += regex::Regex::new(custom).ok()?.captures_len() - 1;
                    pattern.push_str(&format!("({custom})"));
                }
                None => {
                    names.push(body[..end].trim().to_string());
                    pattern.push_str("(.*?)");
                }
            }
            rest = &body[end + 1..];
        }
        if groups.is_empty() {
            return None;
        }
        pattern.push_str(&regex::escape(rest));
        pattern.push('$');
        Some(Self {
            regex: regex::Regex::new(&pattern).ok()?,
            groups,
            names,
        })
    }

    /// The variables' names, in the order [`Embedded::values`] gives their values.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The values `name` gives the embedded arguments, when it matches.
    pub fn values(&self, name: &str) -> Option<Vec<String>> {
        let captures = self.regex.captures(name)?;
        self.groups
            .iter()
            .map(|&g| captures.get(g).map(|m| m.as_str().to_string()))
            .collect()
    }
}

/// RF's `printable_name(name, code_style=True)`: how a dynamic library's keyword name
/// (`add_numbers`, `addNumbers`) is shown (`Add Numbers`).
pub fn printable_name(name: &str) -> String {
    let spaced = name.replace('_', " ");
    let mut parts: Vec<String> = spaced.split_whitespace().map(str::to_string).collect();
    let simple_lower = spaced.chars().all(char::is_alphabetic) && crate::pystr::is_lower(&spaced);
    if parts.len() == 1 && !simple_lower {
        parts = split_camel_case(&parts[0]);
    }
    parts
        .iter()
        .map(|p| {
            let mut chars = p.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn split_camel_case(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut tokens = Vec::new();
    let mut token = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let prev = if i == 0 { ' ' } else { chars[i - 1] };
        let next = chars.get(i + 1).copied().unwrap_or(' ');
        let boundary = if prev.is_numeric() {
            !c.is_numeric()
        } else if c.is_uppercase() {
            next.is_lowercase() || (prev.is_alphabetic() && !prev.is_uppercase())
        } else {
            c.is_numeric()
        };
        if boundary && !token.is_empty() {
            tokens.push(std::mem::take(&mut token));
        }
        token.push(c);
    }
    if !token.is_empty() {
        tokens.push(token);
    }
    tokens
}

/// Python's `difflib.SequenceMatcher(None, a, b).ratio()`.
pub fn ratio(a: &[char], b: &[char]) -> f64 {
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0;
    }
    let matches: usize = matching_blocks(a, b).iter().map(|m| m.2).sum();
    2.0 * matches as f64 / total as f64
}

/// `difflib`'s matching blocks `(i, j, size)`, sorted, adjacent blocks merged, with the
/// final `(len(a), len(b), 0)` sentinel. Found as `difflib` finds them: the longest match
/// first (earliest in `a`, then in `b`), then both sides of it.
pub fn matching_blocks<T: Ord + Clone>(a: &[T], b: &[T]) -> Vec<(usize, usize, usize)> {
    let mut b2j: BTreeMap<T, Vec<usize>> = BTreeMap::new();
    for (j, c) in b.iter().enumerate() {
        b2j.entry(c.clone()).or_default().push(j);
    }
    // difflib's "autojunk": in sequences of 200+ items, items making up more than 1% are
    // left out of the longest-match search.
    if b.len() >= 200 {
        let limit = b.len() / 100 + 1;
        b2j.retain(|_, js| js.len() <= limit);
    }
    let mut blocks = Vec::new();
    let mut queue = vec![(0, a.len(), 0, b.len())];
    while let Some((alo, ahi, blo, bhi)) = queue.pop() {
        let (i, j, k) = longest_match(a, b, &b2j, alo, ahi, blo, bhi);
        if k > 0 {
            blocks.push((i, j, k));
            if alo < i && blo < j {
                queue.push((alo, i, blo, j));
            }
            if i + k < ahi && j + k < bhi {
                queue.push((i + k, ahi, j + k, bhi));
            }
        }
    }
    blocks.sort_unstable();
    let mut merged: Vec<(usize, usize, usize)> = Vec::new();
    for (i, j, k) in blocks {
        match merged.last_mut() {
            Some(last) if last.0 + last.2 == i && last.1 + last.2 == j => last.2 += k,
            _ => merged.push((i, j, k)),
        }
    }
    merged.push((a.len(), b.len(), 0));
    merged
}

#[allow(clippy::too_many_arguments)]
fn longest_match<T: Ord>(
    a: &[T],
    b: &[T],
    b2j: &BTreeMap<T, Vec<usize>>,
    alo: usize,
    ahi: usize,
    blo: usize,
    bhi: usize,
) -> (usize, usize, usize) {
    let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0);
    let mut j2len: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, c) in a.iter().enumerate().take(ahi).skip(alo) {
        let mut new: BTreeMap<usize, usize> = BTreeMap::new();
        if let Some(js) = b2j.get(c) {
            for &j in js {
                if j < blo {
                    continue;
                }
                if j >= bhi {
                    break;
                }
                let k = j
                    .checked_sub(1)
                    .and_then(|p| j2len.get(&p))
                    .copied()
                    .unwrap_or(0)
                    + 1;
                new.insert(j, k);
                if k > bestsize {
                    besti = i + 1 - k;
                    bestj = j + 1 - k;
                    bestsize = k;
                }
            }
        }
        j2len = new;
    }
    while besti > alo && bestj > blo && a[besti - 1] == b[bestj - 1] {
        besti -= 1;
        bestj -= 1;
        bestsize += 1;
    }
    while besti + bestsize < ahi
        && bestj + bestsize < bhi
        && a[besti + bestsize] == b[bestj + bestsize]
    {
        bestsize += 1;
    }
    (besti, bestj, bestsize)
}

/// One `difflib` opcode: tag and the ranges in `a` and `b`.
type Opcode = (&'static str, usize, usize, usize, usize);

fn opcodes<T: Ord + Clone>(a: &[T], b: &[T]) -> Vec<Opcode> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    for (ai, bj, size) in matching_blocks(a, b) {
        let tag = if i < ai && j < bj {
            "replace"
        } else if i < ai {
            "delete"
        } else if j < bj {
            "insert"
        } else {
            ""
        };
        if !tag.is_empty() {
            out.push((tag, i, ai, j, bj));
        }
        i = ai + size;
        j = bj + size;
        if size > 0 {
            out.push(("equal", ai, i, bj, j));
        }
    }
    out
}

/// `difflib`'s `get_grouped_opcodes(n)`: hunks with `n` lines of context.
fn grouped_opcodes(mut codes: Vec<Opcode>, n: usize) -> Vec<Vec<Opcode>> {
    if codes.is_empty() {
        codes.push(("equal", 0, 1, 0, 1));
    }
    if let Some(first) = codes.first_mut()
        && first.0 == "equal"
    {
        let (_, i1, i2, j1, j2) = *first;
        *first = (
            "equal",
            i1.max(i2.saturating_sub(n)),
            i2,
            j1.max(j2.saturating_sub(n)),
            j2,
        );
    }
    if let Some(last) = codes.last_mut()
        && last.0 == "equal"
    {
        let (_, i1, i2, j1, j2) = *last;
        *last = ("equal", i1, i2.min(i1 + n), j1, j2.min(j1 + n));
    }
    let mut groups = Vec::new();
    let mut group = Vec::new();
    for (tag, mut i1, i2, mut j1, j2) in codes {
        if tag == "equal" && i2 - i1 > 2 * n {
            group.push((tag, i1, i2.min(i1 + n), j1, j2.min(j1 + n)));
            groups.push(std::mem::take(&mut group));
            i1 = i1.max(i2.saturating_sub(n));
            j1 = j1.max(j2.saturating_sub(n));
        }
        group.push((tag, i1, i2, j1, j2));
    }
    let only_equal = group.len() == 1 && group[0].0 == "equal";
    if !group.is_empty() && !only_equal {
        groups.push(group);
    }
    groups
}

fn unified_range(start: usize, stop: usize) -> String {
    let length = stop - start;
    let beginning = if length == 0 { start } else { start + 1 };
    if length == 1 {
        beginning.to_string()
    } else {
        format!("{beginning},{length}")
    }
}

/// Python's `difflib.unified_diff(a, b, fromfile, tofile, lineterm='')`.
pub fn unified_diff(a: &[String], b: &[String], fromfile: &str, tofile: &str) -> Vec<String> {
    let mut out = Vec::new();
    for group in grouped_opcodes(opcodes(a, b), 3) {
        if out.is_empty() {
            out.push(format!("--- {fromfile}"));
            out.push(format!("+++ {tofile}"));
        }
        let (first, last) = (group[0], group[group.len() - 1]);
        out.push(format!(
            "@@ -{} +{} @@",
            unified_range(first.1, last.2),
            unified_range(first.3, last.4)
        ));
        for (tag, i1, i2, j1, j2) in group {
            if tag == "equal" {
                out.extend(a[i1..i2].iter().map(|l| format!(" {l}")));
                continue;
            }
            if tag == "replace" || tag == "delete" {
                out.extend(a[i1..i2].iter().map(|l| format!("-{l}")));
            }
            if tag == "replace" || tag == "insert" {
                out.extend(b[j1..j2].iter().map(|l| format!("+{l}")));
            }
        }
    }
    out
}

/// Python's `difflib.get_close_matches(word, possibilities, n, cutoff)`: best first, ties
/// in reverse string order (Python sorts `(score, candidate)` pairs descending).
pub fn close_matches(word: &str, possibilities: &[String], n: usize, cutoff: f64) -> Vec<String> {
    let b: Vec<char> = word.chars().collect();
    let mut scored: Vec<(f64, &String)> = possibilities
        .iter()
        .filter_map(|p| {
            let a: Vec<char> = p.chars().collect();
            let r = ratio(&a, &b);
            (r >= cutoff).then_some((r, p))
        })
        .collect();
    scored.sort_by(|x, y| {
        y.0.partial_cmp(&x.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| y.1.cmp(x.1))
    });
    scored.into_iter().take(n).map(|(_, p)| p.clone()).collect()
}

/// RF's `RecommendationFinder.find`: candidates whose normalized form is close to the
/// normalized name. `candidates` pairs each candidate with its normalized form; the
/// result lists candidates (sorted, grouped by normalized form, best match first).
pub fn recommend(norm_name: &str, candidates: &[(String, String)], max: usize) -> Vec<String> {
    if norm_name.is_empty() || candidates.is_empty() {
        return Vec::new();
    }
    let mut sorted: Vec<&(String, String)> = candidates.iter().collect();
    sorted.sort_by(|x, y| x.0.cmp(&y.0));
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for (cand, norm) in sorted {
        match groups.iter_mut().find(|(n, _)| n == norm) {
            Some((_, list)) => list.push(cand.clone()),
            None => groups.push((norm.clone(), vec![cand.clone()])),
        }
    }
    let cutoff = (0.5 + norm_name.chars().count() as f64 * 0.03).min(0.85);
    let norms: Vec<String> = groups.iter().map(|(n, _)| n.clone()).collect();
    close_matches(norm_name, &norms, max, cutoff)
        .into_iter()
        .flat_map(|m| {
            groups
                .iter()
                .find(|(n, _)| *n == m)
                .map(|(_, c)| c.clone())
                .unwrap_or_default()
        })
        .collect()
}

/// RF's `RecommendationFinder.format`: `message Did you mean:\n    a\n    b`.
pub fn format_recommendations(message: &str, recommendations: &[String]) -> String {
    let mut out = message.to_string();
    if !recommendations.is_empty() {
        out.push_str(" Did you mean:");
        for r in recommendations {
            out.push_str("\n    ");
            out.push_str(r);
        }
    }
    out
}

/// Python's `fnmatch.translate` as a Rust regex that must match the whole text.
pub fn glob_to_regex(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::from("(?s)^");
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '*' => {
                // Consecutive stars are one star.
                while chars.get(i) == Some(&'*') {
                    i += 1;
                }
                out.push_str(".*");
            }
            '?' => out.push('.'),
            '[' => {
                let mut j = i;
                if chars.get(j) == Some(&'!') {
                    j += 1;
                }
                if chars.get(j) == Some(&']') {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
                if j >= chars.len() {
                    out.push_str("\\[");
                    continue;
                }
                let stuff: Vec<char> = chars[i..j].to_vec();
                i = j + 1;
                if stuff.is_empty() {
                    // `[]` can never match.
                    out.push_str("[^\\s\\S]");
                } else if stuff == ['!'] {
                    out.push('.');
                } else {
                    out.push_str(&glob_class(&stuff));
                }
            }
            other => out.push_str(&regex::escape(&other.to_string())),
        }
    }
    out.push('$');
    out
}

/// A character class from the inside of `[...]`: `!` negates, `a-z` are ranges, and every
/// other character is literal (escaped, since Rust classes give `[`, `&`, `~` and `-`
/// meaning that fnmatch does not).
fn glob_class(stuff: &[char]) -> String {
    let (negate, body) = match stuff.first() {
        Some('!') => (true, &stuff[1..]),
        _ => (false, stuff),
    };
    let mut out = String::from(if negate { "[^" } else { "[" });
    let mut k = 0;
    while k < body.len() {
        let c = body[k];
        if k + 2 < body.len() && body[k + 1] == '-' {
            let hi = body[k + 2];
            // Python drops reversed ranges such as `z-a`.
            if c <= hi {
                out.push_str(&format!("{}-{}", class_char(c), class_char(hi)));
            }
            k += 3;
        } else {
            out.push_str(&class_char(c));
            k += 1;
        }
    }
    out.push(']');
    out
}

fn class_char(c: char) -> String {
    if c.is_alphanumeric() {
        c.to_string()
    } else {
        format!("\\{c}")
            .replace("\\\n", "\\n")
            .replace("\\\t", "\\t")
            .replace("\\\r", "\\r")
            .replace("\\ ", " ")
    }
}

/// RF's `Matcher(pattern, caseless, spaceless).match(text)`: a glob that must match the
/// whole (normalized) text.
pub fn glob_match(text: &str, pattern: &str, caseless: bool, spaceless: bool) -> bool {
    let norm = |s: &str| normalize(s, &[], caseless, spaceless);
    let (pattern, text) = (norm(pattern), norm(text));
    match regex::Regex::new(&glob_to_regex(&pattern)) {
        Ok(re) => re.is_match(&text),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn embedded_arguments_match_as_rf_matches_them() {
        let embedded_values = |t: &str, n: &str| Embedded::parse(t).and_then(|e| e.values(n));
        assert_eq!(
            embedded_values(
                "Bill Should Have ${count} Lines",
                "bill should have 2 LINES"
            ),
            Some(vec!["2".into()])
        );
        assert_eq!(
            embedded_values(
                "Bill Should Have ${count} Lines",
                "Bill Should Have ${n} Lines"
            ),
            Some(vec!["${n}".into()])
        );
        // Literal parts are matched as written: spaces count.
        assert_eq!(
            embedded_values("Bill Should Have ${count} Lines", "BillShouldHave 2 Lines"),
            None
        );
        assert_eq!(
            embedded_values(r"Code ${code:\d{3}} and ${name}", "code 404 and Not Found"),
            Some(vec!["404".into(), "Not Found".into()])
        );
        assert_eq!(embedded_values(r"Code ${code:\d{3}}", "Code 4040"), None);
        // A custom pattern's own groups do not shift the variables after it.
        assert_eq!(
            embedded_values("${a:(x|y)} then ${b}", "y then z"),
            Some(vec!["y".into(), "z".into()])
        );
        assert_eq!(embedded_values("Plain Name", "Plain Name"), None);
        assert_eq!(embedded_values("Broken ${x:(}", "Broken ("), None);
    }

    #[test]
    fn ratio_matches_difflib() {
        // Values from Python's difflib.
        assert_eq!(ratio(&chars("abcd"), &chars("bcde")), 0.75);
        assert!((ratio(&chars("shouldbeequal"), &chars("shuldbeequal")) - 0.96).abs() < 0.01);
        assert_eq!(ratio(&chars(""), &chars("")), 1.0);
    }

    #[test]
    fn close_matches_like_python() {
        let words: Vec<String> = ["ape", "apple", "peach", "puppy"]
            .map(String::from)
            .to_vec();
        assert_eq!(close_matches("appel", &words, 3, 0.6), vec!["apple", "ape"]);
    }

    #[test]
    fn printable_names_follow_rf() {
        assert_eq!(printable_name("add_numbers"), "Add Numbers");
        assert_eq!(printable_name("simple"), "Simple");
        assert_eq!(printable_name("camelCaseName"), "Camel Case Name");
        assert_eq!(printable_name("mixedCAPSCamel"), "Mixed CAPS Camel");
        assert_eq!(printable_name("miXed_CAPS_nAMe"), "MiXed CAPS NAMe");
        assert_eq!(printable_name("Already Nice"), "Already Nice");
    }

    #[test]
    fn globs() {
        assert!(glob_match("hello world", "hello*", false, false));
        assert!(glob_match("abc", "a?c", false, false));
        assert!(!glob_match("abcd", "a?c", false, false));
        assert!(glob_match("a1", "a[0-9]", false, false));
        assert!(glob_match("ab", "a[!0-9]", false, false));
        assert!(glob_match("HELLO", "hel*", true, false));
        assert!(glob_match("a[b", "a[[]b", false, false));
        assert!(glob_match("x&y", "x[&]y", false, false));
    }
}

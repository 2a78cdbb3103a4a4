//! A small XML-RPC codec for the types Robot Framework's remote interface uses: string,
//! int (`i4`/`i8`), double, boolean, array, struct, base64, nil and dateTime (read as
//! text). Method calls are written the way Python's `xmlrpc.client` writes them, and
//! responses and faults are read the way it reads them (a `<value>` without a type is a
//! string; base64 becomes bytes).

use crate::value::Value;

/// An XML-RPC value.
#[derive(Debug, Clone, PartialEq)]
pub enum Rpc {
    /// `<string>`.
    Str(String),
    /// `<int>`, `<i4>`, `<i8>`.
    Int(i64),
    /// `<double>`.
    Double(f64),
    /// `<boolean>`.
    Bool(bool),
    /// `<base64>`.
    Binary(Vec<u8>),
    /// `<nil/>`.
    Nil,
    /// `<array>`.
    Array(Vec<Rpc>),
    /// `<struct>`, members in document order.
    Struct(Vec<(String, Rpc)>),
}

impl Rpc {
    /// A struct member.
    pub fn member(&self, name: &str) -> Option<&Rpc> {
        match self {
            Rpc::Struct(members) => members.iter().find(|(k, _)| k == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Text of a string value (other values as RF's `safe_str` would show them).
    pub fn text(&self) -> String {
        self.to_value().to_str()
    }

    /// As an RF value: structs become DotDicts (as RF's `RemoteResult` makes them),
    /// binary becomes bytes, nil becomes `None`.
    pub fn to_value(&self) -> Value {
        match self {
            Rpc::Str(s) => Value::Str(s.clone()),
            Rpc::Int(i) => Value::Int(*i),
            Rpc::Double(f) => Value::Float(*f),
            Rpc::Bool(b) => Value::Bool(*b),
            Rpc::Binary(b) => Value::Bytes(b.clone()),
            Rpc::Nil => Value::None,
            Rpc::Array(items) => Value::list(items.iter().map(Rpc::to_value).collect()),
            Rpc::Struct(members) => Value::dict(
                members
                    .iter()
                    .map(|(k, v)| (Value::Str(k.clone()), v.to_value()))
                    .collect(),
                true,
            ),
        }
    }
}

/// The result of a call: a value, or an XML-RPC fault.
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    /// `<params><param>value</param></params>`.
    Value(Rpc),
    /// `<fault>`: code and string.
    Fault(i64, String),
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn encode_value(v: &Rpc, out: &mut String) {
    out.push_str("<value>");
    match v {
        Rpc::Str(s) => {
            out.push_str("<string>");
            out.push_str(&escape(s));
            out.push_str("</string>");
        }
        Rpc::Int(i) => out.push_str(&format!("<int>{i}</int>")),
        Rpc::Double(f) => out.push_str(&format!(
            "<double>{}</double>",
            crate::value::float_repr(*f)
        )),
        Rpc::Bool(b) => out.push_str(&format!("<boolean>{}</boolean>", u8::from(*b))),
        Rpc::Binary(b) => {
            out.push_str("<base64>\n");
            out.push_str(&base64_encode(b));
            out.push_str("\n</base64>");
        }
        Rpc::Nil => out.push_str("<nil/>"),
        Rpc::Array(items) => {
            out.push_str("<array><data>\n");
            for item in items {
                encode_value(item, out);
                out.push('\n');
            }
            out.push_str("</data></array>");
        }
        Rpc::Struct(members) => {
            out.push_str("<struct>\n");
            for (k, v) in members {
                out.push_str("<member>\n<name>");
                out.push_str(&escape(k));
                out.push_str("</name>\n");
                encode_value(v, out);
                out.push_str("\n</member>\n");
            }
            out.push_str("</struct>");
        }
    }
    out.push_str("</value>");
}

/// A `<methodCall>` document.
pub fn encode_call(method: &str, params: &[Rpc]) -> String {
    let mut out = String::from("<?xml version='1.0'?>\n<methodCall>\n<methodName>");
    out.push_str(&escape(method));
    out.push_str("</methodName>\n<params>\n");
    for p in params {
        out.push_str("<param>\n");
        encode_value(p, &mut out);
        out.push_str("\n</param>\n");
    }
    out.push_str("</params>\n</methodCall>\n");
    out
}

/// Reads a `<methodResponse>` document.
pub fn decode_response(xml: &str) -> Result<Response, String> {
    let root = parse_document(xml)?;
    if root.name != "methodResponse" {
        return Err(format!("expected <methodResponse>, got <{}>", root.name));
    }
    if let Some(fault) = root.child("fault") {
        let value = decode_value(fault.child("value").ok_or("<fault> without a <value>")?)?;
        let code = match value.member("faultCode") {
            Some(Rpc::Int(i)) => *i,
            _ => 0,
        };
        let text = value
            .member("faultString")
            .map(Rpc::text)
            .unwrap_or_default();
        return Ok(Response::Fault(code, text));
    }
    let value = root
        .child("params")
        .and_then(|p| p.child("param"))
        .and_then(|p| p.child("value"))
        .ok_or("response has no <params><param><value>")?;
    decode_value(value).map(Response::Value)
}

fn decode_value(value: &Element) -> Result<Rpc, String> {
    let Some(typed) = value.elements().next() else {
        // No type element: the text is a string.
        return Ok(Rpc::Str(value.text()));
    };
    let text = typed.text();
    // Strip the namespace prefix of `<ex:nil/>` and friends.
    let name = typed.name.rsplit(':').next().unwrap_or(&typed.name);
    match name {
        "string" => Ok(Rpc::Str(text)),
        "int" | "i4" | "i8" | "i1" | "i2" | "biginteger" => text
            .trim()
            .parse()
            .map(Rpc::Int)
            .map_err(|_| format!("invalid integer '{text}'")),
        "double" | "float" | "bigdecimal" => text
            .trim()
            .parse()
            .map(Rpc::Double)
            .map_err(|_| format!("invalid double '{text}'")),
        "boolean" => match text.trim() {
            "1" | "true" => Ok(Rpc::Bool(true)),
            "0" | "false" => Ok(Rpc::Bool(false)),
            other => Err(format!("invalid boolean '{other}'")),
        },
        "base64" => base64_decode(&text).map(Rpc::Binary),
        "nil" => Ok(Rpc::Nil),
        "dateTime.iso8601" => Ok(Rpc::Str(text.trim().to_string())),
        "array" => {
            let data = typed.child("data").ok_or("<array> without <data>")?;
            data.elements()
                .filter(|e| e.name == "value")
                .map(decode_value)
                .collect::<Result<Vec<_>, _>>()
                .map(Rpc::Array)
        }
        "struct" => {
            let mut members = Vec::new();
            for m in typed.elements().filter(|e| e.name == "member") {
                let name = m.child("name").map(Element::text).unwrap_or_default();
                let v = m.child("value").ok_or("<member> without <value>")?;
                members.push((name, decode_value(v)?));
            }
            Ok(Rpc::Struct(members))
        }
        other => Err(format!("unsupported XML-RPC type <{other}>")),
    }
}

/// A parsed XML element.
#[derive(Debug, Clone)]
struct Element {
    name: String,
    children: Vec<Node>,
}

#[derive(Debug, Clone)]
enum Node {
    Element(Element),
    Text(String),
}

impl Element {
    fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|c| match c {
            Node::Element(e) => Some(e),
            Node::Text(_) => None,
        })
    }

    fn child(&self, name: &str) -> Option<&Element> {
        self.elements().find(|e| e.name == name)
    }

    fn text(&self) -> String {
        self.children
            .iter()
            .map(|c| match c {
                Node::Text(t) => t.clone(),
                Node::Element(e) => e.text(),
            })
            .collect()
    }
}

/// A minimal XML parser: elements, attributes (skipped), text, entities, CDATA,
/// comments and processing instructions. Enough for XML-RPC responses.
fn parse_document(xml: &str) -> Result<Element, String> {
    let mut p = XmlParser {
        s: xml.as_bytes(),
        pos: 0,
        depth: 0,
    };
    p.skip_misc()?;
    let root = p.element()?;
    Ok(root)
}

struct XmlParser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl XmlParser<'_> {
    fn starts(&self, prefix: &str) -> bool {
        self.s[self.pos..].starts_with(prefix.as_bytes())
    }

    fn skip_until(&mut self, end: &str) -> Result<(), String> {
        while self.pos < self.s.len() {
            if self.starts(end) {
                self.pos += end.len();
                return Ok(());
            }
            self.pos += 1;
        }
        Err(format!("unterminated XML construct (expected '{end}')"))
    }

    /// Whitespace, the XML declaration, comments, doctype.
    fn skip_misc(&mut self) -> Result<(), String> {
        loop {
            while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
                self.pos += 1;
            }
            if self.starts("<?") {
                self.skip_until("?>")?;
            } else if self.starts("<!--") {
                self.skip_until("-->")?;
            } else if self.starts("<!DOCTYPE") {
                self.skip_until(">")?;
            } else {
                return Ok(());
            }
        }
    }

    fn name(&mut self) -> String {
        let start = self.pos;
        while self.pos < self.s.len() {
            let c = self.s[self.pos];
            if c.is_ascii_whitespace() || c == b'>' || c == b'/' {
                break;
            }
            self.pos += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.pos]).into_owned()
    }

    fn element(&mut self) -> Result<Element, String> {
        self.depth += 1;
        if self.depth > 200 {
            return Err("XML nested too deeply".into());
        }
        if !self.starts("<") {
            return Err("expected an XML element".into());
        }
        self.pos += 1;
        let name = self.name();
        if name.is_empty() {
            return Err("empty XML element name".into());
        }
        // Skip attributes up to '>' or '/>'.
        let mut quote: Option<u8> = None;
        let mut self_closing = false;
        loop {
            let Some(&c) = self.s.get(self.pos) else {
                return Err(format!("unterminated tag <{name}>"));
            };
            self.pos += 1;
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, b'"' | b'\'') => quote = Some(c),
                (None, b'/') if self.s.get(self.pos) == Some(&b'>') => {
                    self.pos += 1;
                    self_closing = true;
                    break;
                }
                (None, b'>') => break,
                _ => {}
            }
        }
        let mut el = Element {
            name,
            children: Vec::new(),
        };
        if self_closing {
            self.depth -= 1;
            return Ok(el);
        }
        let mut text = Vec::new();
        loop {
            if self.pos >= self.s.len() {
                return Err(format!("unterminated element <{}>", el.name));
            }
            if self.starts("</") {
                if !text.is_empty() {
                    el.children.push(Node::Text(decode_text(&text)?));
                }
                self.pos += 2;
                let end = self.name();
                if end != el.name {
                    return Err(format!("mismatched tag </{end}> for <{}>", el.name));
                }
                self.skip_until(">")?;
                self.depth -= 1;
                return Ok(el);
            }
            if self.starts("<![CDATA[") {
                self.pos += 9;
                let start = self.pos;
                self.skip_until("]]>")?;
                // CDATA is literal: escape its ampersands so decode_text keeps them.
                for &b in &self.s[start..self.pos - 3] {
                    if b == b'&' {
                        text.extend_from_slice(b"&amp;");
                    } else {
                        text.push(b);
                    }
                }
                continue;
            }
            if self.starts("<!--") {
                self.skip_until("-->")?;
                continue;
            }
            if self.starts("<?") {
                self.skip_until("?>")?;
                continue;
            }
            if self.starts("<") {
                if !text.is_empty() {
                    el.children.push(Node::Text(decode_text(&text)?));
                    text.clear();
                }
                el.children.push(Node::Element(self.element()?));
                continue;
            }
            text.push(self.s[self.pos]);
            self.pos += 1;
        }
    }
}

/// Resolves entities in text.
fn decode_text(raw: &[u8]) -> Result<String, String> {
    let s = String::from_utf8_lossy(raw);
    if !s.contains('&') {
        return Ok(s.into_owned());
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_ref();
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let end = rest[i..].find(';').ok_or("unterminated XML entity")?;
        let entity = &rest[i + 1..i + end];
        match entity {
            "lt" => out.push('<'),
            "gt" => out.push('>'),
            "amp" => out.push('&'),
            "quot" => out.push('"'),
            "apos" => out.push('\''),
            e if e.starts_with("#x") || e.starts_with("#X") => {
                let c = u32::from_str_radix(&e[2..], 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| format!("invalid character reference &{e};"))?;
                out.push(c);
            }
            e if e.starts_with('#') => {
                let c = e[1..]
                    .parse::<u32>()
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| format!("invalid character reference &{e};"))?;
                out.push(c);
            }
            other => return Err(format!("unknown XML entity &{other};")),
        }
        rest = &rest[i + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(B64[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard base64, whitespace ignored.
pub fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes() {
        if c.is_ascii_whitespace() || c == b'=' {
            continue;
        }
        let v = B64
            .iter()
            .position(|&x| x == c)
            .ok_or_else(|| format!("invalid base64 character '{}'", char::from(c)))?;
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_encode_like_python() {
        let xml = encode_call(
            "run_keyword",
            &[
                Rpc::Str("add <x> & y".into()),
                Rpc::Array(vec![Rpc::Int(1), Rpc::Double(1.5), Rpc::Bool(true)]),
                Rpc::Struct(vec![("k".into(), Rpc::Binary(b"\x00\x01".to_vec()))]),
            ],
        );
        assert!(xml.contains("<methodName>run_keyword</methodName>"));
        assert!(xml.contains("<string>add &lt;x&gt; &amp; y</string>"));
        assert!(xml.contains("<int>1</int>"));
        assert!(xml.contains("<double>1.5</double>"));
        assert!(xml.contains("<boolean>1</boolean>"));
        assert!(xml.contains("<base64>\nAAE=\n</base64>"));
    }

    #[test]
    fn responses_decode() {
        let xml = "<?xml version='1.0'?>\n<methodResponse>\n<params>\n<param>\n<value><struct>\n\
            <member>\n<name>status</name>\n<value><string>PASS</string></value>\n</member>\n\
            <member>\n<name>return</name>\n<value><array><data>\n<value><int>3</int></value>\n\
            <value>plain &amp; text</value>\n<value><nil/></value>\n<value><base64>aGk=</base64></value>\n\
            </data></array></value>\n</member>\n</struct></value>\n</param>\n</params>\n</methodResponse>\n";
        let Response::Value(v) = decode_response(xml).unwrap() else {
            panic!("fault")
        };
        assert_eq!(v.member("status"), Some(&Rpc::Str("PASS".into())));
        assert_eq!(
            v.member("return").unwrap().to_value().repr(),
            "[3, 'plain & text', None, b'hi']"
        );
    }

    #[test]
    fn faults_decode() {
        let xml = "<?xml version='1.0'?><methodResponse><fault><value><struct>\
            <member><name>faultCode</name><value><int>1</int></value></member>\
            <member><name>faultString</name><value><string>&lt;class 'Exception'&gt;:boom</string></value></member>\
            </struct></value></fault></methodResponse>";
        assert_eq!(
            decode_response(xml).unwrap(),
            Response::Fault(1, "<class 'Exception'>:boom".into())
        );
    }

    #[test]
    fn base64_round_trips() {
        for data in [&b""[..], b"a", b"ab", b"abc", b"\x00\xff\x10hello"] {
            assert_eq!(base64_decode(&base64_encode(data)).unwrap(), data);
        }
        assert_eq!(base64_encode(b"hi"), "aGk=");
    }
}

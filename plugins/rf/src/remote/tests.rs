//! Remote-library tests with a scripted server (the e2e tests use a real one).

use std::collections::VecDeque;

use super::*;
use crate::engine::Session;

/// Answers each POST with the next canned XML response, and records the requests.
struct Scripted {
    replies: VecDeque<Result<String, HttpError>>,
    requests: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
}

impl Transport for Scripted {
    fn post(&mut self, url: &str, body: &[u8], _: Option<f64>) -> Result<Vec<u8>, HttpError> {
        assert!(url.starts_with("http://127.0.0.1:8270"), "{url}");
        self.requests
            .borrow_mut()
            .push(String::from_utf8_lossy(body).into_owned());
        self.replies
            .pop_front()
            .unwrap_or_else(|| Err("no more replies".into()))
            .map(String::into_bytes)
    }
}

fn value(xml: &str) -> Result<String, HttpError> {
    Ok(format!(
        "<?xml version='1.0'?><methodResponse><params><param><value>{xml}</value></param></params></methodResponse>"
    ))
}

fn fault(text: &str) -> Result<String, HttpError> {
    Ok(format!(
        "<?xml version='1.0'?><methodResponse><fault><value><struct><member><name>faultCode</name><value><int>1</int></value></member><member><name>faultString</name><value><string>{text}</string></value></member></struct></value></fault></methodResponse>"
    ))
}

fn session(
    replies: Vec<Result<String, HttpError>>,
) -> (Session, std::rc::Rc<std::cell::RefCell<Vec<String>>>) {
    let requests = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let transport = Scripted {
        replies: replies.into(),
        requests: requests.clone(),
    };
    (Session::new(Box::new(transport)), requests)
}

fn raw(args: &[&str]) -> Vec<Arg> {
    args.iter().map(|a| Arg::Raw(a.to_string())).collect()
}

#[test]
fn import_call_and_result_handling() {
    let (mut s, requests) = session(vec![
        fault("method \"get_library_information\" is not supported"),
        value(
            "<array><data><value>add_numbers</value><value>stop_remote_server</value></data></array>",
        ),
        value("<array><data><value>a</value><value>b</value></data></array>"),
        value(
            "<struct><member><name>status</name><value>PASS</value></member>\
             <member><name>return</name><value><int>5</int></value></member>\
             <member><name>output</name><value>one\n*WARN* two\n</value></member></struct>",
        ),
    ]);
    s.run(
        "Import Library",
        &raw(&["Remote", "http://127.0.0.1:8270", "AS", "Calc"]),
    )
    .unwrap();
    let result = s.run("Calc.Add Numbers", &raw(&["2", "3"])).unwrap();
    assert_eq!(result.repr(), "5");
    let logs = s.take_logs();
    let tail: Vec<(Level, &str)> = logs
        .iter()
        .rev()
        .take(2)
        .rev()
        .map(|l| (l.level, l.message.as_str()))
        .collect();
    assert_eq!(tail, [(Level::Info, "one"), (Level::Warn, "two")]);
    let last = requests.borrow().last().cloned().unwrap();
    assert!(
        last.contains("<methodName>run_keyword</methodName>"),
        "{last}"
    );
    assert!(
        last.contains("<string>add_numbers</string>"),
        "the server's own name is sent: {last}"
    );
    assert!(last.contains("<string>2</string>") && last.contains("<string>3</string>"));
}

#[test]
fn failures_keep_flags_and_arguments_are_validated() {
    let (mut s, _) = session(vec![
        fault("nope"),
        value("<array><data><value>soft</value></data></array>"),
        value("<array><data><value>x</value></data></array>"),
        value(
            "<struct><member><name>status</name><value>FAIL</value></member>\
             <member><name>error</name><value>ContinuableError: soft</value></member>\
             <member><name>traceback</name><value>Traceback ...</value></member>\
             <member><name>continuable</name><value><boolean>1</boolean></value></member></struct>",
        ),
    ]);
    s.run("Import Library", &raw(&["Remote"])).unwrap();
    let e = s.run("Soft", &raw(&["a", "b"])).unwrap_err();
    assert_eq!(
        e.message,
        "Keyword 'Remote.Soft' expected 1 argument, got 2."
    );
    let e = s.run("Soft", &raw(&["a"])).unwrap_err();
    assert_eq!(e.message, "ContinuableError: soft");
    assert!(e.continuable && !e.fatal);
    assert_eq!(e.traceback, "Traceback ...");
}

#[test]
fn denied_requests_are_reported_as_such() {
    let denied = HttpError {
        message: "not on the allow-list".into(),
        denied: true,
    };
    let (mut s, _) = session(vec![Err(denied.clone()), Err(denied)]);
    let e = s.run("Import Library", &raw(&["Remote"])).unwrap_err();
    assert_eq!(e.code, crate::error::Code::Denied);
}

#[test]
fn arguments_coerce_like_rf() {
    assert_eq!(coerce(&Value::None).unwrap(), Rpc::Str(String::new()));
    assert_eq!(
        coerce(&Value::str("a\u{1}b")).unwrap(),
        Rpc::Binary(vec![b'a', 1, b'b'])
    );
    let d = Value::dict(
        vec![(Value::Int(1), Value::tuple(vec![Value::Bool(true)]))],
        true,
    );
    assert_eq!(
        coerce(&d).unwrap(),
        Rpc::Struct(vec![("1".into(), Rpc::Array(vec![Rpc::Bool(true)]))])
    );
}

#[test]
fn output_splits_by_level_markers() {
    assert_eq!(split_output(""), vec![]);
    assert_eq!(
        split_output("plain\n*DEBUG:1234* dbg\nmore\n*HTML* <b>x</b>"),
        vec![
            (Level::Info, "plain".to_string()),
            (Level::Debug, "dbg\nmore".to_string()),
            (Level::Info, "<b>x</b>".to_string()),
        ]
    );
}

#[test]
fn documentation_tags_are_read_like_rf() {
    assert_eq!(doc_tags("Does things.\n\nTags: a, b"), ["a", "b"]);
    assert_eq!(
        doc_tags("Does things.\n\n**Tags::** a,\n  b , c\nMore text, d"),
        ["a", "b", "c"]
    );
    assert_eq!(
        doc_tags("Tags:a\n  Tags are nice, too.\nTags:"),
        Vec::<String>::new()
    );
    assert_eq!(doc_tags("tags: x"), ["x"]);
}

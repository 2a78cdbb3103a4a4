//! `rf`: a stephost plugin that runs Robot Framework keywords with Robot Framework's own
//! semantics.
//!
//! BuiltIn, String and Collections keywords run here, in the sandbox: keyword-name
//! matching, named arguments, `${variables}` (kept for the whole session), argument
//! conversion, return values, log messages and failure messages all follow RF 7. Any
//! other RF library is reachable through RF's remote library interface: the plugin
//! speaks XML-RPC over the host's `wasi:http` outgoing handler, which the host
//! allow-lists per plugin.
//!
//! Layout: [`plugin`] holds the verbs; [`engine`] the session, keyword lookup and
//! execution; [`keywords`] the libraries; [`variables`], [`args`], [`expr`] RF's variable
//! syntax, argument handling and the safe expression evaluator; [`remote`] the XML-RPC
//! client; [`recovery`] the recovery strategies a failed keyword proposes. This file
//! only binds the verbs to the WIT interface.

pub mod args;
pub mod engine;
pub mod error;
pub mod expr;
pub mod keywords;
pub mod matching;
pub mod plugin;
pub mod pyfmt;
pub mod pynum;
pub mod pystr;
pub mod recovery;
pub mod regexp;
pub mod remote;
pub mod timefmt;
pub mod value;
pub mod variables;

#[cfg(target_arch = "wasm32")]
mod component {
    use std::cell::RefCell;

    use crate::engine::{Level as RfLevel, Session};
    use crate::plugin;

    wit_bindgen::generate!({ path: "../../wit", world: "plugin" });

    use exports::stephost::plugin::tool::Guest;
    use stephost::plugin::log::{Level, log};
    use stephost::plugin::types::{Content, Failure, Output, PluginInfo, VerbInfo};

    // One session per instance; the host gives every session its own instance.
    thread_local! {
        static SESSION: RefCell<Option<Session>> = const { RefCell::new(None) };
    }

    struct Rf;

    export!(Rf);

    fn forward(logs: &[crate::engine::LogLine]) {
        for line in logs {
            let level = match line.level {
                RfLevel::Trace => Level::Trace,
                RfLevel::Debug => Level::Debug,
                RfLevel::Info | RfLevel::None => Level::Info,
                RfLevel::Warn => Level::Warn,
                RfLevel::Error => Level::Error,
            };
            log(level, &line.message);
        }
    }

    impl Guest for Rf {
        fn describe() -> PluginInfo {
            PluginInfo {
                name: "rf".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                description: "Robot Framework keywords with RF semantics: BuiltIn, String and \
                    Collections run in the sandbox (variables persist for the session), other \
                    libraries through RF's remote library interface over allow-listed HTTP."
                    .into(),
                bare_tool_names: false,
                verbs: plugin::verbs()
                    .into_iter()
                    .map(|v| VerbInfo {
                        name: v.name.into(),
                        description: v.description.into(),
                        input_schema: v.input_schema.to_string(),
                        output_schema: v.output_schema.map(|s| s.to_string()).unwrap_or_default(),
                        acts_on_world: v.acts_on_world,
                    })
                    .collect(),
            }
        }

        fn invoke(verb: String, input: String) -> Result<Output, Failure> {
            SESSION.with(|cell| {
                let mut slot = cell.borrow_mut();
                let session =
                    slot.get_or_insert_with(|| Session::new(crate::remote::default_transport()));
                match plugin::invoke(session, &verb, &input) {
                    Ok(out) => {
                        forward(&out.logs);
                        Ok(Output {
                            value: out.value.to_string(),
                            content: out.text.map(Content::Text).into_iter().collect(),
                        })
                    }
                    Err(f) => {
                        forward(&f.logs);
                        Err(Failure {
                            code: f.code.into(),
                            message: f.message,
                            input_fired: f.input_fired,
                            details: if f.details.is_null() {
                                String::new()
                            } else {
                                f.details.to_string()
                            },
                        })
                    }
                }
            })
        }
    }
}

//! The verb table, dispatch and per-instance state.
//!
//! A plugin lists its verbs once, as [`Verb`]s: name, description, input schema,
//! output schema, whether it acts on the world, and the handler. `describe` is the
//! table without the handlers; `invoke` finds the verb by name, parses the input,
//! refuses fields a closed schema does not list, and calls the handler with the
//! instance's state. So the catalogue and the dispatch cannot drift apart, and the
//! unknown-verb failure lists exactly the verbs that exist.
//!
//! State: the host gives every session its own component instance and calls it
//! one step at a time; a wasm guest has one thread. So one `thread_local!` cell
//! holds the instance's [`Plugin::State`] (created with `Default` on the first
//! `invoke`, not in `describe`, which the host runs on a throwaway instance) and
//! the table, built once per instance rather than per call. A handler gets
//! `&mut State`: no statics, atomics or locks in plugins. Handlers must not call
//! [`invoke`] themselves (the cell is borrowed while they run).

use std::any::Any;
use std::cell::RefCell;

use serde_json::{Value, json};

use crate::{Args, Failure, Output};

pub use crate::bindings::stephost::plugin::types::{PluginInfo, VerbInfo};

/// A verb's implementation: the instance's state and the parsed input.
pub type Handler<S> = fn(&mut S, &Args) -> Result<Output, Failure>;

/// A verb's check: what can be known about an input before anything acts
/// (key names, the operator's rules, whether a capability is there). It must
/// not act or wait; it gets no state, because a check runs before any step of
/// the batch has. A failure refuses the whole batch; name the input field in
/// its details (`{"field": "combo"}`).
pub type Checker = fn(&Args) -> Result<(), Failure>;

/// A stephost plugin: what `describe` says about it and its verb table.
pub trait Plugin: 'static {
    /// Plugin name, `[a-z][a-z0-9-]*`; steps address the plugin by it.
    const NAME: &'static str;
    /// Plugin version (semver); usually `env!("CARGO_PKG_VERSION")`.
    const VERSION: &'static str;
    /// One paragraph, written for a person or a model choosing tools.
    const DESCRIPTION: &'static str;
    /// Whether the MCP front names each verb's tool by the verb alone
    /// (`navigate`) rather than `<plugin>_<verb>`.
    const BARE_TOOL_NAMES: bool = false;

    /// State kept for the instance, i.e. for one session: `()` for none.
    type State: Default + 'static;

    /// The verbs, in listing order. Called once per instance (and once more by
    /// `describe`), so it may build schemas with `json!`.
    fn verbs() -> Vec<Verb<Self::State>>;
}

/// One verb: what `describe` lists and the handler `invoke` runs.
pub struct Verb<S> {
    name: String,
    description: String,
    input_schema: Value,
    output_schema: Option<Value>,
    acts_on_world: bool,
    handler: Handler<S>,
    checker: Option<Checker>,
}

impl<S> Verb<S> {
    /// A verb that does not act on the world and declares no output schema.
    /// `input_schema` should be a closed object schema (`"additionalProperties":
    /// false`): the host then catches typos before a batch runs, and `invoke`
    /// refuses unknown fields with the same list.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: Handler<S>,
    ) -> Self {
        Verb {
            name: name.into(),
            description: description.into(),
            input_schema,
            output_schema: None,
            acts_on_world: false,
            handler,
            checker: None,
        }
    }

    /// Gives the verb a check that the host runs for every step naming it
    /// before the batch's first step acts (`tool.check`).
    pub fn checked_by(mut self, checker: Checker) -> Self {
        self.checker = Some(checker);
        self
    }

    /// Declares the JSON Schema of the output value (informational for the host).
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Declares whether the verb changes the outside world (clicks, types, posts):
    /// the host never blindly re-runs such a verb after a failure whose input may
    /// have fired.
    pub fn acts_on_world(mut self, acts: bool) -> Self {
        self.acts_on_world = acts;
        self
    }

    /// The verb's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The verb as `describe` lists it.
    pub fn info(&self) -> VerbInfo {
        VerbInfo {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.to_string(),
            output_schema: self
                .output_schema
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default(),
            acts_on_world: self.acts_on_world,
            checked: self.checker.is_some(),
        }
    }

    /// The fields a closed input schema allows; `None` when it is open.
    fn closed_fields(&self) -> Option<Vec<String>> {
        if self.input_schema.get("additionalProperties") != Some(&Value::Bool(false)) {
            return None;
        }
        let properties = self
            .input_schema
            .get("properties")
            .and_then(Value::as_object);
        Some(
            properties
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default(),
        )
    }
}

/// What `describe` returns for `P`.
pub fn describe<P: Plugin>() -> PluginInfo {
    PluginInfo {
        name: P::NAME.into(),
        version: P::VERSION.into(),
        description: P::DESCRIPTION.into(),
        bare_tool_names: P::BARE_TOOL_NAMES,
        verbs: P::verbs().iter().map(Verb::info).collect(),
    }
}

/// Runs `verb` on this instance of `P`: what the component's `invoke` does.
pub fn invoke<P: Plugin>(verb: &str, input: &str) -> Result<Output, Failure> {
    INSTANCE.with(|cell| {
        let mut slot = cell.borrow_mut();
        if !slot.as_deref().is_some_and(|i| i.is::<Instance<P>>()) {
            *slot = Some(Box::new(Instance::<P>::new()));
        }
        match slot
            .as_deref_mut()
            .and_then(|i| i.downcast_mut::<Instance<P>>())
        {
            Some(instance) => instance.table.dispatch(&mut instance.state, verb, input),
            None => unreachable!("the instance was created just above"),
        }
    })
}

/// Checks `verb`'s input on this instance of `P` without running it: what the
/// component's `check` does. A verb without a checker passes.
pub fn check<P: Plugin>(verb: &str, input: &str) -> Result<(), Failure> {
    INSTANCE.with(|cell| {
        let mut slot = cell.borrow_mut();
        if !slot.as_deref().is_some_and(|i| i.is::<Instance<P>>()) {
            *slot = Some(Box::new(Instance::<P>::new()));
        }
        match slot
            .as_deref()
            .and_then(|i| i.downcast_ref::<Instance<P>>())
        {
            Some(instance) => instance.table.check(verb, input),
            None => unreachable!("the instance was created just above"),
        }
    })
}

/// Runs `verb` of `P` on a state the caller owns, through the same table and
/// checks as [`invoke`]. For tests that need a state of their own (a fake
/// transport, a prepared session); builds the table on every call.
pub fn invoke_with<P: Plugin>(
    state: &mut P::State,
    verb: &str,
    input: &str,
) -> Result<Output, Failure> {
    Table::new(P::NAME, P::verbs()).dispatch(state, verb, input)
}

/// Drops this thread's instance: the next [`invoke`] starts a fresh one.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn drop_instance() {
    INSTANCE.with(|cell| cell.borrow_mut().take());
}

thread_local! {
    /// The instance of the one plugin this component exports. Type-erased because
    /// a generic function cannot own a static; there is only ever one type in it.
    static INSTANCE: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

/// A plugin's state and table, for one instance.
struct Instance<P: Plugin> {
    state: P::State,
    table: Table<P::State>,
}

impl<P: Plugin> Instance<P> {
    fn new() -> Self {
        Instance {
            state: P::State::default(),
            table: Table::new(P::NAME, P::verbs()),
        }
    }
}

/// The verbs with the field lists of their closed schemas, worked out once.
struct Table<S> {
    plugin: &'static str,
    verbs: Vec<(Verb<S>, Option<Vec<String>>)>,
}

impl<S> Table<S> {
    fn new(plugin: &'static str, verbs: Vec<Verb<S>>) -> Self {
        let verbs = verbs
            .into_iter()
            .map(|v| {
                let fields = v.closed_fields();
                (v, fields)
            })
            .collect();
        Table { plugin, verbs }
    }

    fn dispatch(&self, state: &mut S, verb: &str, input: &str) -> Result<Output, Failure> {
        let Some((found, fields)) = self.verbs.iter().find(|(v, _)| v.name == verb) else {
            return Err(self.unknown(verb));
        };
        let args = Args::parse(input)?;
        if let Some(fields) = fields {
            args.check_fields(fields)?;
        }
        (found.handler)(state, &args)
    }

    fn check(&self, verb: &str, input: &str) -> Result<(), Failure> {
        let Some((found, fields)) = self.verbs.iter().find(|(v, _)| v.name == verb) else {
            return Err(self.unknown(verb));
        };
        let Some(checker) = found.checker else {
            return Ok(());
        };
        let args = Args::parse(input)?;
        if let Some(fields) = fields {
            args.check_fields(fields)?;
        }
        checker(&args)
    }

    /// `invalid-input` for a verb this plugin does not have, listing those it has.
    fn unknown(&self, verb: &str) -> Failure {
        let known: Vec<&str> = self.verbs.iter().map(|(v, _)| v.name.as_str()).collect();
        Failure::invalid_input(format!(
            "{} has no verb `{verb}`; its verbs are: {}",
            self.plugin,
            known.join(", ")
        ))
        .with_details(json!({ "verb": verb, "known_verbs": known }))
    }
}

//! Host-side bindings of the plugin world, one module per contract version, and
//! their conversion into the version-free types of `stephost-contract`.
//!
//! Why one module per version: a released `wit/<version>/` is frozen, and a
//! component built against it must keep loading when the host moves on. Each
//! module binds its version's `plugin` world and converts what comes back into
//! contract types, so nothing above this file knows which version a plugin
//! speaks. A new version adds a module here and a case to [`Plugin`].

use stephost_contract::{
    ContractVersion, Failure, FailureCode, Output, Proposal, RawDescription, RawVerb,
};
use wasmtime::component::{Component, InstancePre};
use wasmtime::{AsContextMut, Store};

/// Contract 0.1.0: failure codes and recovery proposals as text in `details`.
pub(crate) mod v0_1 {
    #![allow(missing_docs, unreachable_pub)]

    wasmtime::component::bindgen!({
        path: "../../wit/0.1.0",
        world: "plugin",
        imports: { default: async },
        exports: { default: async },
    });
}

/// Contract 0.2.0: typed failure codes and recovery proposals.
pub(crate) mod v0_2 {
    #![allow(missing_docs, unreachable_pub)]

    wasmtime::component::bindgen!({
        path: "../../wit/0.2.0",
        world: "plugin",
        imports: { default: async },
        exports: { default: async },
    });
}

/// Contract 0.3.0: `tool.check`, and the desktop's accessibility interface.
pub(crate) mod v0_3 {
    #![allow(missing_docs, unreachable_pub)]

    wasmtime::component::bindgen!({
        path: "../../wit/0.3.0",
        world: "plugin",
        imports: { default: async },
        exports: { default: async },
    });
}

/// Contract 0.4.0: the `rf-library` capability; the `plugin` world is 0.3.0's.
pub(crate) mod v0_4 {
    #![allow(missing_docs, unreachable_pub)]

    wasmtime::component::bindgen!({
        path: "../../wit/0.4.0",
        world: "plugin",
        imports: { default: async },
        exports: { default: async },
    });
}

/// Contract 0.5.0: the `python` capability; the `plugin` world is 0.3.0's.
pub(crate) mod v0_5 {
    #![allow(missing_docs, unreachable_pub)]

    wasmtime::component::bindgen!({
        path: "../../wit/0.5.0",
        world: "plugin",
        imports: { default: async },
        exports: { default: async },
    });
}

use v0_1::exports::stephost::plugin::tool as tool_v0_1;
use v0_2::exports::stephost::plugin::tool as tool_v0_2;
use v0_3::exports::stephost::plugin::tool as tool_v0_3;
use v0_4::exports::stephost::plugin::tool as tool_v0_4;
use v0_5::exports::stephost::plugin::tool as tool_v0_5;

/// The version a component was built against, read from its exports: the
/// `tool` interface it exports names its contract version.
pub(crate) fn contract_of(component: &Component) -> Result<ContractVersion, String> {
    let engine = component.engine();
    let mut seen = Vec::new();
    for (name, _) in component.component_type().exports(engine) {
        if let Some(("tool", version)) = ContractVersion::split(name) {
            let version = version.unwrap_or("");
            if let Some(v) = ContractVersion::parse(version) {
                return Ok(v);
            }
            seen.push((name.to_owned(), version.to_owned()));
        }
    }
    let served = format!(
        "{}-{}",
        ContractVersion::ALL[0].as_str(),
        ContractVersion::LATEST.as_str()
    );
    Err(match seen.as_slice() {
        [] => format!(
            "exports no `stephost:plugin/tool` interface; a plugin exports `stephost:plugin/tool@<version>` for one of the contract versions this host serves ({served})"
        ),
        [(name, version), ..] => {
            let built = if version.is_empty() {
                "no version"
            } else {
                version.as_str()
            };
            let advice = if newer_than_served(version) {
                format!(
                    "a newer stephost serves it; or build the plugin against wit/{}",
                    ContractVersion::LATEST.as_str()
                )
            } else {
                format!(
                    "rebuild it against one of the served versions (new plugins target wit/{})",
                    ContractVersion::LATEST.as_str()
                )
            };
            format!(
                "built for contract {built} (it exports `{name}`); this host serves {served}: {advice}"
            )
        }
    })
}

/// Whether `version` (`MAJOR.MINOR.PATCH`) is later than the newest served.
fn newer_than_served(version: &str) -> bool {
    let parse = |text: &str| -> Option<Vec<u64>> {
        text.split(['-', '+'])
            .next()?
            .split('.')
            .map(|n| n.parse().ok())
            .collect()
    };
    match (parse(version), parse(ContractVersion::LATEST.as_str())) {
        (Some(theirs), Some(ours)) => theirs > ours,
        _ => false,
    }
}

/// A component linked and ready to instantiate, in its contract version.
pub(crate) enum PluginPre<T: 'static> {
    V0_1(v0_1::PluginPre<T>),
    V0_2(v0_2::PluginPre<T>),
    V0_3(v0_3::PluginPre<T>),
    V0_4(v0_4::PluginPre<T>),
    V0_5(v0_5::PluginPre<T>),
}

// By hand: a derive would ask for `T: Clone`, which the store data is not.
impl<T: 'static> Clone for PluginPre<T> {
    fn clone(&self) -> Self {
        match self {
            Self::V0_1(pre) => Self::V0_1(pre.clone()),
            Self::V0_2(pre) => Self::V0_2(pre.clone()),
            Self::V0_3(pre) => Self::V0_3(pre.clone()),
            Self::V0_4(pre) => Self::V0_4(pre.clone()),
            Self::V0_5(pre) => Self::V0_5(pre.clone()),
        }
    }
}

impl<T: Send + 'static> PluginPre<T> {
    /// Wraps `pre` for the component's `version`.
    pub(crate) fn new(version: ContractVersion, pre: InstancePre<T>) -> wasmtime::Result<Self> {
        match version {
            ContractVersion::V0_1 => Ok(Self::V0_1(v0_1::PluginPre::new(pre)?)),
            ContractVersion::V0_2 => Ok(Self::V0_2(v0_2::PluginPre::new(pre)?)),
            ContractVersion::V0_3 => Ok(Self::V0_3(v0_3::PluginPre::new(pre)?)),
            ContractVersion::V0_4 => Ok(Self::V0_4(v0_4::PluginPre::new(pre)?)),
            ContractVersion::V0_5 => Ok(Self::V0_5(v0_5::PluginPre::new(pre)?)),
            other => Err(wasmtime::Error::msg(format!(
                "contract version {other} has no bindings in this build"
            ))),
        }
    }

    /// Instantiates into `store`.
    pub(crate) async fn instantiate(&self, store: &mut Store<T>) -> wasmtime::Result<Plugin> {
        match self {
            Self::V0_1(pre) => pre.instantiate_async(store).await.map(Plugin::V0_1),
            Self::V0_2(pre) => pre.instantiate_async(store).await.map(Plugin::V0_2),
            Self::V0_3(pre) => pre.instantiate_async(store).await.map(Plugin::V0_3),
            Self::V0_4(pre) => pre.instantiate_async(store).await.map(Plugin::V0_4),
            Self::V0_5(pre) => pre.instantiate_async(store).await.map(Plugin::V0_5),
        }
    }
}

/// A live instance's exports, in its contract version.
pub(crate) enum Plugin {
    V0_1(v0_1::Plugin),
    V0_2(v0_2::Plugin),
    V0_3(v0_3::Plugin),
    V0_4(v0_4::Plugin),
    V0_5(v0_5::Plugin),
}

impl Plugin {
    /// Calls `describe`.
    pub(crate) async fn describe<T: Send>(
        &self,
        store: impl AsContextMut<Data = T>,
    ) -> wasmtime::Result<RawDescription> {
        // The description has the same shape in every version but for
        // `checked` (0.3.0 on); only its Rust type differs, so one expression
        // serves all.
        macro_rules! raw {
            ($info:expr, $checked:expr) => {{
                let info = $info;
                RawDescription {
                    name: info.name,
                    version: info.version,
                    description: info.description,
                    bare_tool_names: info.bare_tool_names,
                    verbs: info
                        .verbs
                        .into_iter()
                        .map(|v| RawVerb {
                            checked: $checked(&v),
                            name: v.name,
                            description: v.description,
                            input_schema: v.input_schema,
                            output_schema: v.output_schema,
                            acts_on_world: v.acts_on_world,
                        })
                        .collect(),
                }
            }};
        }
        Ok(match self {
            Self::V0_1(p) => raw!(
                p.stephost_plugin_tool().call_describe(store).await?,
                |_: &v0_1::stephost::plugin::types::VerbInfo| false
            ),
            Self::V0_2(p) => raw!(
                p.stephost_plugin_tool().call_describe(store).await?,
                |_: &v0_2::stephost::plugin::types::VerbInfo| false
            ),
            Self::V0_3(p) => raw!(
                p.stephost_plugin_tool().call_describe(store).await?,
                |v: &v0_3::stephost::plugin::types::VerbInfo| v.checked
            ),
            Self::V0_4(p) => raw!(
                p.stephost_plugin_tool().call_describe(store).await?,
                |v: &v0_4::stephost::plugin::types::VerbInfo| v.checked
            ),
            Self::V0_5(p) => raw!(
                p.stephost_plugin_tool().call_describe(store).await?,
                |v: &v0_5::stephost::plugin::types::VerbInfo| v.checked
            ),
        })
    }

    /// Calls `invoke`.
    pub(crate) async fn invoke<T: Send>(
        &self,
        store: impl AsContextMut<Data = T>,
        verb: &str,
        input: &str,
    ) -> wasmtime::Result<Result<Output, Failure>> {
        Ok(match self {
            Self::V0_1(p) => p
                .stephost_plugin_tool()
                .call_invoke(store, verb, input)
                .await?
                .map(output_v0_1)
                .map_err(failure_v0_1),
            Self::V0_2(p) => p
                .stephost_plugin_tool()
                .call_invoke(store, verb, input)
                .await?
                .map(output_v0_2)
                .map_err(failure_v0_2),
            Self::V0_3(p) => p
                .stephost_plugin_tool()
                .call_invoke(store, verb, input)
                .await?
                .map(output_v0_3)
                .map_err(failure_v0_3),
            Self::V0_4(p) => p
                .stephost_plugin_tool()
                .call_invoke(store, verb, input)
                .await?
                .map(output_v0_4)
                .map_err(failure_v0_4),
            Self::V0_5(p) => p
                .stephost_plugin_tool()
                .call_invoke(store, verb, input)
                .await?
                .map(output_v0_5)
                .map_err(failure_v0_5),
        })
    }

    /// Calls `check` (0.3.0 on). Before 0.3.0 a plugin has no check, and
    /// nothing calls this for it: its verbs are never `checked`.
    pub(crate) async fn check<T: Send>(
        &self,
        store: impl AsContextMut<Data = T>,
        verb: &str,
        input: &str,
    ) -> wasmtime::Result<Result<(), Failure>> {
        Ok(match self {
            Self::V0_1(_) | Self::V0_2(_) => Ok(()),
            Self::V0_3(p) => p
                .stephost_plugin_tool()
                .call_check(store, verb, input)
                .await?
                .map_err(failure_v0_3),
            Self::V0_4(p) => p
                .stephost_plugin_tool()
                .call_check(store, verb, input)
                .await?
                .map_err(failure_v0_4),
            Self::V0_5(p) => p
                .stephost_plugin_tool()
                .call_check(store, verb, input)
                .await?
                .map_err(failure_v0_5),
        })
    }
}

/// An output in any version (the same shape in each) as a contract output.
macro_rules! output {
    ($version:ident, $output:expr) => {{
        use $version::stephost::plugin::types::Content as C;
        let output = $output;
        Output {
            value: output.value,
            content: output
                .content
                .into_iter()
                .map(|c| match c {
                    C::Text(text) => stephost_contract::Content::Text(text),
                    C::Image(image) => stephost_contract::Content::Image {
                        mime: image.mime,
                        data: image.data,
                    },
                })
                .collect(),
        }
    }};
}

fn output_v0_1(output: tool_v0_1::Output) -> Output {
    output!(v0_1, output)
}

fn output_v0_2(output: tool_v0_2::Output) -> Output {
    output!(v0_2, output)
}

fn output_v0_3(output: tool_v0_3::Output) -> Output {
    output!(v0_3, output)
}

fn output_v0_4(output: tool_v0_4::Output) -> Output {
    output!(v0_4, output)
}

fn output_v0_5(output: tool_v0_5::Output) -> Output {
    output!(v0_5, output)
}

/// A failure's `details` text: empty is none; text that is not JSON is kept as
/// a string rather than lost.
fn details(text: String) -> Option<serde_json::Value> {
    if text.trim().is_empty() {
        None
    } else {
        Some(serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)))
    }
}

/// In 0.1.0 a proposal travels in `details` JSON; read it from there and keep
/// the details as they were sent.
fn failure_v0_1(failure: tool_v0_1::Failure) -> Failure {
    let details = details(failure.details);
    Failure {
        code: FailureCode::from_plugin(&failure.code),
        message: failure.message,
        input_fired: failure.input_fired,
        proposal: Proposal::from_details(details.as_ref()),
        details,
    }
}

/// From 0.2.0 on the code and the proposal are typed; an action's input is
/// JSON text. A strategy the engine cannot run is noted as malformed, never
/// fatal, by the same check as in 0.1.0.
macro_rules! typed_failure {
    ($version:ident, $failure:expr) => {{
        use $version::stephost::plugin::types::FailureCode as C;
        let failure = $failure;
        let code = match failure.code {
            C::InvalidInput => FailureCode::InvalidInput,
            C::NotFound => FailureCode::NotFound,
            C::WorldMoved => FailureCode::WorldMoved,
            C::Timeout => FailureCode::Timeout,
            C::Denied => FailureCode::Denied,
            C::Unsupported => FailureCode::Unsupported,
            C::Failed => FailureCode::Failed,
            C::Other(code) => FailureCode::from_plugin(&code),
        };
        let details = details(failure.details);
        let mut proposal = Proposal {
            classification: failure.classification,
            ..Proposal::default()
        };
        for (i, strategy) in failure.recovery.into_iter().enumerate() {
            let strategy = stephost_contract::Strategy {
                name: strategy.name,
                tier: strategy.tier,
                description: strategy.description,
                actions: strategy
                    .actions
                    .into_iter()
                    .map(|action| stephost_contract::Action {
                        verb: action.verb,
                        // Text that is not JSON is no object either: the check says so.
                        input: serde_json::from_str(&action.input).unwrap_or_default(),
                        description: action.description,
                    })
                    .collect(),
            };
            match strategy.check() {
                Ok(()) => proposal.strategies.push(strategy),
                Err(why) => proposal.malformed.push(format!("recovery[{i}]: {why}")),
            }
        }
        Failure {
            code,
            message: failure.message,
            input_fired: failure.input_fired,
            details,
            proposal,
        }
    }};
}

fn failure_v0_2(failure: tool_v0_2::Failure) -> Failure {
    typed_failure!(v0_2, failure)
}

fn failure_v0_3(failure: tool_v0_3::Failure) -> Failure {
    typed_failure!(v0_3, failure)
}

fn failure_v0_4(failure: tool_v0_4::Failure) -> Failure {
    typed_failure!(v0_4, failure)
}

fn failure_v0_5(failure: tool_v0_5::Failure) -> Failure {
    typed_failure!(v0_5, failure)
}

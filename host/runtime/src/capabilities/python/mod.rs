//! The `python` capability (0.5.0 on): Python expressions evaluated by real
//! CPython, as Robot Framework's `Evaluate` evaluates them.
//!
//! The evaluator is a component of its own (`host/runtime/python/`, CPython and
//! Robot Framework built by componentize-py), embedded in the host. It is
//! compiled once per process, in the background from start-up (about 7 s cold;
//! the compile cache makes later starts map it instead), and instantiated once
//! per plugin instance on that instance's first call, so one session's
//! interpreter (its imported modules, a changed `builtins`) is never another's.
//!
//! The interpreter runs in a store of its own: no preopened folders, no
//! network, no environment, the calling instance's memory limit, and the
//! calling step's deadline and cancellation checked on every epoch tick. A trap
//! (out of time or memory) drops that interpreter; the next call starts a fresh
//! one. The plugin's own store is not involved, so a runaway expression costs
//! the step, never the instance.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;
use wasmtime::component::{Component, HasSelf, InstancePre, Linker, ResourceTable, TypedFunc};
use wasmtime::{Engine, Store, Trap};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::capabilities::{HostState, MemoryLimiter, StderrTail};
use crate::engine::CompileCache;
use crate::instance::on_epoch_tick;
use crate::pool::{Footprint, SlotCharge};

/// Host-side bindings (world `python-capability`), from 0.5.0 on.
pub(crate) mod bindings {
    #![allow(missing_docs, unreachable_pub)]

    /// Contract 0.5.0.
    pub(crate) mod v0_5 {
        wasmtime::component::bindgen!({
            path: "../../wit/0.5.0",
            world: "python-capability",
            imports: { default: async },
        });
    }
}

/// Longest answer passed back to a plugin: values bigger than this are not
/// what an inline expression is for, and the plugin would have to hold them.
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// Longest request (expression plus encoded values) accepted from a plugin.
const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;
/// Fuel for one evaluation. Time is the real bound (the step's deadline); fuel
/// only has to be set because the engine meters every store.
const FUEL_PER_CALL: u64 = u64::MAX / 4;

/// `evaluate(expression, variables, namespace, modules)` of the evaluator world.
type EvaluateFn = TypedFunc<(String, String, String, String), (Result<String, String>,)>;

/// The evaluator, compiled and linked: one per process, shared by every
/// instance.
struct Evaluator {
    pre: InstancePre<EvalState>,
}

/// The host-wide service: where the evaluator's bytes are and, once compiled,
/// the evaluator itself.
pub(crate) struct PythonService {
    bytes: Option<&'static [u8]>,
    digest: &'static str,
    engine: Engine,
    cache: Option<CompileCache>,
    evaluator: OnceCell<Result<Arc<Evaluator>, String>>,
    /// What one interpreter takes from the instance pool, read once.
    footprint: std::sync::OnceLock<Option<Footprint>>,
}

impl PythonService {
    /// The service for `component` (the embedded component and its SHA-256;
    /// `None` for a host built without it), compiled with `engine` through `cache`.
    pub(crate) fn new(
        component: Option<(&'static [u8], &'static str)>,
        engine: &Engine,
        cache: Option<CompileCache>,
    ) -> Self {
        Self {
            bytes: component.map(|(bytes, _)| bytes),
            digest: component.map_or("", |(_, digest)| digest),
            engine: engine.clone(),
            cache,
            evaluator: OnceCell::new(),
            footprint: std::sync::OnceLock::new(),
        }
    }

    /// What one interpreter takes from the instance pool; `None` for a host
    /// built without the evaluator.
    pub(crate) fn footprint(&self) -> Option<Footprint> {
        *self
            .footprint
            .get_or_init(|| self.bytes.map(Footprint::of_component))
    }

    /// Starts compiling in the background, so the first expression does not
    /// wait for it. Only with a compile cache: without one every start would
    /// spend seconds compiling for expressions that may never come.
    pub(crate) fn warm(self: &Arc<Self>) {
        if self.bytes.is_none() || self.cache.is_none() {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            if let Err(error) = this.evaluator().await {
                tracing::warn!(%error, "the Python evaluator is unavailable");
            }
        });
    }

    async fn evaluator(&self) -> Result<Arc<Evaluator>, String> {
        self.evaluator
            .get_or_init(|| async {
                let Some(bytes) = self.bytes else {
                    return Err("this host was built without the Python evaluator \
                                (STEPHOST_NO_PYTHON_EVALUATOR)"
                        .to_string());
                };
                let engine = self.engine.clone();
                let cache = self.cache.clone();
                let digest = self.digest;
                let started = Instant::now();
                let compiled =
                    tokio::task::spawn_blocking(move || compile(&engine, cache, bytes, digest))
                        .await
                        .map_err(|e| format!("the evaluator's compile task failed: {e}"))?;
                match &compiled {
                    Ok(_) => tracing::info!(
                        ms = started.elapsed().as_millis() as u64,
                        "Python evaluator ready"
                    ),
                    Err(error) => tracing::error!(%error, "the Python evaluator did not compile"),
                }
                compiled.map(Arc::new)
            })
            .await
            .clone()
    }
}

/// One compile at a time per process: runtimes that start together (a test
/// binary's) then compile once and map the cached result, instead of each
/// spending seconds of every core on the same work.
static COMPILING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn compile(
    engine: &Engine,
    cache: Option<CompileCache>,
    bytes: &[u8],
    digest: &str,
) -> Result<Evaluator, String> {
    let _one = COMPILING.lock().unwrap_or_else(|e| e.into_inner());
    let component = match cache {
        Some(cache) => cache.load(engine, bytes, digest),
        None => Component::new(engine, bytes),
    }
    .map_err(|e| format!("the evaluator does not compile: {e:#}"))?;
    let mut linker: Linker<EvalState> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)
        .map_err(|e| format!("cannot link WASI for the evaluator: {e:#}"))?;
    let pre = linker
        .instantiate_pre(&component)
        .map_err(|e| format!("the evaluator does not link: {e:#}"))?;
    Ok(Evaluator { pre })
}

/// What an interpreter's store carries.
struct EvalState {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: MemoryLimiter,
    deadline: Instant,
    cancel: CancellationToken,
    stderr: StderrTail,
}

impl WasiView for EvalState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// One instance's interpreter.
pub(crate) struct Interpreter {
    store: Store<EvalState>,
    evaluate: EvaluateFn,
    /// The pool slots it holds, charged to its instance's tenant and given
    /// back when it drops (after its store, declared above).
    _charge: Option<SlotCharge>,
}

/// The interpreter of one plugin instance, started on its first call.
#[derive(Default)]
pub(crate) struct InstancePython {
    interpreter: Option<Interpreter>,
    /// Interpreters started over the instance's life: each costs an
    /// instantiation and memory, so an expression that kills its interpreter
    /// every time cannot make a session start them without end.
    started: usize,
}

/// Most interpreters one instance may start.
const MAX_STARTS_PER_INSTANCE: usize = 32;

/// Why an evaluation gave no value, before it becomes the WIT variant.
enum Refusal {
    Failed(String),
    Unavailable(String),
    NoEvaluator(String),
}

impl Interpreter {
    async fn start(
        evaluator: &Evaluator,
        memory_bytes: u64,
        deadline: Instant,
        cancel: CancellationToken,
        charge: Option<SlotCharge>,
    ) -> Result<Self, String> {
        let stderr = StderrTail::new(4 * 1024);
        let wasi = WasiCtxBuilder::new()
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .stderr(stderr.clone())
            .build();
        let state = EvalState {
            wasi,
            table: ResourceTable::new(),
            limiter: MemoryLimiter::new(memory_bytes),
            deadline,
            cancel,
            stderr,
        };
        let mut store = Store::new(evaluator.pre.engine(), state);
        store.limiter(|state| &mut state.limiter);
        store.epoch_deadline_callback(|ctx| {
            let state = ctx.data();
            Ok(on_epoch_tick(&state.cancel, state.deadline))
        });
        arm(&mut store);
        let instance = evaluator
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| fault(&store, &e, "starting the evaluator"))?;
        let evaluate = instance
            .get_typed_func(&mut store, "evaluate")
            .map_err(|e| format!("the evaluator exports no usable `evaluate`: {e:#}"))?;
        Ok(Self {
            store,
            evaluate,
            _charge: charge,
        })
    }

    async fn call(
        &mut self,
        request: (String, String, String, String),
        deadline: Instant,
        cancel: CancellationToken,
    ) -> Result<String, Refusal> {
        let state = self.store.data_mut();
        state.deadline = deadline;
        state.cancel = cancel;
        state.limiter.denied = None;
        arm(&mut self.store);
        match self.evaluate.call_async(&mut self.store, request).await {
            Ok((Ok(answer),)) => Ok(answer),
            Ok((Err(message),)) => Err(Refusal::Failed(message)),
            Err(error) => Err(Refusal::Unavailable(fault(
                &self.store,
                &error,
                "evaluating",
            ))),
        }
    }
}

fn arm(store: &mut Store<EvalState>) {
    // Fuel is only off when consumption is disabled, which the engine never does.
    let _ = store.set_fuel(FUEL_PER_CALL);
    store.set_epoch_deadline(1);
}

/// What stopped the interpreter, in words for the step's error.
fn fault(store: &Store<EvalState>, error: &wasmtime::Error, doing: &str) -> String {
    let state = store.data();
    if let Some(asked) = state.limiter.denied {
        return format!(
            "the Python evaluator ran out of memory {doing} (limit {} MiB, asked for {} MiB)",
            state.limiter.max_bytes() / (1024 * 1024),
            asked.div_ceil(1024 * 1024)
        );
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) if state.cancel.is_cancelled() => {
            format!("the step was cancelled while {doing}")
        }
        Some(Trap::Interrupt) => format!("the step's time ran out while {doing}"),
        _ => {
            let stderr = state.stderr.text();
            let tail = stderr.lines().rev().take(4).collect::<Vec<_>>();
            let tail = tail.into_iter().rev().collect::<Vec<_>>().join(" | ");
            if tail.is_empty() {
                format!("the Python evaluator crashed {doing}: {error:#}")
            } else {
                format!("the Python evaluator crashed {doing}: {error:#}; its stderr: {tail}")
            }
        }
    }
}

/// Evaluates for `state`'s instance: its interpreter (started if need be),
/// held to the step in progress.
async fn evaluate(
    state: &mut HostState,
    request: (String, String, String, String),
) -> Result<String, Refusal> {
    let size = request.0.len() + request.1.len() + request.2.len() + request.3.len();
    if size > MAX_REQUEST_BYTES {
        return Err(Refusal::Unavailable(format!(
            "the expression and its values take {size} bytes, more than the {MAX_REQUEST_BYTES} the evaluator accepts"
        )));
    }
    let evaluator = state.services.python.evaluator().await.map_err(|why| {
        if state.services.python.bytes.is_none() {
            Refusal::NoEvaluator(why)
        } else {
            Refusal::Unavailable(why)
        }
    })?;
    // The interpreter stops a little before the step does, so that a runaway
    // expression fails its step and the plugin, which answers in the time left,
    // keeps its instance and the session's variables. Only the interpreter (and
    // the objects it held) starts again.
    let deadline = cut_short(state.deadline);
    // Taken out for the call: if the step's timeout drops this future mid-call,
    // the interpreter goes with it instead of staying behind half-run.
    let mut interpreter = match state.python.interpreter.take() {
        Some(interpreter) => interpreter,
        None => {
            if state.python.started >= MAX_STARTS_PER_INSTANCE {
                return Err(Refusal::Unavailable(format!(
                    "this session has started the Python evaluator {MAX_STARTS_PER_INSTANCE} times, the most one session may; each earlier one ran out of time or memory"
                )));
            }
            // The interpreter's slots are the tenant's, like its instance's;
            // at the share the step is `busy` (see `PluginInstance::invoke`)
            // and counts as no start.
            let charge = match (&state.pool_share, state.services.python.footprint()) {
                (Some(share), Some(footprint)) => {
                    let what = format!(
                        "the Python evaluator of this session's `{}` instance",
                        state.plugin
                    );
                    match share.charge(footprint, &what) {
                        Ok(charge) => Some(charge),
                        Err(refused) => {
                            let why = refused.to_string();
                            state.pool_refused = Some(refused);
                            return Err(Refusal::Unavailable(why));
                        }
                    }
                }
                _ => None,
            };
            state.python.started += 1;
            let started = Interpreter::start(
                &evaluator,
                state.limiter.max_bytes(),
                deadline,
                state.cancel.clone(),
                charge,
            )
            .await;
            match started {
                Ok(interpreter) => interpreter,
                Err(why) => {
                    note_time(state, deadline);
                    return Err(Refusal::Unavailable(why));
                }
            }
        }
    };
    let answer = interpreter
        .call(request, deadline, state.cancel.clone())
        .await;
    match &answer {
        Err(Refusal::Unavailable(why)) => {
            note_time(state, deadline);
            tracing::info!(plugin = &*state.plugin, %why, "a Python interpreter was dropped");
        }
        _ => state.python.interpreter = Some(interpreter),
    }
    let answer = answer?;
    if answer.len() > MAX_ANSWER_BYTES {
        return Err(Refusal::Unavailable(format!(
            "the expression's value takes {} bytes as JSON, more than the {MAX_ANSWER_BYTES} an expression may return",
            answer.len()
        )));
    }
    Ok(answer)
}

/// Most of a step's remaining time kept back from the interpreter for the
/// plugin to answer in.
const ANSWER_TIME: Duration = Duration::from_millis(100);

/// The interpreter's deadline for a step due at `deadline`: a fifth of the time
/// left, at most [`ANSWER_TIME`], earlier.
fn cut_short(deadline: Instant) -> Instant {
    let left = deadline.saturating_duration_since(Instant::now());
    deadline - (left / 5).min(ANSWER_TIME)
}

/// Marks the call as out of time when the interpreter was stopped by its
/// deadline (not by cancellation or a crash).
fn note_time(state: &mut HostState, deadline: Instant) {
    if Instant::now() >= deadline && !state.cancel.is_cancelled() {
        state.time_ran_out = true;
    }
}

/// The evaluator's answer split into the record's fields.
struct Answer {
    value: String,
    truthy: bool,
    changed: String,
}

fn split(answer: &str) -> Result<Answer, Refusal> {
    #[derive(serde::Deserialize)]
    struct Raw<'a> {
        #[serde(borrow)]
        value: &'a serde_json::value::RawValue,
        truthy: bool,
        #[serde(borrow)]
        changed: &'a serde_json::value::RawValue,
    }
    let raw: Raw<'_> = serde_json::from_str(answer).map_err(|e| {
        Refusal::Unavailable(format!(
            "the evaluator's answer is not what it should be: {e}"
        ))
    })?;
    Ok(Answer {
        value: raw.value.get().to_string(),
        truthy: raw.truthy,
        changed: raw.changed.get().to_string(),
    })
}

/// Links `stephost:plugin/python` for a component of `contract` (0.5.0 on).
pub(crate) fn add_to_linker(
    linker: &mut Linker<HostState>,
    contract: stephost_contract::ContractVersion,
) -> wasmtime::Result<()> {
    use stephost_contract::ContractVersion as V;
    match contract {
        V::V0_1 | V::V0_2 | V::V0_3 | V::V0_4 => Ok(()),
        V::V0_5 => {
            bindings::v0_5::PythonCapability::add_to_linker::<HostState, HasSelf<HostState>>(
                linker,
                |s| s,
            )
        }
        other => Err(wasmtime::Error::msg(format!(
            "contract version {other} has no host interfaces in this build"
        ))),
    }
}

/// Whether `name` (unversioned) is the python interface.
pub(crate) fn is_python_import(name: &str) -> bool {
    name == "stephost:plugin/python"
}

mod v0_5 {
    use super::bindings::v0_5::stephost::plugin::python::{Evaluation, EvaluationError, Host};
    use super::{HostState, Refusal, evaluate, split};

    impl Host for HostState {
        async fn evaluate(
            &mut self,
            expression: String,
            variables: String,
            namespace: String,
            modules: String,
        ) -> Result<Evaluation, EvaluationError> {
            let answer = evaluate(self, (expression, variables, namespace, modules))
                .await
                .and_then(|answer| split(&answer));
            match answer {
                Ok(a) => Ok(Evaluation {
                    value: a.value,
                    truthy: a.truthy,
                    changed: a.changed,
                }),
                Err(Refusal::Failed(message)) => Err(EvaluationError::Failed(message)),
                Err(Refusal::Unavailable(why)) => Err(EvaluationError::Unavailable(why)),
                Err(Refusal::NoEvaluator(why)) => Err(EvaluationError::NoEvaluator(why)),
            }
        }
    }
}

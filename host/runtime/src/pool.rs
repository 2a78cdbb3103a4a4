//! The instance pool every tenant shares, counted in the pool's own units, and
//! each tenant's share of it.
//!
//! The pooling allocator (`engine/mod.rs`) has four totals an instance draws
//! on: component instances, core instances, linear memories and tables. A
//! Rust plugin takes one component instance and a few core instances; the
//! CPython evaluator one component instance and many core instances, so
//! counting component instances alone let one tenant's interpreters drain the
//! core instances every tenant needs. `engine.max_instances` counts *slots*:
//! each slot adds [`Footprint::SLOT`] to every total, and an instance is
//! charged the slots its most demanding total needs. Charges that add up to at
//! most `engine.max_instances` therefore never exhaust any total, which is what
//! lets each tenant have a share of its own.

use std::sync::{Arc, Mutex, OnceLock};

use wasmparser::{
    CanonicalFunction, ComponentAlias, ComponentExternalKind, ComponentInstance,
    ComponentOuterAliasKind, ComponentTypeRef, Instance, Parser, Payload,
};

/// What instances take from the pool (or what the pool holds), in the pool's
/// own units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Component instances.
    pub component_instances: u32,
    /// Core module instances, the component's own and its adapters'.
    pub core_instances: u32,
    /// Linear memories the instance defines (imported ones are someone else's).
    pub memories: u32,
    /// Tables the instance defines.
    pub tables: u32,
    /// Async fiber stacks: a store keeps the one its calls run on (wasmtime
    /// caches it between calls) until it drops, so one per store.
    pub stacks: u32,
}

impl Footprint {
    /// What one pool slot (one unit of `engine.max_instances`) adds to each of
    /// the pool's totals. A Rust wasip2 component fits in one: its main
    /// module and wit-component's shim and fixup modules, one memory, one store.
    pub const SLOT: Footprint = Footprint {
        component_instances: 1,
        core_instances: 4,
        memories: 2,
        tables: 4,
        stacks: 1,
    };

    /// The most one component instance may take: the pool's per-component
    /// caps, so also the charge of a component whose needs cannot be read.
    pub const MOST: Footprint = Footprint {
        component_instances: 1,
        core_instances: 32,
        memories: 4,
        tables: 8,
        stacks: 1,
    };

    /// The pool's totals for `slots` slots.
    pub fn of_slots(slots: u32) -> Footprint {
        let s = Self::SLOT;
        Footprint {
            component_instances: slots.saturating_mul(s.component_instances),
            core_instances: slots.saturating_mul(s.core_instances),
            memories: slots.saturating_mul(s.memories),
            tables: slots.saturating_mul(s.tables),
            stacks: slots.saturating_mul(s.stacks),
        }
    }

    /// The slots this takes: those its most demanding total needs, at least one.
    pub fn slots(&self) -> u32 {
        let s = Self::SLOT;
        [
            self.component_instances.div_ceil(s.component_instances),
            self.core_instances.div_ceil(s.core_instances),
            self.memories.div_ceil(s.memories),
            self.tables.div_ceil(s.tables),
            self.stacks.div_ceil(s.stacks),
        ]
        .into_iter()
        .max()
        .unwrap_or(1)
        .max(1)
    }

    /// What one instance of the component in `bytes` takes from the pool, read
    /// from its sections the way wasmtime instantiates it: every core module
    /// instantiation (through nested components too) takes a core instance and
    /// the memories and tables that module defines. A function lowered from
    /// another component's lifted one (nested components) is counted as one
    /// more core instance, for the adapter wasmtime fuses there (an upper
    /// bound). A component whose needs cannot be read (it imports modules or
    /// components) is charged [`Footprint::MOST`].
    pub fn of_component(bytes: &[u8]) -> Footprint {
        match scan(bytes) {
            Ok(Some(need)) => need.capped(),
            Ok(None) => Self::MOST,
            Err(error) => {
                tracing::warn!(%error, "cannot read a component's pool needs; charging the most one may take");
                Self::MOST
            }
        }
    }

    fn capped(self) -> Footprint {
        let m = Self::MOST;
        Footprint {
            component_instances: self.component_instances.min(m.component_instances),
            core_instances: self.core_instances.min(m.core_instances),
            memories: self.memories.min(m.memories),
            tables: self.tables.min(m.tables),
            stacks: self.stacks.min(m.stacks),
        }
    }

    fn add(&mut self, other: &Footprint) {
        self.component_instances += other.component_instances;
        self.core_instances += other.core_instances;
        self.memories += other.memories;
        self.tables += other.tables;
        self.stacks += other.stacks;
    }
}

impl std::fmt::Display for Footprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} component instance(s), {} core instance(s), {} memor{}, {} table(s), {} stack(s)",
            self.component_instances,
            self.core_instances,
            self.memories,
            if self.memories == 1 { "y" } else { "ies" },
            self.tables,
            self.stacks
        )
    }
}

/// A core module as far as the pool cares: what one instantiation defines.
#[derive(Debug, Clone, Copy, Default)]
struct ModuleNeed {
    memories: u32,
    tables: u32,
}

/// What instantiating a component once takes. Core instances include one per
/// lowered function that may be another component's lifted one: wasmtime
/// fuses such a pair with an adapter module of its own (an upper bound; the
/// host's own functions, lowered, need none).
#[derive(Debug, Clone, Copy, Default)]
struct ComponentNeed {
    need: Footprint,
    adapters: u32,
}

/// Where a component function (or instance) comes from: the host, or
/// possibly a component's own lifted function, which needs an adapter where
/// it is lowered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Host,
    Lifted,
}

/// One component being read: its index spaces as far as they matter here
/// (`None` is an item whose needs cannot be known, such as an import).
struct ComponentScan {
    modules: Vec<Option<ModuleNeed>>,
    components: Vec<Option<ComponentNeed>>,
    funcs: Vec<Origin>,
    instances: Vec<Origin>,
    /// Where this component's imported functions come from: the host for
    /// the outermost, anything for a nested one.
    imports: Origin,
    total: ComponentNeed,
    unknown: bool,
}

impl ComponentScan {
    fn new(imports: Origin) -> Self {
        Self {
            modules: Vec::new(),
            components: Vec::new(),
            funcs: Vec::new(),
            instances: Vec::new(),
            imports,
            total: ComponentNeed::default(),
            unknown: false,
        }
    }

    fn origin(list: &[Origin], index: u32) -> Origin {
        list.get(index as usize).copied().unwrap_or(Origin::Lifted)
    }
}

enum Frame {
    Module(ModuleNeed),
    Component(ComponentScan),
}

/// Reads `bytes`; `None` when some need cannot be known statically.
fn scan(bytes: &[u8]) -> Result<Option<Footprint>, wasmparser::BinaryReaderError> {
    let mut stack: Vec<Frame> = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        match payload? {
            Payload::Version { .. } if stack.is_empty() => {
                stack.push(Frame::Component(ComponentScan::new(Origin::Host)));
            }
            Payload::ModuleSection { .. } => stack.push(Frame::Module(ModuleNeed::default())),
            Payload::ComponentSection { .. } => {
                stack.push(Frame::Component(ComponentScan::new(Origin::Lifted)));
            }
            Payload::MemorySection(reader) => {
                if let Some(Frame::Module(m)) = stack.last_mut() {
                    m.memories += reader.count();
                }
            }
            Payload::TableSection(reader) => {
                if let Some(Frame::Module(m)) = stack.last_mut() {
                    m.tables += reader.count();
                }
            }
            Payload::ComponentImportSection(reader) => {
                let Some(Frame::Component(c)) = stack.last_mut() else {
                    continue;
                };
                for import in reader {
                    match import?.ty {
                        ComponentTypeRef::Module(_) => c.modules.push(None),
                        ComponentTypeRef::Component(_) => c.components.push(None),
                        ComponentTypeRef::Func(_) => c.funcs.push(c.imports),
                        ComponentTypeRef::Instance(_) => c.instances.push(c.imports),
                        _ => {}
                    }
                }
            }
            Payload::ComponentAliasSection(reader) => {
                for alias in reader {
                    let alias = alias?;
                    // An outer module is read before the current frame is
                    // borrowed; an outer component's needs are not kept here:
                    // it counts as unknown, which charges the most.
                    let outer_module = match alias {
                        ComponentAlias::Outer {
                            kind: ComponentOuterAliasKind::CoreModule,
                            count,
                            index,
                        } => match stack
                            .len()
                            .checked_sub(1 + count as usize)
                            .and_then(|depth| stack.get(depth))
                        {
                            Some(Frame::Component(o)) => {
                                o.modules.get(index as usize).copied().flatten()
                            }
                            _ => None,
                        },
                        _ => None,
                    };
                    let Some(Frame::Component(c)) = stack.last_mut() else {
                        continue;
                    };
                    match alias {
                        ComponentAlias::InstanceExport {
                            kind,
                            instance_index,
                            ..
                        } => {
                            let origin = ComponentScan::origin(&c.instances, instance_index);
                            match kind {
                                ComponentExternalKind::Module => c.modules.push(None),
                                ComponentExternalKind::Component => c.components.push(None),
                                ComponentExternalKind::Func => c.funcs.push(origin),
                                ComponentExternalKind::Instance => c.instances.push(origin),
                                _ => {}
                            }
                        }
                        ComponentAlias::Outer {
                            kind: ComponentOuterAliasKind::CoreModule,
                            ..
                        } => c.modules.push(outer_module),
                        ComponentAlias::Outer {
                            kind: ComponentOuterAliasKind::Component,
                            ..
                        } => c.components.push(None),
                        _ => {}
                    }
                }
            }
            Payload::InstanceSection(reader) => {
                let Some(Frame::Component(c)) = stack.last_mut() else {
                    continue;
                };
                for instance in reader {
                    if let Instance::Instantiate { module_index, .. } = instance? {
                        match c.modules.get(module_index as usize).copied().flatten() {
                            Some(m) => c.total.need.add(&Footprint {
                                component_instances: 0,
                                core_instances: 1,
                                memories: m.memories,
                                tables: m.tables,
                                stacks: 0,
                            }),
                            None => c.unknown = true,
                        }
                    }
                }
            }
            Payload::ComponentInstanceSection(reader) => {
                let Some(Frame::Component(c)) = stack.last_mut() else {
                    continue;
                };
                for instance in reader {
                    if let ComponentInstance::Instantiate {
                        component_index, ..
                    } = instance?
                    {
                        match c
                            .components
                            .get(component_index as usize)
                            .copied()
                            .flatten()
                        {
                            Some(n) => {
                                c.total.need.add(&n.need);
                                c.total.adapters += n.adapters;
                            }
                            None => c.unknown = true,
                        }
                    }
                    c.instances.push(Origin::Lifted);
                }
            }
            Payload::ComponentCanonicalSection(reader) => {
                let Some(Frame::Component(c)) = stack.last_mut() else {
                    continue;
                };
                for function in reader {
                    match function? {
                        CanonicalFunction::Lift { .. } => c.funcs.push(Origin::Lifted),
                        CanonicalFunction::Lower { func_index, .. }
                            if ComponentScan::origin(&c.funcs, func_index) == Origin::Lifted =>
                        {
                            c.total.adapters += 1;
                        }
                        _ => {}
                    }
                }
            }
            Payload::ComponentExportSection(reader) => {
                // An export is a new index of its kind.
                let Some(Frame::Component(c)) = stack.last_mut() else {
                    continue;
                };
                for export in reader {
                    let export = export?;
                    match export.kind {
                        ComponentExternalKind::Module => {
                            let m = c.modules.get(export.index as usize).copied().flatten();
                            c.modules.push(m);
                        }
                        ComponentExternalKind::Component => {
                            let n = c.components.get(export.index as usize).copied().flatten();
                            c.components.push(n);
                        }
                        ComponentExternalKind::Func => {
                            c.funcs.push(ComponentScan::origin(&c.funcs, export.index));
                        }
                        ComponentExternalKind::Instance => {
                            let origin = ComponentScan::origin(&c.instances, export.index);
                            c.instances.push(origin);
                        }
                        _ => {}
                    }
                }
            }
            Payload::End(_) => match stack.pop() {
                Some(Frame::Module(m)) => {
                    if let Some(Frame::Component(parent)) = stack.last_mut() {
                        parent.modules.push(Some(m));
                    }
                }
                Some(Frame::Component(done)) => {
                    let need = (!done.unknown).then_some(done.total);
                    match stack.last_mut() {
                        Some(Frame::Component(parent)) => parent.components.push(need),
                        Some(Frame::Module(_)) => return Ok(None),
                        None => {
                            return Ok(need.map(|n| Footprint {
                                component_instances: 1,
                                core_instances: n.need.core_instances + n.adapters,
                                memories: n.need.memories,
                                tables: n.need.tables,
                                stacks: 1,
                            }));
                        }
                    }
                }
                None => return Ok(None),
            },
            _ => {}
        }
    }
    Ok(None)
}

/// One tenant's share of the pool: the slots its sessions' instances (and
/// their Python evaluators) may hold at once.
pub struct PoolShare {
    tenant: String,
    limit: u32,
    key: &'static str,
    frees: String,
    in_use: Mutex<u32>,
    /// Frees slots the tenant holds but does not use (one of its idle
    /// sessions); whether anything went. Set once by whoever keeps the sessions.
    reclaim: OnceLock<Box<dyn Fn() -> bool + Send + Sync>>,
}

impl std::fmt::Debug for PoolShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolShare")
            .field("tenant", &self.tenant)
            .field("limit", &self.limit)
            .field("key", &self.key)
            .field("in_use", &self.in_use())
            .finish_non_exhaustive()
    }
}

impl PoolShare {
    /// A share of `limit` slots for `tenant`; `key` is the config key that set
    /// it and `frees` says, for the error at the share, what gives slots back.
    pub fn new(tenant: &str, limit: u32, key: &'static str, frees: impl Into<String>) -> Arc<Self> {
        Arc::new(Self {
            tenant: tenant.to_owned(),
            limit,
            key,
            frees: frees.into(),
            in_use: Mutex::new(0),
            reclaim: OnceLock::new(),
        })
    }

    /// Sets what frees the tenant's unused slots when it is at its share
    /// (once; later calls are ignored).
    pub fn set_reclaim(&self, reclaim: impl Fn() -> bool + Send + Sync + 'static) {
        let _ = self.reclaim.set(Box::new(reclaim));
    }

    /// The tenant.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Slots the tenant may hold.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// The config key that set [`PoolShare::limit`].
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// Slots held now.
    pub fn in_use(&self) -> u32 {
        *self.in_use.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the slots `footprint` needs for `what` (words for the error:
    /// "an instance of `rf`"), freeing the tenant's own idle sessions first
    /// when it is at its share. The slots come back when the charge drops.
    pub(crate) fn charge(
        self: &Arc<Self>,
        footprint: Footprint,
        what: &str,
    ) -> Result<SlotCharge, ShareFull> {
        let needed = footprint.slots();
        let refused = |in_use| ShareFull {
            tenant: self.tenant.clone(),
            limit: self.limit,
            key: self.key,
            in_use,
            needed,
            what: what.to_owned(),
            frees: self.frees.clone(),
        };
        if needed > self.limit {
            return Err(refused(self.in_use()));
        }
        loop {
            let in_use = {
                let mut in_use = self.in_use.lock().unwrap_or_else(|e| e.into_inner());
                if *in_use + needed <= self.limit {
                    *in_use += needed;
                    return Ok(SlotCharge {
                        share: self.clone(),
                        slots: needed,
                    });
                }
                *in_use
            };
            // Not under the lock: what the reclaim drops gives its slots back
            // through this share.
            let freed = self.reclaim.get().is_some_and(|reclaim| reclaim());
            if !freed {
                tracing::info!(
                    tenant = %self.tenant,
                    in_use,
                    needed,
                    limit = self.limit,
                    "tenant at its share of the instance pool"
                );
                return Err(refused(in_use));
            }
        }
    }

    fn release(&self, slots: u32) {
        let mut in_use = self.in_use.lock().unwrap_or_else(|e| e.into_inner());
        *in_use = in_use.saturating_sub(slots);
    }
}

/// Slots held for one live instance; given back when dropped, so no path
/// (a trap, a timeout, a reaped or drained session) can keep them.
pub(crate) struct SlotCharge {
    share: Arc<PoolShare>,
    slots: u32,
}

impl Drop for SlotCharge {
    fn drop(&mut self) {
        self.share.release(self.slots);
    }
}

/// A tenant at its share of the instance pool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct ShareFull {
    /// The tenant.
    pub tenant: String,
    /// Its share, in slots.
    pub limit: u32,
    /// The config key that set the share.
    pub key: &'static str,
    /// Slots it held when refused.
    pub in_use: u32,
    /// Slots the refused instance needs.
    pub needed: u32,
    /// What needed them.
    pub what: String,
    frees: String,
}

impl ShareFull {
    fn describe(&self) -> String {
        if self.needed > self.limit {
            format!(
                "{} needs {} instance-pool slots, more than tenant `{}`'s whole share ({} = {}); the operator must raise {}",
                self.what, self.needed, self.tenant, self.key, self.limit, self.key
            )
        } else {
            format!(
                "tenant `{}` holds {} of its {} instance-pool slots ({} = {}) and {} needs {} more; {}",
                self.tenant,
                self.in_use,
                self.limit,
                self.key,
                self.limit,
                self.what,
                self.needed,
                self.frees
            )
        }
    }
}

/// What the pool holds in use now, read from the allocator itself.
pub(crate) fn in_use(engine: &wasmtime::Engine) -> Footprint {
    let Some(metrics) = engine.pooling_allocator_metrics() else {
        return Footprint::default();
    };
    let clamp = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    Footprint {
        component_instances: clamp(metrics.component_instances()),
        core_instances: clamp(metrics.core_instances()),
        memories: clamp(metrics.memories() as u64),
        tables: clamp(metrics.tables() as u64),
        stacks: clamp(metrics.stacks() as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_most_demanding_total() {
        assert_eq!(Footprint::default().slots(), 1);
        let rust = Footprint {
            component_instances: 1,
            core_instances: 4,
            memories: 1,
            tables: 2,
            stacks: 1,
        };
        assert_eq!(rust.slots(), 1);
        let python = Footprint {
            component_instances: 1,
            core_instances: 13,
            memories: 1,
            tables: 3,
            stacks: 1,
        };
        assert_eq!(python.slots(), 4);
        assert_eq!(Footprint::MOST.slots(), 8);
        assert_eq!(Footprint::of_slots(3).core_instances, 12);
        assert_eq!(Footprint::of_slots(3).stacks, 3);
    }

    #[test]
    fn a_share_refuses_past_its_limit_and_gets_slots_back_on_drop() {
        let share = PoolShare::new("a", 5, "limits.max_instances", "end a session");
        let python = Footprint {
            component_instances: 1,
            core_instances: 13,
            memories: 1,
            tables: 1,
            stacks: 1,
        };
        let first = share.charge(python, "an evaluator").expect("4 of 5");
        let one = share
            .charge(Footprint::default(), "an instance")
            .expect("5 of 5");
        let err = share
            .charge(Footprint::default(), "an instance of `rf`")
            .err()
            .expect("at the share");
        let text = err.to_string();
        assert!(text.contains("holds 5 of its 5"), "{text}");
        assert!(text.contains("limits.max_instances = 5"), "{text}");
        assert!(text.contains("end a session"), "{text}");
        drop(first);
        assert_eq!(share.in_use(), 1);
        let _again = share.charge(python, "an evaluator").expect("room again");
        drop(one);
        let err = share
            .charge(Footprint::MOST, "a big one")
            .err()
            .expect("more than the share");
        assert!(
            err.to_string()
                .contains("more than tenant `a`'s whole share"),
            "{err}"
        );
    }

    #[test]
    fn at_its_share_a_tenant_first_frees_its_own_idle_slots() {
        let share = PoolShare::new("a", 2, "k", "");
        let held = Arc::new(Mutex::new(vec![
            share.charge(Footprint::default(), "x").expect("1"),
            share.charge(Footprint::default(), "x").expect("2"),
        ]));
        share.set_reclaim({
            let held = held.clone();
            move || held.lock().expect("lock").pop().is_some()
        });
        let _third = share
            .charge(Footprint::default(), "x")
            .expect("an idle one made room");
        let _fourth = share.charge(Footprint::default(), "x").expect("another");
        assert!(
            share.charge(Footprint::default(), "x").is_err(),
            "nothing left to free"
        );
        assert_eq!(share.in_use(), 2);
    }
}

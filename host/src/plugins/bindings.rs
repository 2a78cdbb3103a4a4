//! Host-side bindings generated from `wit/` (world `plugin`).

#![allow(missing_docs, unreachable_pub)]

wasmtime::component::bindgen!({
    path: "../wit",
    world: "plugin",
    imports: { default: async },
    exports: { default: async },
});

//! Host-side bindings of the desktop interfaces (world `desktop-capabilities`
//! in `wit/desktop.wit`).

#![allow(missing_docs, unreachable_pub)]

wasmtime::component::bindgen!({
    path: "../wit",
    world: "desktop-capabilities",
    imports: { default: async },
});

//! Host-side bindings of the desktop interfaces (world `desktop-capabilities`
//! in `wit/<version>/desktop.wit`), one module per contract version.

#![allow(missing_docs, unreachable_pub)]

/// Contract 0.1.0.
pub(crate) mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.1.0",
        world: "desktop-capabilities",
        imports: { default: async },
    });
}

/// Contract 0.2.0.
pub(crate) mod v0_2 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.2.0",
        world: "desktop-capabilities",
        imports: { default: async },
    });
}

/// Contract 0.3.0: adds `accessibility` and `input.check-combo`.
pub(crate) mod v0_3 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.3.0",
        world: "desktop-capabilities",
        imports: { default: async },
    });
}

/// Contract 0.4.0 (desktop unchanged).
pub(crate) mod v0_4 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.4.0",
        world: "desktop-capabilities",
        imports: { default: async },
    });
}

/// Contract 0.5.0 (desktop unchanged).
pub(crate) mod v0_5 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.5.0",
        world: "desktop-capabilities",
        imports: { default: async },
    });
}

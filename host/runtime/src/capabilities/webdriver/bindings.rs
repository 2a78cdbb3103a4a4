//! Host-side bindings of `stephost:plugin/webdriver` (world
//! `webdriver-capability`), one module per contract version.

#![allow(missing_docs, unreachable_pub)]

/// Contract 0.1.0.
pub(crate) mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.1.0",
        world: "webdriver-capability",
        imports: { default: async },
    });
}

/// Contract 0.2.0.
pub(crate) mod v0_2 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.2.0",
        world: "webdriver-capability",
        imports: { default: async },
    });
}

/// Contract 0.3.0 (webdriver unchanged).
pub(crate) mod v0_3 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.3.0",
        world: "webdriver-capability",
        imports: { default: async },
    });
}

/// Contract 0.4.0 (webdriver unchanged).
pub(crate) mod v0_4 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.4.0",
        world: "webdriver-capability",
        imports: { default: async },
    });
}

/// Contract 0.5.0 (webdriver unchanged).
pub(crate) mod v0_5 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.5.0",
        world: "webdriver-capability",
        imports: { default: async },
    });
}

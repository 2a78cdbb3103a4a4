//! Host-side bindings of `stephost:plugin/webdriver` (world `webdriver-capability`).

#![allow(missing_docs, unreachable_pub)]

wasmtime::component::bindgen!({
    path: "../wit",
    world: "webdriver-capability",
    imports: { default: async },
});

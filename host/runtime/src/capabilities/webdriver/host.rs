//! `stephost:plugin/webdriver` for [`HostState`].
//!
//! Every call starts with the grant check: the describe probe links these
//! functions for every component but holds no grant.
//!
//! `impls.rs` is included once per contract version with that version's
//! bindings as `wit`.

/// Contract 0.1.0.
mod v0_1 {
    use crate::capabilities::webdriver::bindings::v0_1 as wit;
    include!("impls.rs");
}

/// Contract 0.2.0.
mod v0_2 {
    use crate::capabilities::webdriver::bindings::v0_2 as wit;
    include!("impls.rs");
}

/// Contract 0.3.0.
mod v0_3 {
    use crate::capabilities::webdriver::bindings::v0_3 as wit;
    include!("impls.rs");
}

/// Contract 0.4.0.
mod v0_4 {
    use crate::capabilities::webdriver::bindings::v0_4 as wit;
    include!("impls.rs");
}

/// Contract 0.5.0.
mod v0_5 {
    use crate::capabilities::webdriver::bindings::v0_5 as wit;
    include!("impls.rs");
}

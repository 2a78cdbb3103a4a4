//! The WIT interfaces `screen`, `windows` and `input` for [`HostState`].
//!
//! Every function starts with the grant check: the describe probe links these
//! functions for every component but holds no grant, and a plugin's real
//! linker only has them when granted, so the check is the second lock on the
//! same door. The X work blocks, so it runs on tokio's blocking pool; a step
//! timeout drops the future and the worker finishes its (short) request.
//!
//! The same implementation serves every contract version: `impls.rs` is
//! included once per version with that version's bindings as `wit`, so a
//! version adds a line here, not a copy of the code.

/// Contract 0.1.0.
mod v0_1 {
    use crate::capabilities::desktop::bindings::v0_1 as wit;
    /// `input` functions added in later versions: none here.
    macro_rules! input_since_0_3 {
        () => {};
    }
    include!("impls.rs");
}

/// Contract 0.2.0.
mod v0_2 {
    use crate::capabilities::desktop::bindings::v0_2 as wit;
    macro_rules! input_since_0_3 {
        () => {};
    }
    include!("impls.rs");
}

/// `input.check-combo` (0.3.0 on), written once for every version that has it.
macro_rules! check_combo {
    () => {
        async fn check_combo(&mut self, combo: String) -> Result<(), DesktopError> {
            let desktop = granted_desktop(self)?;
            parse_combos(self, &desktop, &combo).map(drop)
        }
    };
}

/// Contract 0.3.0: adds `input.check-combo` and `accessibility`.
mod v0_3 {
    use crate::capabilities::desktop::bindings::v0_3 as wit;
    macro_rules! input_since_0_3 {
        () => {
            check_combo!();
        };
    }
    include!("impls.rs");
    include!("accessibility_impls.rs");
}

/// Contract 0.4.0 (desktop unchanged).
mod v0_4 {
    use crate::capabilities::desktop::bindings::v0_4 as wit;
    macro_rules! input_since_0_3 {
        () => {
            check_combo!();
        };
    }
    include!("impls.rs");
    include!("accessibility_impls.rs");
}

/// Contract 0.5.0 (desktop unchanged).
mod v0_5 {
    use crate::capabilities::desktop::bindings::v0_5 as wit;
    macro_rules! input_since_0_3 {
        () => {
            check_combo!();
        };
    }
    include!("impls.rs");
    include!("accessibility_impls.rs");
}

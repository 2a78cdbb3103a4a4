//! Contract versions: which `stephost:plugin` packages the host speaks, and how
//! a component's imports and exports name theirs.

use std::fmt;

/// The WIT package every plugin interface lives in.
pub const PACKAGE: &str = "stephost:plugin";

/// A released version of the plugin contract (`wit/<version>/`). Released
/// versions are frozen; the host keeps serving every one listed here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ContractVersion {
    /// `stephost:plugin@0.1.0`: failure codes and recovery proposals as text.
    V0_1,
    /// `stephost:plugin@0.2.0`: typed failure codes and recovery proposals.
    V0_2,
    /// `stephost:plugin@0.3.0`: `tool.check` (input checked before a batch
    /// acts) and the desktop's `accessibility` interface.
    V0_3,
    /// `stephost:plugin@0.4.0`: the `rf-library` capability (real Robot
    /// Framework libraries served by the host).
    V0_4,
    /// `stephost:plugin@0.5.0`: the `python` capability (expressions evaluated
    /// by CPython in a sandbox).
    V0_5,
}

impl ContractVersion {
    /// Every version the host serves, oldest first.
    pub const ALL: [ContractVersion; 5] = [
        ContractVersion::V0_1,
        ContractVersion::V0_2,
        ContractVersion::V0_3,
        ContractVersion::V0_4,
        ContractVersion::V0_5,
    ];

    /// The newest version: what new plugins and the guest SDK target.
    pub const LATEST: ContractVersion = ContractVersion::V0_5;

    /// The version as written in WIT (`0.2.0`).
    pub fn as_str(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => "0.1.0",
            ContractVersion::V0_2 => "0.2.0",
            ContractVersion::V0_3 => "0.3.0",
            ContractVersion::V0_4 => "0.4.0",
            ContractVersion::V0_5 => "0.5.0",
        }
    }

    /// The version written `text`, if the host serves it.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == text)
    }

    /// The fully qualified name of `interface` in this version
    /// (`stephost:plugin/tool@0.2.0`).
    pub fn interface(self, interface: &str) -> String {
        format!("{PACKAGE}/{interface}@{}", self.as_str())
    }

    /// Splits an import or export name of the stephost package into interface
    /// and version text: `stephost:plugin/log@0.1.0` → `("log", Some("0.1.0"))`.
    /// `None` for names of other packages.
    pub fn split(name: &str) -> Option<(&str, Option<&str>)> {
        let rest = name.strip_prefix(PACKAGE)?.strip_prefix('/')?;
        Some(match rest.split_once('@') {
            Some((interface, version)) => (interface, Some(version)),
            None => (rest, None),
        })
    }

    /// The versions the host serves, as text, for messages (`0.1.0, 0.2.0`).
    pub fn supported() -> String {
        Self::ALL
            .iter()
            .map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl serde::Serialize for ContractVersion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl fmt::Display for ContractVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_interface_and_version() {
        assert_eq!(
            ContractVersion::split("stephost:plugin/tool@0.2.0"),
            Some(("tool", Some("0.2.0")))
        );
        assert_eq!(
            ContractVersion::split("stephost:plugin/log"),
            Some(("log", None))
        );
        assert_eq!(ContractVersion::split("wasi:http/types@0.2.0"), None);
        assert_eq!(ContractVersion::parse("0.1.0"), Some(ContractVersion::V0_1));
        assert_eq!(ContractVersion::parse("0.3.0"), Some(ContractVersion::V0_3));
        assert_eq!(ContractVersion::parse("0.4.0"), Some(ContractVersion::V0_4));
        assert_eq!(ContractVersion::parse("0.5.0"), Some(ContractVersion::V0_5));
        assert_eq!(ContractVersion::parse("0.6.0"), None);
        assert_eq!(
            ContractVersion::LATEST.interface("tool"),
            "stephost:plugin/tool@0.5.0"
        );
    }
}

//! On-disk cache of compiled components.
//!
//! Compiling a component with Cranelift takes ~90 ms; mapping a precompiled
//! artifact takes ~0.1 ms. Entries are keyed by the engine's compatibility hash
//! (wasmtime version, target and every codegen setting) and the sha256 of the
//! component bytes, so a stale or foreign artifact is never loaded: a different
//! engine looks in a different directory, a different component under a
//! different name.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// A directory of precompiled components for one engine configuration.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: PathBuf,
}

/// Hex sha256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest {
        use std::fmt::Write;
        let _ = write!(out, "{byte:02x}");
    }
    out
}

impl CompileCache {
    /// A cache under `root` for artifacts of `engine`.
    pub fn new(root: &Path, engine: &Engine) -> Self {
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let dir = root.join(format!("engine-{:016x}", hasher.finish()));
        Self { dir }
    }

    /// Loads the component for `bytes` (whose sha256 is `digest`) from the cache,
    /// compiling and storing it on a miss. Cache I/O failures only cost time: they
    /// are logged and the component is compiled in memory.
    pub fn load(&self, engine: &Engine, bytes: &[u8], digest: &str) -> wasmtime::Result<Component> {
        let path = self.dir.join(format!("{digest}.cwasm"));
        if path.exists() {
            // SAFETY: the file was written by `store` below from `Component::serialize`
            // of this same engine configuration (the directory name is the engine's
            // compatibility hash), into the operator's private cache directory.
            // wasmtime still checks the header and version before mapping it.
            #[allow(unsafe_code)]
            match unsafe { Component::deserialize_file(engine, &path) } {
                Ok(component) => return Ok(component),
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "discarding unusable cached component");
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        let component = Component::new(engine, bytes)?;
        if let Err(error) = self.store(&component, &path) {
            tracing::warn!(path = %path.display(), %error, "could not write the compile cache");
        }
        Ok(component)
    }

    /// Stores `component`, compiled from bytes whose sha256 is `digest`, so the
    /// next [`load`](Self::load) of them is a hit.
    pub(crate) fn put(&self, component: &Component, digest: &str) -> anyhow::Result<()> {
        self.store(component, &self.dir.join(format!("{digest}.cwasm")))
    }

    fn store(&self, component: &Component, path: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let bytes = component.serialize().map_err(|e| anyhow::anyhow!("{e}"))?;
        // Write then rename so a concurrent reader never maps a half-written file.
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    }
}

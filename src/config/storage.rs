//! Where the data lives (`[storage]`): the backend, the embedded file and the MongoDB URI.

use std::path::PathBuf;

use anyhow::bail;
use serde::{Deserialize, Serialize};

use crate::store::embedded::Synchronous;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    Embedded,
    Mongodb,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Embedded => "embedded",
            Backend::Mongodb => "mongodb",
        }
    }
}

/// SQLite's own ceiling (`SQLITE_MAX_MMAP_SIZE`, just under 2 GiB): it quietly caps a
/// larger `mmap_size`, so a larger setting would not do what it says.
const MAX_MMAP_MIB: u32 = 2047;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    pub backend: Backend,
    pub path: PathBuf,
    pub mongodb_uri: Option<String>,
    /// Embedded only: `full` makes every acknowledged write survive power loss.
    pub synchronous: Synchronous,
    /// Embedded only: MiB of the file each connection memory-maps (0: none).
    pub mmap_mib: u32,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            backend: Backend::Embedded,
            path: PathBuf::from("./data/socialite.db"),
            mongodb_uri: None,
            synchronous: Synchronous::Full,
            mmap_mib: crate::store::embedded::DEFAULT_MMAP_MIB,
        }
    }
}

impl StorageConfig {
    pub(super) fn validate(&self) -> anyhow::Result<()> {
        if self.backend == Backend::Mongodb && self.mongodb_uri.as_deref().is_none_or(str::is_empty)
        {
            bail!("storage.mongodb_uri is required when storage.backend is mongodb");
        }
        if self.mmap_mib > MAX_MMAP_MIB {
            bail!(
                "storage.mmap_mib must be 0-{MAX_MMAP_MIB} (MiB of the file each connection maps), got {}",
                self.mmap_mib
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_map_past_the_limit_is_refused_with_the_key_and_range() {
        let mut storage = StorageConfig::default();
        storage.validate().unwrap();
        storage.mmap_mib = 0;
        storage.validate().unwrap();
        storage.mmap_mib = MAX_MMAP_MIB + 1;
        let message = storage.validate().unwrap_err().to_string();
        assert!(
            message.contains("storage.mmap_mib must be 0-2047"),
            "{message}"
        );
    }
}

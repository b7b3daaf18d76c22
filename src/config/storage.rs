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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    pub backend: Backend,
    pub path: PathBuf,
    pub mongodb_uri: Option<String>,
    /// Embedded only: `full` makes every acknowledged write survive power loss.
    pub synchronous: Synchronous,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            backend: Backend::Embedded,
            path: PathBuf::from("./data/socialite.db"),
            mongodb_uri: None,
            synchronous: Synchronous::Full,
        }
    }
}

impl StorageConfig {
    pub(super) fn validate(&self) -> anyhow::Result<()> {
        if self.backend == Backend::Mongodb && self.mongodb_uri.as_deref().is_none_or(str::is_empty)
        {
            bail!("storage.mongodb_uri is required when storage.backend is mongodb");
        }
        Ok(())
    }
}

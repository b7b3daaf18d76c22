//! The MongoDB adapter (in progress).

use std::sync::Arc;

use super::Store;

pub async fn connect(_uri: &str) -> anyhow::Result<Arc<dyn Store>> {
    anyhow::bail!("the mongodb backend is not available in this build yet")
}

//! Every notification of a load on MongoDB: the notifications worker's rebuild
//! (`notifications/rebuild.rs`) without a fence, so a load writes exactly what the
//! rebuild writes (`derived::notifications::rebuilt`), in the same bounded memory.

use crate::store::mongo::MongoStore;
use crate::store::{RebuildBounds, StoreResult};

pub(super) async fn derive(store: &MongoStore) -> StoreResult<u64> {
    store
        .rebuild_all_notifications(None, RebuildBounds::default())
        .await
}

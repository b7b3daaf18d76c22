//! Every connection of the store, the writer and each pooled reader, maps as much of the
//! file as `storage.mmap_mib` says: the bound on the RSS its mapped pages can reach.

use super::{EmbeddedStore, Synchronous};

fn mapped(conn: &rusqlite::Connection) -> i64 {
    conn.query_row("PRAGMA mmap_size", [], |row| row.get::<_, i64>(0))
        .unwrap()
}

#[tokio::test]
async fn every_connection_maps_the_configured_size() {
    for mib in [0u32, 3, 1024, 2047] {
        let dir = tempfile::tempdir().unwrap();
        let store =
            EmbeddedStore::open_mapped(&dir.path().join("m.db"), Synchronous::Normal, mib).unwrap();
        let writer = mapped(&*store.inner.writer.lock().await);
        let reader = store.read(|conn| Ok(mapped(conn))).await.unwrap();
        assert_eq!(
            (writer, reader),
            (i64::from(mib) << 20, i64::from(mib) << 20),
            "{mib} MiB"
        );
    }
}

//! The reading positions port on both stores: an upsert that creates at version 1 and
//! moves the version by one at each write, per user and per timeline.

use socialite::domain::markers::MarkerTimeline::{Home, Notifications};

use crate::common::{fresh_store, kinds};

#[tokio::test]
async fn markers_are_upserted_per_user_and_timeline_with_a_moving_version() {
    for kind in kinds("markers_are_upserted_per_user_and_timeline_with_a_moving_version") {
        let test = fresh_store(kind).await;
        let markers = &test.store.markers;
        let both = [Home, Notifications];
        assert!(markers.markers("ann", &both).await.unwrap().is_empty());
        // The first write creates the marker at version 1.
        let first = markers.set_marker("ann", Home, "100", 1_000).await.unwrap();
        assert_eq!(
            (first.timeline, first.last_read_id.as_str(), first.version),
            (Home, "100", 1),
            "{kind:?}"
        );
        assert_eq!(first.updated_at_ms, 1_000);
        // Each later write moves it by one and replaces the id and the time.
        let second = markers
            .set_marker("ann", Home, "0x9f", 2_000)
            .await
            .unwrap();
        assert_eq!((second.last_read_id.as_str(), second.version), ("0x9f", 2));
        let third = markers
            .set_marker("ann", Home, "0x9f", 3_000)
            .await
            .unwrap();
        assert_eq!(third.version, 3, "{kind:?}: an unchanged id is a write too");
        // Other timelines and other users have their own.
        let other = markers
            .set_marker("ann", Notifications, "7", 4_000)
            .await
            .unwrap();
        assert_eq!(other.version, 1, "{kind:?}");
        let bob = markers.set_marker("bob", Home, "5", 5_000).await.unwrap();
        assert_eq!(bob.version, 1, "{kind:?}");
        let read = markers.markers("ann", &both).await.unwrap();
        assert_eq!(read, vec![third.clone(), other.clone()], "{kind:?}");
        assert_eq!(
            markers.markers("ann", &[Notifications]).await.unwrap(),
            vec![other]
        );
        assert_eq!(markers.markers("ann", &[Home]).await.unwrap(), vec![third]);
        assert_eq!(markers.markers("bob", &both).await.unwrap(), vec![bob]);
        assert!(markers.markers("ann", &[]).await.unwrap().is_empty());
        assert!(markers.markers("cat", &both).await.unwrap().is_empty());
        // Concurrent writes each get their own version: none is lost.
        let writes = (0..8).map(|i| {
            let markers = markers.clone();
            async move { markers.set_marker("dan", Home, &i.to_string(), 6_000).await }
        });
        let mut versions: Vec<u64> = futures::future::join_all(writes)
            .await
            .into_iter()
            .map(|m| m.unwrap().version)
            .collect();
        versions.sort_unstable();
        assert_eq!(versions, (1..=8).collect::<Vec<_>>(), "{kind:?}");
        let last = markers.markers("dan", &[Home]).await.unwrap();
        assert_eq!(last[0].version, 8, "{kind:?}");
    }
}

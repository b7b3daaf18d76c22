//! An open set of change streams, one lane each, and the reads that fill the lanes.

use mongodb::Database;
use mongodb::bson::{Document, Timestamp, doc};
use mongodb::change_stream::ChangeStream;
use mongodb::options::FullDocumentType;

use super::merge::{self, Event, Lane};
use super::position::{Mark, Mode};
use super::{MAX_AWAIT, WATCHED, map_error};
use crate::domain::{Change, ChangePosition};
use crate::store::StoreResult;

/// Open streams with what they fetched and have not delivered yet.
pub(super) struct Feed {
    mode: Mode,
    streams: Vec<ChangeStream<Event>>,
    lanes: Vec<Lane>,
}

/// The database stream's filter: the watched collections, and the events that end it.
fn database_filter() -> Document {
    let names: Vec<&str> = WATCHED.iter().map(|(name, _)| *name).collect();
    doc! { "$match": { "$or": [
        { "ns.coll": { "$in": names } },
        { "operationType": { "$in": ["dropDatabase", "invalidate"] } },
    ] } }
}

impl Feed {
    pub(super) fn lanes(mode: Mode) -> usize {
        mode.streams().len()
    }

    /// Opens the mode's streams, each at its mark.
    pub(super) async fn open(
        db: &Database,
        mode: Mode,
        marks: Vec<Mark>,
    ) -> mongodb::error::Result<Feed> {
        let targets: Vec<Option<(&'static str, &'static str)>> = match mode {
            Mode::Database => vec![None],
            Mode::Collections { .. } => WATCHED.iter().copied().map(Some).collect(),
        };
        let mut feed = Feed {
            mode,
            streams: Vec::with_capacity(targets.len()),
            lanes: Vec::with_capacity(targets.len()),
        };
        for (collection, mark) in targets.into_iter().zip(marks) {
            let watched = collection.map(|(name, _)| db.collection::<Document>(name));
            let watch = match &watched {
                Some(watched) => watched.watch(),
                None => db.watch().pipeline([database_filter()]),
            }
            .full_document(FullDocumentType::UpdateLookup)
            .max_await_time(MAX_AWAIT);
            let watch = match &mark {
                Mark::After(token) => watch.resume_after(token.clone()),
                Mark::From(time) => watch.start_at_operation_time(*time),
            };
            feed.streams.push(watch.await?);
            feed.lanes.push(Lane::new(collection, mark));
        }
        Ok(feed)
    }

    /// Fetches until each lane has `limit` pending or its stream drains, all lanes at
    /// once. `newest`: the newest oplog entry, read before this call, on a server
    /// without post-batch tokens.
    pub(super) async fn fill(
        &mut self,
        limit: usize,
        newest: Option<Timestamp>,
        after: Option<&ChangePosition>,
    ) -> StoreResult<()> {
        let merged = self.lanes.len() > 1;
        let fills =
            self.streams
                .iter_mut()
                .zip(self.lanes.iter_mut())
                .map(|(stream, lane)| async move {
                    while lane.wants(limit) {
                        let next = stream
                            .next_if_any()
                            .await
                            .map_err(|e| map_error(e, after))?;
                        match next {
                            Some(event) => lane.push(event)?,
                            // After an empty batch the driver's token is the post-batch token.
                            None => {
                                let token = stream.resume_token();
                                return lane.drained(token, stream.is_alive(), newest, merged);
                            }
                        }
                    }
                    Ok(())
                });
        futures::future::try_join_all(fills).await?;
        Ok(())
    }

    /// Up to `limit` changes in order; see `merge::deliver`.
    pub(super) fn deliver(
        &mut self,
        limit: usize,
        after: Option<&ChangePosition>,
    ) -> StoreResult<Vec<Change>> {
        merge::deliver(self.mode, &mut self.lanes, limit, after)
    }
}

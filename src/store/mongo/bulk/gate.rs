//! Serving and loading kept apart on MongoDB, by the `bulk_load` collection's one
//! document (`_id: "load"`): `started_at` is the load's mark, `servers` the registered
//! servers, each `{id, holder, expires_at}`.
//!
//! - A server registers with one conditional upsert: push its entry where the document
//!   has no mark. Where it has one, the filter misses, the upsert collides with the
//!   existing `_id`, and the registration is refused.
//! - A load sets the mark with one conditional upsert: where no entry of `servers` has
//!   an unexpired `expires_at`. Where one has, the upsert collides, and the load is
//!   refused. So whichever of the two writes lands first wins, on the server.
//! - A registration lasts [`TTL_MS`] and is renewed every third of it while registered,
//!   and removed when the last registration of the handle ends; a server that dies
//!   stops renewing, and its entry blocks loads until it expires.

use std::sync::Mutex;

use mongodb::Collection;
use mongodb::bson::{Bson, Document, doc};
use mongodb::error::ErrorKind;
use tokio::task::JoinHandle;

use super::MARK;
use crate::domain::now_ms;
use crate::store::StoreResult;
use crate::store::bulk::Exclusion;
use crate::store::mongo::{MongoStore, db_error, int};

/// How long a server's registration lasts unless renewed.
pub const TTL_MS: i64 = 30_000;
const ID: &str = "load";

/// A registration's id and the task renewing it.
type Held = Option<(String, JoinHandle<()>)>;

/// This handle's registration: how many hold it, its id, and the task renewing it.
#[derive(Default)]
pub(crate) struct Registration {
    state: Mutex<(usize, Held)>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some((_, renewer)) = self.held().1.take() {
            renewer.abort();
        }
    }
}

impl Registration {
    fn held(&self) -> std::sync::MutexGuard<'_, (usize, Held)> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

fn duplicate_key(error: &mongodb::error::Error) -> bool {
    match error.kind.as_ref() {
        ErrorKind::Write(mongodb::error::WriteFailure::WriteError(e)) => e.code == 11000,
        ErrorKind::Command(e) => e.code == 11000,
        _ => false,
    }
}

/// Pushes the entry `id` where the document has no mark; `Loading` where it has.
async fn register(
    coll: &Collection<Document>,
    id: &str,
    holder: &str,
) -> StoreResult<Result<(), Exclusion>> {
    let now = now_ms();
    coll.update_one(
        doc! { "_id": ID },
        doc! { "$pull": { "servers": { "expires_at": { "$lte": now } } } },
    )
    .await
    .map_err(db_error)?;
    let entry = doc! { "id": id, "holder": holder, "expires_at": now + TTL_MS };
    let pushed = coll
        .update_one(
            doc! { "_id": ID, "started_at": { "$exists": false } },
            doc! { "$push": { "servers": entry } },
        )
        .upsert(true)
        .await;
    match pushed {
        Ok(_) => Ok(Ok(())),
        Err(error) if duplicate_key(&error) => {
            let since_ms = load_started(coll).await?;
            Ok(Err(Exclusion::Loading { since_ms }))
        }
        Err(error) => Err(db_error(error)),
    }
}

/// Moves the entry `id`'s expiry on, registering it again if it expired and was removed.
async fn renew(
    coll: &Collection<Document>,
    id: &str,
    holder: &str,
) -> StoreResult<Result<(), Exclusion>> {
    let moved = coll
        .update_one(
            doc! { "_id": ID, "servers.id": id },
            doc! { "$set": { "servers.$.expires_at": now_ms() + TTL_MS } },
        )
        .await
        .map_err(db_error)?;
    if moved.matched_count > 0 {
        return Ok(Ok(()));
    }
    register(coll, id, holder).await
}

/// When the marked load began, if one is marked.
pub(super) async fn load_started(coll: &Collection<Document>) -> StoreResult<Option<i64>> {
    let found = coll.find_one(doc! { "_id": ID }).await.map_err(db_error)?;
    Ok(found
        .filter(|d| d.contains_key("started_at"))
        .map(|d| int(&d, "started_at")))
}

pub(super) async fn enter_serving(
    store: &MongoStore,
    holder: &str,
) -> StoreResult<Result<(), Exclusion>> {
    {
        let mut state = store.serving.held();
        if state.1.is_some() {
            state.0 += 1;
            return Ok(Ok(()));
        }
    }
    let coll = store.collection(MARK);
    let id = format!("{holder}/{:016x}", rand::random::<u64>());
    if let Err(refused) = register(&coll, &id, holder).await? {
        return Ok(Err(refused));
    }
    let renewer = {
        let (coll, id, holder) = (coll.clone(), id.clone(), holder.to_owned());
        tokio::spawn(async move {
            let mut tick =
                tokio::time::interval(std::time::Duration::from_millis((TTL_MS / 3) as u64));
            tick.tick().await;
            loop {
                tick.tick().await;
                match renew(&coll, &id, &holder).await {
                    Ok(Ok(())) => {}
                    Ok(Err(refused)) => tracing::error!(
                        "this server's registration expired and a bulk load has begun since: {refused}"
                    ),
                    Err(error) => {
                        tracing::warn!(error = %error, "renewing the server's registration failed")
                    }
                }
            }
        })
    };
    let surplus = {
        let mut state = store.serving.held();
        state.0 += 1;
        if state.1.is_none() {
            state.1 = Some((id, renewer));
            None
        } else {
            // Another call registered meanwhile: keep its registration, drop ours.
            renewer.abort();
            Some(id)
        }
    };
    if let Some(id) = surplus {
        unregister(store, &id).await?;
    }
    Ok(Ok(()))
}

async fn unregister(store: &MongoStore, id: &str) -> StoreResult<()> {
    store
        .collection(MARK)
        .update_one(
            doc! { "_id": ID },
            doc! { "$pull": { "servers": { "id": id } } },
        )
        .await
        .map_err(db_error)?;
    Ok(())
}

pub(super) async fn leave_serving(store: &MongoStore) -> StoreResult<()> {
    let ended = {
        let mut state = store.serving.held();
        state.0 = state.0.saturating_sub(1);
        if state.0 == 0 { state.1.take() } else { None }
    };
    if let Some((id, renewer)) = ended {
        renewer.abort();
        unregister(store, &id).await?;
    }
    Ok(())
}

/// Sets the mark (keeping an earlier one) where no registration is unexpired.
pub(super) async fn begin_load(
    store: &MongoStore,
    at_ms: i64,
) -> StoreResult<Result<(), Exclusion>> {
    let coll = store.collection(MARK);
    let now = now_ms();
    let marked = coll
        .update_one(
            doc! { "_id": ID, "$nor": [{ "servers.expires_at": { "$gt": now } }] },
            doc! { "$min": { "started_at": at_ms } },
        )
        .upsert(true)
        .await;
    match marked {
        Ok(_) => Ok(Ok(())),
        Err(error) if duplicate_key(&error) => {
            let found = coll
                .find_one(doc! { "_id": ID })
                .await
                .map_err(db_error)?
                .unwrap_or_default();
            let live = live_server(&found, now);
            Ok(Err(Exclusion::Serving {
                holder: live.as_ref().map(|(h, _)| h.clone()),
                expires_at_ms: live.map(|(_, at)| at),
            }))
        }
        Err(error) => Err(db_error(error)),
    }
}

/// The unexpired registration that expires last, if any.
fn live_server(found: &Document, now: i64) -> Option<(String, i64)> {
    let servers = found.get_array("servers").ok()?;
    servers
        .iter()
        .filter_map(|s| match s {
            Bson::Document(d) => Some((
                d.get_str("holder").unwrap_or_default().to_owned(),
                int(d, "expires_at"),
            )),
            _ => None,
        })
        .filter(|(_, at)| *at > now)
        .max_by_key(|(_, at)| *at)
}

pub(super) async fn finish_load(store: &MongoStore) -> StoreResult<()> {
    store
        .collection(MARK)
        .update_one(doc! { "_id": ID }, doc! { "$unset": { "started_at": "" } })
        .await
        .map_err(db_error)?;
    Ok(())
}

//! At quiescence: every first page a process may have kept is the converged head.

use serde_json::Value;
use socialite::domain::PostId;

use super::super::masto::{self, Api};
use super::super::world::World;
use super::PAGE_LIMITS;

/// How many pages past a short first page are read to fill it.
const MAX_MORE: usize = 20;

/// At quiescence: the first page of `user`'s timeline through `api` at every length a
/// walk may ask for (walked on from its cursor while it is short), from every process
/// up, is the head of `served` (the converged timeline, as a full walk read it). A
/// process keeps rendered pages by owner, cursor and length (`service::pages`), so this
/// serves every page kept during the run that its version still says stands: one a
/// write should have moved shows here, whatever it lacks or holds. Returns what differs.
pub async fn kept_heads(world: &World, api: Api, user: &str, served: &[PostId]) -> Vec<String> {
    let mut faults = Vec::new();
    let token = api.token(world, user);
    for target in world.cluster.up() {
        for limit in PAGE_LIMITS {
            // A page may come back short with a cursor, when its read skipped many
            // hidden entries in its rounds (docs/timelines.md, "Pages"): the walk goes
            // on from the cursor, and what it finds must be the head all the same.
            let mut ids = Vec::new();
            let mut next = Some(masto::home_path(api, user, limit));
            let mut pages = 0;
            while ids.len() < limit && pages <= MAX_MORE {
                let Some(path) = next.take() else { break };
                let read = masto::read_page(
                    world,
                    &target,
                    api,
                    &path,
                    &token,
                    "items",
                    masto::status_item,
                );
                let Some((page, _)) = read.await else {
                    break;
                };
                ids.extend(ids_of(user, api, &page.items, &mut faults));
                next = page.next;
                pages += 1;
            }
            if pages == 0 {
                continue;
            }
            let via = masto::via(target.slot, api);
            if pages > 1 {
                eprintln!(
                    "oracle: {user}'s first page via {via} at limit {limit} came back short with a cursor; {} more read",
                    pages - 1
                );
            }
            ids.truncate(limit);
            let head = &served[..limit.min(served.len())];
            if ids.as_slice() != head {
                faults.push(format!(
                    "{user}'s first page via {via} at limit {limit}: {ids:?}, the converged head {head:?}"
                ));
            }
        }
    }
    faults
}

/// Items as `/v1` ones (Mastodon's decimal ids back to the engine's), and an id that is
/// not one (a render the mapping does not know) a fault rather than left out.
fn ids_of(user: &str, api: Api, items: &[Value], faults: &mut Vec<String>) -> Vec<PostId> {
    items
        .iter()
        .filter_map(|i| match i["id"].as_str().and_then(|id| id.parse().ok()) {
            Some(id) => Some(id),
            None => {
                faults.push(format!(
                    "{user}'s first page via {api}: an item without an id: {i}"
                ));
                None
            }
        })
        .collect()
}

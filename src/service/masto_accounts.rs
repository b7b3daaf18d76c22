//! Accounts for the Mastodon view: users with their last status (the newest post or
//! repost that exists), read in one batch per page or entity set with the profiles
//! (`UserStore::accounts`), never a read per account.

use std::collections::HashMap;

use super::{Social, user_not_found};
use crate::domain::AccountView;
use crate::store::StoreResult;

impl Social {
    /// The accounts of `ids` (repeats allowed), in one read.
    pub(super) async fn profiles(&self, ids: &[&str]) -> StoreResult<HashMap<String, AccountView>> {
        let mut ids: Vec<String> = ids.iter().map(|id| (*id).to_owned()).collect();
        ids.sort_unstable();
        ids.dedup();
        let accounts = self.store.users.accounts(&ids).await?;
        Ok(accounts
            .into_iter()
            .map(|a| (a.user.id.clone(), a))
            .collect())
    }

    /// The accounts of `ids`, in order; a user deleted meanwhile is left out.
    pub(super) async fn profiles_in_order(
        &self,
        ids: &[impl AsRef<str>],
    ) -> StoreResult<Vec<AccountView>> {
        let wanted: Vec<&str> = ids.iter().map(AsRef::as_ref).collect();
        let mut found = self.profiles(&wanted).await?;
        Ok(wanted.iter().filter_map(|id| found.remove(*id)).collect())
    }

    /// The account of user `id`: `NotFound` for an unknown user.
    pub async fn account(&self, id: &str) -> StoreResult<AccountView> {
        self.profiles(&[id])
            .await?
            .remove(id)
            .ok_or_else(|| user_not_found(id))
    }

    /// Renames `id` when a name is given ([`Social::rename`]), then answers the account.
    pub async fn update_account(
        &self,
        id: &str,
        display_name: Option<&str>,
    ) -> StoreResult<AccountView> {
        if let Some(name) = display_name {
            self.rename(id, name).await?;
        }
        self.account(id).await
    }
}

//! The users port: profiles and what a timeline page needs about its authors.

use async_trait::async_trait;

use super::StoreResult;
use crate::domain::{AuthorView, NewUser, User};

/// Changes here are appended to the change feed atomically with the change.
#[async_trait]
pub trait UserStore: Send + Sync + 'static {
    /// `Conflict` when the id is taken.
    async fn create_user(&self, user: &NewUser) -> StoreResult<User>;
    async fn user(&self, id: &str) -> StoreResult<Option<User>>;
    /// `None` when the user is unknown.
    async fn rename_user(&self, id: &str, display_name: &str) -> StoreResult<Option<User>>;
    /// The existing users among `authors`, with their display names and whether `reader`
    /// follows them: everything a timeline page needs about its authors, in one call.
    async fn authors(&self, reader: &str, authors: &[String]) -> StoreResult<Vec<AuthorView>>;
}

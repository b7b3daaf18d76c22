//! Users port decorators: one that fails every call on demand, one that holds a
//! recount between its read and its write.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use socialite::domain::{AccountView, AuthorView, Fence, NewUser, User};
use socialite::store::{Counted, NameWord, Recount, StoreResult, UserStore};
use tokio::sync::oneshot;

use super::injected;

/// Users that fail every call while `failing` is set, like `FailingContent`.
pub struct FailingUsers {
    pub inner: Arc<dyn UserStore>,
    pub failing: AtomicBool,
}

impl FailingUsers {
    fn check(&self) -> StoreResult<()> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(injected());
        }
        Ok(())
    }
}

#[async_trait]
impl UserStore for FailingUsers {
    async fn create_user(&self, user: &NewUser) -> StoreResult<User> {
        self.check()?;
        self.inner.create_user(user).await
    }
    async fn user(&self, id: &str) -> StoreResult<Option<User>> {
        self.check()?;
        self.inner.user(id).await
    }
    async fn users(&self, ids: &[String]) -> StoreResult<Vec<User>> {
        self.check()?;
        self.inner.users(ids).await
    }
    async fn accounts(&self, ids: &[String]) -> StoreResult<Vec<AccountView>> {
        self.check()?;
        self.inner.accounts(ids).await
    }
    async fn accounts_by_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> StoreResult<Vec<AccountView>> {
        self.check()?;
        self.inner.accounts_by_prefix(prefix, limit).await
    }
    async fn name_word_entries(
        &self,
        prefix: &str,
        after: Option<&NameWord>,
        limit: usize,
    ) -> StoreResult<Vec<NameWord>> {
        self.check()?;
        self.inner.name_word_entries(prefix, after, limit).await
    }
    async fn name_words_of(&self, users: &[String]) -> StoreResult<Vec<NameWord>> {
        self.check()?;
        self.inner.name_words_of(users).await
    }
    async fn sync_name_words(&self, users: &[String]) -> StoreResult<u64> {
        self.check()?;
        self.inner.sync_name_words(users).await
    }
    async fn rebuild_name_words(&self) -> StoreResult<u64> {
        self.check()?;
        self.inner.rebuild_name_words().await
    }
    async fn rename_user(&self, id: &str, display_name: &str) -> StoreResult<Option<User>> {
        self.check()?;
        self.inner.rename_user(id, display_name).await
    }
    async fn authors(&self, reader: &str, authors: &[String]) -> StoreResult<Vec<AuthorView>> {
        self.check()?;
        self.inner.authors(reader, authors).await
    }
    async fn count_sources(&self, users: &[Recount]) -> StoreResult<Vec<Counted>> {
        self.check()?;
        self.inner.count_sources(users).await
    }
    async fn write_counts(&self, counted: &[Counted]) -> StoreResult<Vec<String>> {
        self.check()?;
        self.inner.write_counts(counted).await
    }
    async fn recount_all(&self, fence: &Fence) -> StoreResult<u64> {
        self.check()?;
        self.inner.recount_all(fence).await
    }
}

/// Users that hold the first recount of `user` after it has counted the sources and
/// before it writes, until told to go on: the test changes the sources meanwhile.
pub struct PausingUsers {
    pub inner: Arc<dyn UserStore>,
    pub user: String,
    pub pause: Mutex<Option<(oneshot::Sender<()>, oneshot::Receiver<()>)>>,
}

impl PausingUsers {
    /// The decorator, a receiver told when the recount is held, a sender that releases it.
    pub fn new(
        inner: Arc<dyn UserStore>,
        user: &str,
    ) -> (Arc<Self>, oneshot::Receiver<()>, oneshot::Sender<()>) {
        let (reached, on_reached) = oneshot::channel();
        let (resume, on_resume) = oneshot::channel();
        let pause = Mutex::new(Some((reached, on_resume)));
        let user = user.to_owned();
        (
            Arc::new(PausingUsers { inner, user, pause }),
            on_reached,
            resume,
        )
    }
}

#[async_trait]
impl UserStore for PausingUsers {
    async fn create_user(&self, user: &NewUser) -> StoreResult<User> {
        self.inner.create_user(user).await
    }
    async fn user(&self, id: &str) -> StoreResult<Option<User>> {
        self.inner.user(id).await
    }
    async fn users(&self, ids: &[String]) -> StoreResult<Vec<User>> {
        self.inner.users(ids).await
    }
    async fn accounts(&self, ids: &[String]) -> StoreResult<Vec<AccountView>> {
        self.inner.accounts(ids).await
    }
    async fn accounts_by_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> StoreResult<Vec<AccountView>> {
        self.inner.accounts_by_prefix(prefix, limit).await
    }
    async fn name_word_entries(
        &self,
        prefix: &str,
        after: Option<&NameWord>,
        limit: usize,
    ) -> StoreResult<Vec<NameWord>> {
        self.inner.name_word_entries(prefix, after, limit).await
    }
    async fn name_words_of(&self, users: &[String]) -> StoreResult<Vec<NameWord>> {
        self.inner.name_words_of(users).await
    }
    async fn sync_name_words(&self, users: &[String]) -> StoreResult<u64> {
        self.inner.sync_name_words(users).await
    }
    async fn rebuild_name_words(&self) -> StoreResult<u64> {
        self.inner.rebuild_name_words().await
    }
    async fn rename_user(&self, id: &str, display_name: &str) -> StoreResult<Option<User>> {
        self.inner.rename_user(id, display_name).await
    }
    async fn authors(&self, reader: &str, authors: &[String]) -> StoreResult<Vec<AuthorView>> {
        self.inner.authors(reader, authors).await
    }
    async fn count_sources(&self, users: &[Recount]) -> StoreResult<Vec<Counted>> {
        let counted = self.inner.count_sources(users).await?;
        let pause = match counted.iter().any(|c| c.user == self.user) {
            true => self.pause.lock().unwrap().take(),
            false => None,
        };
        if let Some((reached, resume)) = pause {
            reached.send(()).unwrap();
            resume.await.unwrap();
        }
        Ok(counted)
    }
    async fn write_counts(&self, counted: &[Counted]) -> StoreResult<Vec<String>> {
        self.inner.write_counts(counted).await
    }
    async fn recount_all(&self, fence: &Fence) -> StoreResult<u64> {
        self.inner.recount_all(fence).await
    }
}

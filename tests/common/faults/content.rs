//! Content port decorators: one that fails every call on demand, one that holds a
//! home timeline's read of the posts (a cache build's snapshot) until told to go on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use socialite::domain::{NameStamp, Post, PostId};
use socialite::store::{ContentStore, Inserted, PostRange, StoreResult};
use tokio::sync::oneshot;

use super::injected;

/// Fails every call while `failing` is set.
pub struct FailingContent {
    pub inner: Arc<dyn ContentStore>,
    pub failing: AtomicBool,
}

impl FailingContent {
    fn check(&self) -> StoreResult<()> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(injected());
        }
        Ok(())
    }
}

#[async_trait]
impl ContentStore for FailingContent {
    async fn insert_post(
        &self,
        author: &str,
        text: &str,
        in_reply_to: Option<PostId>,
        now_ms: i64,
    ) -> StoreResult<Inserted> {
        self.check()?;
        self.inner
            .insert_post(author, text, in_reply_to, now_ms)
            .await
    }
    async fn post(&self, id: PostId) -> StoreResult<Option<Post>> {
        self.check()?;
        self.inner.post(id).await
    }
    async fn delete_post(&self, id: PostId) -> StoreResult<Option<Post>> {
        self.check()?;
        self.inner.delete_post(id).await
    }
    async fn posts_by_author(
        &self,
        author: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        self.check()?;
        self.inner.posts_by_author(author, before, limit).await
    }
    async fn posts_by_ids(&self, ids: &[PostId], authors: &[String]) -> StoreResult<Vec<Post>> {
        self.check()?;
        self.inner.posts_by_ids(ids, authors).await
    }
    async fn existing_posts(&self, ids: &[PostId], authors: &[String]) -> StoreResult<Vec<PostId>> {
        self.check()?;
        self.inner.existing_posts(ids, authors).await
    }
    async fn home_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        self.check()?;
        self.inner.home_posts(user, before, limit).await
    }
    async fn shown_home_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
        now_ms: i64,
    ) -> StoreResult<Vec<(Post, NameStamp)>> {
        self.check()?;
        self.inner
            .shown_home_posts(user, before, limit, now_ms)
            .await
    }
    async fn merged_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        above: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<(Post, NameStamp)>> {
        self.check()?;
        self.inner.merged_posts(user, before, above, limit).await
    }

    async fn public_posts(&self, range: PostRange, limit: usize) -> StoreResult<Vec<Post>> {
        self.check()?;
        self.inner.public_posts(range, limit).await
    }

    async fn tagged_posts(
        &self,
        tag: &str,
        range: PostRange,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        self.check()?;
        self.inner.tagged_posts(tag, range, limit).await
    }
}

/// Content that holds the first `home_posts` of `user` after it has read, until told to
/// go on: a cache build then holds its snapshot while the test changes the world.
pub struct PausingContent {
    pub inner: Arc<dyn ContentStore>,
    pub user: String,
    pub pause: Mutex<Option<(oneshot::Sender<()>, oneshot::Receiver<()>)>>,
}

impl PausingContent {
    /// The decorator, a receiver told when the read is held, a sender that releases it.
    pub fn new(
        inner: Arc<dyn ContentStore>,
        user: &str,
    ) -> (Arc<Self>, oneshot::Receiver<()>, oneshot::Sender<()>) {
        let (reached, on_reached) = oneshot::channel();
        let (resume, on_resume) = oneshot::channel();
        let pause = Mutex::new(Some((reached, on_resume)));
        let user = user.to_owned();
        (
            Arc::new(PausingContent { inner, user, pause }),
            on_reached,
            resume,
        )
    }
}

#[async_trait]
impl ContentStore for PausingContent {
    async fn insert_post(
        &self,
        author: &str,
        text: &str,
        in_reply_to: Option<PostId>,
        now_ms: i64,
    ) -> StoreResult<Inserted> {
        self.inner
            .insert_post(author, text, in_reply_to, now_ms)
            .await
    }
    async fn post(&self, id: PostId) -> StoreResult<Option<Post>> {
        self.inner.post(id).await
    }
    async fn delete_post(&self, id: PostId) -> StoreResult<Option<Post>> {
        self.inner.delete_post(id).await
    }
    async fn posts_by_author(
        &self,
        author: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        self.inner.posts_by_author(author, before, limit).await
    }
    async fn posts_by_ids(&self, ids: &[PostId], authors: &[String]) -> StoreResult<Vec<Post>> {
        self.inner.posts_by_ids(ids, authors).await
    }
    async fn existing_posts(&self, ids: &[PostId], authors: &[String]) -> StoreResult<Vec<PostId>> {
        self.inner.existing_posts(ids, authors).await
    }
    async fn home_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        let posts = self.inner.home_posts(user, before, limit).await?;
        let pause = match user == self.user {
            true => self.pause.lock().unwrap().take(),
            false => None,
        };
        if let Some((reached, resume)) = pause {
            reached.send(()).unwrap();
            resume.await.unwrap();
        }
        Ok(posts)
    }
    async fn shown_home_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
        now_ms: i64,
    ) -> StoreResult<Vec<(Post, NameStamp)>> {
        self.inner
            .shown_home_posts(user, before, limit, now_ms)
            .await
    }
    async fn merged_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        above: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<(Post, NameStamp)>> {
        self.inner.merged_posts(user, before, above, limit).await
    }

    async fn public_posts(&self, range: PostRange, limit: usize) -> StoreResult<Vec<Post>> {
        self.inner.public_posts(range, limit).await
    }

    async fn tagged_posts(
        &self,
        tag: &str,
        range: PostRange,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        self.inner.tagged_posts(tag, range, limit).await
    }
}

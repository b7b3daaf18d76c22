//! A tokens decorator that holds a lookup after it has read, for revocation races.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use socialite::store::{StoreResult, TokenHash, TokenRecord, TokenStore};
use tokio::sync::oneshot;

/// The hash to hold, who to tell once its lookup has read, and what releases it.
type Armed = (TokenHash, oneshot::Sender<()>, oneshot::Receiver<()>);

/// Tokens whose next lookup of an armed hash holds after it has read the row, until
/// released: a verification then carries what it read across whatever the test does.
pub struct PausingTokens {
    pub inner: Arc<dyn TokenStore>,
    armed: Mutex<Option<Armed>>,
}

impl PausingTokens {
    pub fn new(inner: Arc<dyn TokenStore>) -> Arc<Self> {
        let armed = Mutex::new(None);
        Arc::new(PausingTokens { inner, armed })
    }

    /// Holds the next lookup of `hash`: a receiver told when it has read, a sender that
    /// releases it.
    pub fn pause(&self, hash: TokenHash) -> (oneshot::Receiver<()>, oneshot::Sender<()>) {
        let (reached, on_reached) = oneshot::channel();
        let (resume, on_resume) = oneshot::channel();
        *self.armed.lock().unwrap() = Some((hash, reached, on_resume));
        (on_reached, resume)
    }
}

#[async_trait]
impl TokenStore for PausingTokens {
    async fn insert_token(&self, hash: &TokenHash, record: &TokenRecord) -> StoreResult<()> {
        self.inner.insert_token(hash, record).await
    }
    async fn token_by_hash(&self, hash: &TokenHash) -> StoreResult<Option<TokenRecord>> {
        let found = self.inner.token_by_hash(hash).await?;
        let pause = {
            let mut armed = self.armed.lock().unwrap();
            match armed.as_ref() {
                Some((armed_hash, _, _)) if armed_hash == hash => armed.take(),
                _ => None,
            }
        };
        if let Some((_, reached, resume)) = pause {
            reached.send(()).unwrap();
            resume.await.unwrap();
        }
        Ok(found)
    }
    async fn revoke_token(&self, user: &str, id: &str) -> StoreResult<bool> {
        self.inner.revoke_token(user, id).await
    }
}

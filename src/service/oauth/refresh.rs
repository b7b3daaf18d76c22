//! Refresh tokens: issued beside the access token of the `authorization_code` and
//! `password` grants (never `client_credentials`, which has no user to refresh for),
//! stored as the SHA-256 of their value, and spent by the `refresh_token` grant, which
//! takes the token in the write that finds it (so of two requests with one token at
//! most one succeeds), revokes the access token it was issued with, and issues a new
//! pair: rotation, the old refresh token stops working. Scopes may only narrow. A crash
//! between the take and the new pair's insert leaves the client with no refresh token:
//! it signs in again, the safe side.

use super::super::Social;
use super::super::auth::hash;
use super::{ACCESS_BYTES, IssuedAccess, OAuthError, OAuthResult, random_token, scopes_of};
use crate::domain::scopes::Scopes;
use crate::store::{AppRecord, RefreshRecord, StoreError};

impl Social {
    /// An access token with a refresh token, for `user`.
    pub(super) async fn issue_pair(
        &self,
        user: &str,
        client_id: &str,
        scopes: Scopes,
    ) -> OAuthResult<IssuedAccess> {
        let mut issued = self
            .issue_access(Some(user), client_id, scopes.clone())
            .await?;
        loop {
            let token = random_token(ACCESS_BYTES);
            let record = RefreshRecord {
                id: hex::encode(rand::random::<[u8; 8]>()),
                user: user.to_owned(),
                client_id: client_id.to_owned(),
                scopes: scopes.to_string(),
                access_hash: hash(&issued.token),
                created_at_ms: issued.created_at_ms,
            };
            match self
                .store
                .oauth
                .insert_refresh(&hash(&token), &record)
                .await
            {
                Ok(()) => {
                    issued.refresh_token = Some(token);
                    return Ok(issued);
                }
                Err(StoreError::Conflict(_)) => continue,
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// `refresh_token`: spends `token` (issued to `client`) for a new access token and
    /// a new refresh token, with `scope` when given (within the refresh token's, else
    /// `invalid_scope`), else the same scopes. The access token it was issued with is
    /// revoked. `invalid_grant` for a token that is unknown, spent, revoked or another
    /// app's (which spends it too: a leaked token is dead once anyone presents it).
    pub async fn refresh_grant(
        &self,
        client: &AppRecord,
        token: &str,
        scope: Option<&str>,
    ) -> OAuthResult<IssuedAccess> {
        let invalid = |why: &str| OAuthError::InvalidGrant(why.to_owned());
        let record = self
            .store
            .oauth
            .take_refresh(&hash(token))
            .await?
            .ok_or_else(|| invalid("the refresh token is unknown, used already or revoked"))?;
        if record.client_id != client.client_id {
            return Err(invalid("the refresh token was issued to another app"));
        }
        let granted = scopes_of(&record.scopes, "read")?;
        let scopes = match scope.map(str::trim).filter(|s| !s.is_empty()) {
            Some(asked) => {
                let asked = scopes_of(asked, "read")?;
                if !asked.within(&granted) {
                    return Err(OAuthError::InvalidScope(format!(
                        "the scopes asked for ({asked}) are beyond the refresh token's ({granted})"
                    )));
                }
                asked
            }
            None => granted,
        };
        // The pair it was issued with is replaced: the old access token stops working.
        self.store
            .oauth
            .revoke_access(&record.access_hash, &record.client_id)
            .await?;
        self.oauth.grants.revoked(&record.access_hash);
        self.issue_pair(&record.user, &client.client_id, scopes)
            .await
    }
}

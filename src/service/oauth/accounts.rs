//! Users' credentials on the Mastodon API: signing in (a password, or for a user
//! without one a `/v1` credential) under the limits on failed sign-ins, setting a
//! password, and registering a user with one (`POST /api/v1/accounts`).

use std::net::IpAddr;

use subtle::ConstantTimeEq;

use super::super::auth::AuthError;
use super::super::{IssuedToken, Social};
use super::{Grant, IssuedAccess, OAuthError, OAuthResult, passwords, validate_password};
use crate::domain::{User, validate_user_id};
use crate::store::{StoreError, StoreResult};

impl Social {
    /// Checks `user`'s credentials under the sign-in limits: their password, or, for a
    /// user without one, one of their `/v1` credentials (an API token or a JWT). The
    /// answer does not say whether the user exists.
    pub async fn sign_in(&self, user: &str, secret: &str, address: IpAddr) -> OAuthResult<()> {
        let refused = || OAuthError::InvalidGrant("invalid user or password".to_owned());
        if validate_user_id(user).is_err() || secret.is_empty() || secret.len() > 8 * 1024 {
            return Err(refused());
        }
        self.oauth
            .limits
            .attempt(user, address, self.oauth_now())
            .map_err(|_| OAuthError::TooManyAttempts)?;
        let holds = match self.store.oauth.password_hash(user).await? {
            Some(phc) => passwords::verify_password(secret, &phc).await,
            None => match self.auth.authenticate(Some(secret)).await {
                Ok(Some(named)) => bool::from(named.as_bytes().ct_eq(user.as_bytes())),
                Ok(None) | Err(AuthError::Missing | AuthError::Invalid) => false,
                Err(AuthError::Store(error)) => return Err(error.into()),
            },
        };
        if !holds {
            tracing::info!(user, %address, "a sign-in failed");
            return Err(refused());
        }
        self.oauth.limits.succeeded(user, address);
        Ok(())
    }

    /// Sets `user`'s password (replacing any).
    pub async fn set_password(&self, user: &str, password: &str) -> StoreResult<()> {
        validate_password(password).map_err(StoreError::Invalid)?;
        let phc = passwords::hash_password(password).await?;
        if self.store.oauth.set_password(user, &phc).await? {
            Ok(())
        } else {
            Err(StoreError::NotFound(format!("user {user}")))
        }
    }

    /// [`Social::register`] with an optional password, hashed before the user is
    /// stored; should storing it fail, the user exists without one (the answer is a
    /// 503) and can set one with their token.
    pub async fn register_with_password(
        &self,
        id: &str,
        display_name: &str,
        password: Option<&str>,
    ) -> StoreResult<(User, Option<IssuedToken>)> {
        let phc = match password {
            Some(password) => {
                validate_password(password).map_err(StoreError::Invalid)?;
                Some(passwords::hash_password(password).await?)
            }
            None => None,
        };
        let user = self.create_user(id, display_name).await?;
        if let Some(phc) = phc {
            self.store.oauth.set_password(id, &phc).await?;
        }
        let token = if self.auth.issues_tokens() {
            Some(self.auth.issue(id).await?)
        } else {
            None
        };
        Ok((user, token))
    }

    /// `POST /api/v1/accounts`: a new user with a password, and a token for them from
    /// the app whose token asked, with that token's scopes.
    pub async fn register_account(
        &self,
        grant: &Grant,
        username: &str,
        password: &str,
    ) -> OAuthResult<IssuedAccess> {
        let client_id = grant
            .client_id
            .clone()
            .ok_or_else(|| OAuthError::InvalidRequest("an app token is needed".to_owned()))?;
        validate_user_id(username).map_err(|e| OAuthError::InvalidRequest(e.to_string()))?;
        validate_password(password).map_err(OAuthError::InvalidRequest)?;
        self.register_with_password(username, username, Some(password))
            .await?;
        self.issue_access(Some(username), &client_id, grant.scopes.clone())
            .await
    }
}

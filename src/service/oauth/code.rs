//! The authorization code flow: an authorization request checked against the app's
//! registration (exact redirect URIs, scopes within its own), a code issued for an
//! approved request (stored hashed, with its PKCE S256 challenge), and its exchange,
//! which spends the code in the read that finds it before checking it.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::super::Social;
use super::super::auth::hash;
use super::{
    CODE_TTL_MS, IssuedAccess, OAuthError, OAuthResult, random_token, requested_scopes, scopes_of,
};
use crate::domain::scopes::Scopes;
use crate::store::{AppRecord, CodeRecord};

/// An authorization request the page may ask a user to approve.
pub struct AuthorizeRequest {
    pub app: AppRecord,
    pub redirect_uri: String,
    pub scopes: Scopes,
}

/// PKCE S256: BASE64URL(SHA-256(verifier)) against the stored challenge, in constant
/// time.
fn pkce_holds(challenge: &str, verifier: &str) -> bool {
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    (43..=128).contains(&verifier.len())
        && bool::from(computed.as_bytes().ct_eq(challenge.as_bytes()))
}

impl Social {
    /// Checks an authorization request: a known app, one of its redirect URIs exactly
    /// (the only one when none is named), scopes within its own. Never redirect on an
    /// error here: the redirect URI is not known to be the app's.
    pub async fn authorize_request(
        &self,
        client_id: &str,
        redirect_uri: Option<&str>,
        scope: Option<&str>,
    ) -> OAuthResult<AuthorizeRequest> {
        let app =
            self.store.oauth.app(client_id).await?.ok_or_else(|| {
                OAuthError::InvalidRequest("no app has this client_id".to_owned())
            })?;
        let redirect_uri = match redirect_uri.filter(|u| !u.is_empty()) {
            Some(uri) => app
                .redirect_uris
                .iter()
                .find(|registered| registered.as_bytes().ct_eq(uri.as_bytes()).into())
                .cloned(),
            None if app.redirect_uris.len() == 1 => app.redirect_uris.first().cloned(),
            None => None,
        }
        .ok_or_else(|| {
            OAuthError::InvalidRequest(
                "redirect_uri is not one the app registered (an exact match is needed)".to_owned(),
            )
        })?;
        let scopes = requested_scopes(&app, scope)?;
        Ok(AuthorizeRequest {
            app,
            redirect_uri,
            scopes,
        })
    }

    /// A code for an approved request. `challenge` is PKCE's, S256 only.
    pub async fn issue_code(
        &self,
        request: &AuthorizeRequest,
        user: &str,
        challenge: Option<&str>,
        method: Option<&str>,
    ) -> OAuthResult<String> {
        let challenge = challenge.filter(|c| !c.is_empty());
        if let Some(challenge) = challenge {
            if method != Some("S256") {
                return Err(OAuthError::InvalidRequest(
                    "code_challenge_method must be S256".to_owned(),
                ));
            }
            if challenge.len() != 43 || URL_SAFE_NO_PAD.decode(challenge).is_err() {
                return Err(OAuthError::InvalidRequest(
                    "code_challenge must be a url-safe base64 SHA-256 (43 characters)".to_owned(),
                ));
            }
        }
        let code = random_token(32);
        let now = self.oauth_now();
        let record = CodeRecord {
            client_id: request.app.client_id.clone(),
            user: user.to_owned(),
            redirect_uri: request.redirect_uri.clone(),
            scopes: request.scopes.to_string(),
            challenge: challenge.map(str::to_owned),
            expires_at_ms: now + CODE_TTL_MS,
        };
        self.store
            .oauth
            .insert_code(&hash(&code), &record, now)
            .await?;
        Ok(code)
    }

    /// `authorization_code`: the code is spent by the read that finds it, then checked.
    pub async fn exchange_code(
        &self,
        client: &AppRecord,
        code: &str,
        redirect_uri: Option<&str>,
        verifier: Option<&str>,
    ) -> OAuthResult<IssuedAccess> {
        let invalid = |why: &str| OAuthError::InvalidGrant(why.to_owned());
        let record = self
            .store
            .oauth
            .take_code(&hash(code))
            .await?
            .ok_or_else(|| invalid("the code is unknown or was used already"))?;
        if record.client_id != client.client_id {
            return Err(invalid("the code was issued to another app"));
        }
        if self.oauth_now() >= record.expires_at_ms {
            return Err(invalid("the code has expired"));
        }
        if redirect_uri.unwrap_or(&record.redirect_uri) != record.redirect_uri {
            return Err(invalid(
                "redirect_uri differs from the authorization request's",
            ));
        }
        match (&record.challenge, verifier) {
            (None, None) => {}
            (Some(challenge), Some(verifier)) if pkce_holds(challenge, verifier) => {}
            (Some(_), _) => return Err(invalid("the code_verifier does not match")),
            (None, Some(_)) => return Err(invalid("the code was issued without PKCE")),
        }
        let scopes = scopes_of(&record.scopes, "read")?;
        self.issue_pair(&record.user, &client.client_id, scopes)
            .await
    }
}

//! OAuth 2 apps: registering one (a name, 1 to 10 redirect URIs that are absolute and
//! without a fragment, scopes, a website), its client secret shown once and stored as
//! its SHA-256, and an app's client authentication, the digests compared in constant
//! time.

use subtle::ConstantTimeEq;

use super::super::Social;
use super::super::auth::hash;
use super::{Grant, OAuthError, OAuthResult, random_token, scopes_of};
use crate::store::{AppRecord, StoreResult};

/// A new app's registration.
pub struct NewApp {
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub scopes: String,
    pub website: Option<String>,
}

/// An app as registered, with its secret shown once.
pub struct CreatedApp {
    pub app: AppRecord,
    pub client_secret: String,
}

/// A URI an app may register: a scheme, then no whitespace and no fragment.
fn valid_redirect_uri(uri: &str) -> bool {
    let Some((scheme, rest)) = uri.split_once(':') else {
        return false;
    };
    uri.len() <= 2000
        && !rest.is_empty()
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !uri
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '#')
}

impl Social {
    /// Registers an app.
    pub async fn create_app(&self, app: NewApp) -> OAuthResult<CreatedApp> {
        let name = app.name.trim();
        if name.is_empty() || name.chars().count() > 200 {
            return Err(OAuthError::InvalidRequest(
                "client_name must be 1-200 characters".to_owned(),
            ));
        }
        if app.redirect_uris.is_empty() || app.redirect_uris.len() > 10 {
            return Err(OAuthError::InvalidRequest(
                "redirect_uris must name 1-10 URIs".to_owned(),
            ));
        }
        if let Some(bad) = app.redirect_uris.iter().find(|u| !valid_redirect_uri(u)) {
            return Err(OAuthError::InvalidRequest(format!(
                "redirect URI {bad:?} is not an absolute URI without a fragment"
            )));
        }
        let scopes = scopes_of(&app.scopes, "read")?;
        let website = app.website.filter(|w| !w.trim().is_empty());
        if website.as_ref().is_some_and(|w| w.len() > 2000) {
            return Err(OAuthError::InvalidRequest("website is too long".to_owned()));
        }
        let client_secret = random_token(32);
        let record = AppRecord {
            client_id: random_token(32),
            secret_hash: hash(&client_secret),
            name: name.to_owned(),
            redirect_uris: app.redirect_uris,
            scopes: scopes.to_string(),
            website,
            created_at_ms: self.oauth_now(),
        };
        self.store.oauth.insert_app(&record).await?;
        Ok(CreatedApp {
            app: record,
            client_secret,
        })
    }

    /// The app `client_id` names, once `client_secret` proves it (digests compared in
    /// constant time).
    pub async fn client(&self, client_id: &str, client_secret: &str) -> OAuthResult<AppRecord> {
        let app = self
            .store
            .oauth
            .app(client_id)
            .await?
            .ok_or(OAuthError::InvalidClient)?;
        if bool::from(hash(client_secret).ct_eq(&app.secret_hash)) {
            Ok(app)
        } else {
            Err(OAuthError::InvalidClient)
        }
    }

    /// The app a grant's token belongs to.
    pub async fn app_of(&self, grant: &Grant) -> StoreResult<Option<AppRecord>> {
        match &grant.client_id {
            Some(id) => self.store.oauth.app(id).await,
            None => Ok(None),
        }
    }
}

//! Sign-in on MongoDB: the users' `password_hash` field (an Argon2id PHC string, absent
//! without a password), and `oauth_apps` `{_id: client_id, secret_hash, name,
//! redirect_uris, scopes, website, created_at}`, `oauth_codes` `{_id: hex SHA-256 of the
//! code, client_id, user, redirect_uri, scopes, challenge, expires_at}` and
//! `oauth_tokens` `{_id: hex SHA-256 of the token, token_id, user, client_id, scopes,
//! created_at}` and `oauth_refresh` `{_id: hex SHA-256 of the refresh token, token_id,
//! user, client_id, scopes, access_hash: hex, created_at}` (indexed `{access_hash: 1}`).
//! The change feed watches none of the OAuth collections; a password write
//! reaches it as a users update without `display_name`, filed as a counter update (a
//! recount that changes nothing).

use async_trait::async_trait;
use mongodb::bson::{Bson, Document, doc};

use super::{IndexSpec, MongoStore, db_error, index, insert_new, int};
use crate::store::oauth::{AccessRecord, AppRecord, CodeRecord, OAuthStore, RefreshRecord};
use crate::store::{StoreError, StoreResult, TokenHash};

const APPS: &str = "oauth_apps";
const CODES: &str = "oauth_codes";
const TOKENS: &str = "oauth_tokens";
const REFRESH: &str = "oauth_refresh";
const PASSWORD: &str = "password_hash";

pub(super) fn indexes() -> Vec<IndexSpec> {
    vec![
        (CODES, index(doc! { "expires_at": 1 }, false)),
        (REFRESH, index(doc! { "access_hash": 1 }, false)),
    ]
}

fn optional(doc: &Document, key: &str) -> Option<String> {
    doc.get_str(key).ok().map(str::to_owned)
}

fn text(doc: &Document, key: &str) -> String {
    doc.get_str(key).unwrap_or_default().to_owned()
}

fn hash_from_hex(text: &str) -> TokenHash {
    let mut hash = [0; 32];
    if let Ok(bytes) = hex::decode(text)
        && bytes.len() == 32
    {
        hash.copy_from_slice(&bytes);
    }
    hash
}

fn code_from(d: &Document) -> CodeRecord {
    CodeRecord {
        client_id: text(d, "client_id"),
        user: text(d, "user"),
        redirect_uri: text(d, "redirect_uri"),
        scopes: text(d, "scopes"),
        challenge: optional(d, "challenge"),
        expires_at_ms: int(d, "expires_at"),
    }
}

fn or_null(value: &Option<String>) -> Bson {
    value
        .as_ref()
        .map_or(Bson::Null, |v| Bson::String(v.clone()))
}

#[async_trait]
impl OAuthStore for MongoStore {
    async fn set_password(&self, user: &str, hash: &str) -> StoreResult<bool> {
        let written = self
            .users_coll()
            .update_one(doc! { "_id": user }, doc! { "$set": { PASSWORD: hash } })
            .await
            .map_err(db_error)?;
        Ok(written.matched_count > 0)
    }

    async fn password_hash(&self, user: &str) -> StoreResult<Option<String>> {
        let found = self
            .users_coll()
            .find_one(doc! { "_id": user })
            .projection(doc! { PASSWORD: 1 })
            .await
            .map_err(db_error)?;
        Ok(found.and_then(|d| optional(&d, PASSWORD)))
    }

    async fn insert_app(&self, app: &AppRecord) -> StoreResult<()> {
        let document = doc! {
            "_id": &app.client_id,
            "secret_hash": hex::encode(app.secret_hash),
            "name": &app.name,
            "redirect_uris": &app.redirect_uris,
            "scopes": &app.scopes,
            "website": or_null(&app.website),
            "created_at": app.created_at_ms,
        };
        if insert_new(&self.collection(APPS), document, &[]).await? {
            Ok(())
        } else {
            Err(StoreError::Conflict(format!("app {}", app.client_id)))
        }
    }

    async fn app(&self, client_id: &str) -> StoreResult<Option<AppRecord>> {
        let found = self
            .collection(APPS)
            .find_one(doc! { "_id": client_id })
            .await
            .map_err(db_error)?;
        Ok(found.map(|d| AppRecord {
            client_id: text(&d, "_id"),
            secret_hash: hash_from_hex(d.get_str("secret_hash").unwrap_or_default()),
            name: text(&d, "name"),
            redirect_uris: d
                .get_array("redirect_uris")
                .map(|uris| {
                    uris.iter()
                        .filter_map(|u| u.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            scopes: text(&d, "scopes"),
            website: optional(&d, "website"),
            created_at_ms: int(&d, "created_at"),
        }))
    }

    async fn insert_code(
        &self,
        hash: &TokenHash,
        code: &CodeRecord,
        now_ms: i64,
    ) -> StoreResult<()> {
        self.collection(CODES)
            .delete_many(doc! { "expires_at": { "$lt": now_ms } })
            .await
            .map_err(db_error)?;
        let document = doc! {
            "_id": hex::encode(hash),
            "client_id": &code.client_id,
            "user": &code.user,
            "redirect_uri": &code.redirect_uri,
            "scopes": &code.scopes,
            "challenge": or_null(&code.challenge),
            "expires_at": code.expires_at_ms,
        };
        if insert_new(&self.collection(CODES), document, &[]).await? {
            Ok(())
        } else {
            Err(StoreError::Conflict("authorization code".to_owned()))
        }
    }

    /// `findOneAndDelete`: one document command, so of racing calls one gets it.
    async fn take_code(&self, hash: &TokenHash) -> StoreResult<Option<CodeRecord>> {
        let found = self
            .collection(CODES)
            .find_one_and_delete(doc! { "_id": hex::encode(hash) })
            .await
            .map_err(db_error)?;
        Ok(found.as_ref().map(code_from))
    }

    async fn insert_access(&self, hash: &TokenHash, access: &AccessRecord) -> StoreResult<()> {
        let document = doc! {
            "_id": hex::encode(hash),
            "token_id": &access.id,
            "user": or_null(&access.user),
            "client_id": &access.client_id,
            "scopes": &access.scopes,
            "created_at": access.created_at_ms,
        };
        if insert_new(&self.collection(TOKENS), document, &[]).await? {
            Ok(())
        } else {
            Err(StoreError::Conflict(format!("token {}", access.id)))
        }
    }

    async fn access_by_hash(&self, hash: &TokenHash) -> StoreResult<Option<AccessRecord>> {
        let found = self
            .collection(TOKENS)
            .find_one(doc! { "_id": hex::encode(hash) })
            .await
            .map_err(db_error)?;
        Ok(found.map(|d| AccessRecord {
            id: text(&d, "token_id"),
            user: optional(&d, "user"),
            client_id: text(&d, "client_id"),
            scopes: text(&d, "scopes"),
            created_at_ms: int(&d, "created_at"),
        }))
    }

    async fn revoke_access(&self, hash: &TokenHash, client_id: &str) -> StoreResult<bool> {
        let deleted = self
            .collection(TOKENS)
            .delete_one(doc! { "_id": hex::encode(hash), "client_id": client_id })
            .await
            .map_err(db_error)?;
        Ok(deleted.deleted_count > 0)
    }

    async fn insert_refresh(&self, hash: &TokenHash, refresh: &RefreshRecord) -> StoreResult<()> {
        let document = doc! {
            "_id": hex::encode(hash),
            "token_id": &refresh.id,
            "user": &refresh.user,
            "client_id": &refresh.client_id,
            "scopes": &refresh.scopes,
            "access_hash": hex::encode(refresh.access_hash),
            "created_at": refresh.created_at_ms,
        };
        if insert_new(&self.collection(REFRESH), document, &[]).await? {
            Ok(())
        } else {
            Err(StoreError::Conflict(format!(
                "refresh token {}",
                refresh.id
            )))
        }
    }

    async fn take_refresh(&self, hash: &TokenHash) -> StoreResult<Option<RefreshRecord>> {
        let found = self
            .collection(REFRESH)
            .find_one_and_delete(doc! { "_id": hex::encode(hash) })
            .await
            .map_err(db_error)?;
        Ok(found.as_ref().map(|d| RefreshRecord {
            id: text(d, "token_id"),
            user: text(d, "user"),
            client_id: text(d, "client_id"),
            scopes: text(d, "scopes"),
            access_hash: hash_from_hex(&text(d, "access_hash")),
            created_at_ms: int(d, "created_at"),
        }))
    }

    async fn revoke_refresh(&self, hash: &TokenHash, client_id: &str) -> StoreResult<bool> {
        let hex = hex::encode(hash);
        let filter = doc! {
            "$or": [{ "_id": &hex }, { "access_hash": &hex }], "client_id": client_id,
        };
        let deleted = self
            .collection(REFRESH)
            .delete_many(filter)
            .await
            .map_err(db_error)?;
        Ok(deleted.deleted_count > 0)
    }
}

//! Sign-in on SQLite: `users.password_hash` (an Argon2id PHC string, or NULL), and the
//! OAuth tables `oauth_apps`, `oauth_codes`, `oauth_tokens` and `oauth_refresh`, keyed by client id
//! or by the SHA-256 of the secret value. None of it is a source the workers derive from, so no
//! write here appends to the change feed.

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::EmbeddedStore;
use super::schema::add_column;
use crate::store::oauth::{AccessRecord, AppRecord, CodeRecord, OAuthStore, RefreshRecord};
use crate::store::{StoreError, StoreResult, TokenHash};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS oauth_apps (
    client_id     TEXT PRIMARY KEY,
    secret_hash   BLOB NOT NULL,
    name          TEXT NOT NULL,
    redirect_uris TEXT NOT NULL,
    scopes        TEXT NOT NULL,
    website       TEXT,
    created_at    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS oauth_codes (
    hash         BLOB PRIMARY KEY,
    client_id    TEXT NOT NULL,
    user         TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    challenge    TEXT,
    expires_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS oauth_codes_by_expiry ON oauth_codes (expires_at);
CREATE TABLE IF NOT EXISTS oauth_tokens (
    hash       BLOB PRIMARY KEY,
    token_id   TEXT NOT NULL,
    user       TEXT,
    client_id  TEXT NOT NULL,
    scopes     TEXT NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Format 9: users' optional password hash and the OAuth tables. A store upgraded from
/// an older format gets no passwords and no apps.
pub(super) fn oauth_schema(conn: &Connection) -> rusqlite::Result<()> {
    add_column(conn, "users", "password_hash", "TEXT")?;
    conn.execute_batch(SCHEMA)
}

/// Format 11: refresh tokens, by the SHA-256 of their value, and by the access token
/// they were issued with (a revocation of that token takes them too).
pub(super) fn refresh_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS oauth_refresh (
             hash        BLOB PRIMARY KEY,
             token_id    TEXT NOT NULL,
             user        TEXT NOT NULL,
             client_id   TEXT NOT NULL,
             scopes      TEXT NOT NULL,
             access_hash BLOB NOT NULL,
             created_at  INTEGER NOT NULL
         ) WITHOUT ROWID;
         CREATE INDEX IF NOT EXISTS oauth_refresh_by_access ON oauth_refresh (access_hash);",
    )
}

/// Redirect URIs are stored one per line (a URI holds no newline).
fn join_uris(uris: &[String]) -> String {
    uris.join("\n")
}

fn split_uris(text: &str) -> Vec<String> {
    text.lines().map(str::to_owned).collect()
}

fn hash_of(blob: Vec<u8>) -> TokenHash {
    let mut hash = [0; 32];
    if blob.len() == 32 {
        hash.copy_from_slice(&blob);
    }
    hash
}

#[async_trait]
impl OAuthStore for EmbeddedStore {
    async fn set_password(&self, user: &str, hash: &str) -> StoreResult<bool> {
        let (user, hash) = (user.to_owned(), hash.to_owned());
        self.write(move |tx| {
            let changed = tx
                .prepare_cached("UPDATE users SET password_hash = ?1 WHERE id = ?2")?
                .execute(params![hash, user])?;
            Ok(changed > 0)
        })
        .await
    }

    async fn password_hash(&self, user: &str) -> StoreResult<Option<String>> {
        let user = user.to_owned();
        self.read_inline(move |conn| {
            let found: Option<Option<String>> = conn
                .prepare_cached("SELECT password_hash FROM users WHERE id = ?1")?
                .query_row([user], |row| row.get(0))
                .optional()?;
            Ok(found.flatten())
        })
        .await
    }

    async fn insert_app(&self, app: &AppRecord) -> StoreResult<()> {
        let app = app.clone();
        self.write(move |tx| {
            let inserted = tx
                .prepare_cached(
                    "INSERT INTO oauth_apps
                       (client_id, secret_hash, name, redirect_uris, scopes, website, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
                )?
                .execute(params![
                    app.client_id,
                    &app.secret_hash[..],
                    app.name,
                    join_uris(&app.redirect_uris),
                    app.scopes,
                    app.website,
                    app.created_at_ms
                ])?;
            if inserted == 0 {
                return Err(StoreError::Conflict(format!("app {}", app.client_id)));
            }
            Ok(())
        })
        .await
    }

    async fn app(&self, client_id: &str) -> StoreResult<Option<AppRecord>> {
        let client_id = client_id.to_owned();
        self.read_inline(move |conn| {
            Ok(conn
                .prepare_cached(
                    "SELECT client_id, secret_hash, name, redirect_uris, scopes, website,
                            created_at
                     FROM oauth_apps WHERE client_id = ?1",
                )?
                .query_row([client_id], |row| {
                    Ok(AppRecord {
                        client_id: row.get(0)?,
                        secret_hash: hash_of(row.get(1)?),
                        name: row.get(2)?,
                        redirect_uris: split_uris(&row.get::<_, String>(3)?),
                        scopes: row.get(4)?,
                        website: row.get(5)?,
                        created_at_ms: row.get(6)?,
                    })
                })
                .optional()?)
        })
        .await
    }

    async fn insert_code(
        &self,
        hash: &TokenHash,
        code: &CodeRecord,
        now_ms: i64,
    ) -> StoreResult<()> {
        let (hash, code) = (*hash, code.clone());
        self.write(move |tx| {
            tx.prepare_cached("DELETE FROM oauth_codes WHERE expires_at < ?1")?
                .execute([now_ms])?;
            let inserted = tx
                .prepare_cached(
                    "INSERT INTO oauth_codes
                       (hash, client_id, user, redirect_uri, scopes, challenge, expires_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
                )?
                .execute(params![
                    &hash[..],
                    code.client_id,
                    code.user,
                    code.redirect_uri,
                    code.scopes,
                    code.challenge,
                    code.expires_at_ms
                ])?;
            if inserted == 0 {
                return Err(StoreError::Conflict("authorization code".to_owned()));
            }
            Ok(())
        })
        .await
    }

    /// One `DELETE ... RETURNING`: the row is gone in the statement that reads it.
    async fn take_code(&self, hash: &TokenHash) -> StoreResult<Option<CodeRecord>> {
        let hash = *hash;
        self.write(move |tx| {
            Ok(tx
                .prepare_cached(
                    "DELETE FROM oauth_codes WHERE hash = ?1
                     RETURNING client_id, user, redirect_uri, scopes, challenge, expires_at",
                )?
                .query_row([&hash[..]], |row| {
                    Ok(CodeRecord {
                        client_id: row.get(0)?,
                        user: row.get(1)?,
                        redirect_uri: row.get(2)?,
                        scopes: row.get(3)?,
                        challenge: row.get(4)?,
                        expires_at_ms: row.get(5)?,
                    })
                })
                .optional()?)
        })
        .await
    }

    async fn insert_access(&self, hash: &TokenHash, access: &AccessRecord) -> StoreResult<()> {
        let (hash, access) = (*hash, access.clone());
        self.write(move |tx| {
            let inserted = tx
                .prepare_cached(
                    "INSERT INTO oauth_tokens
                       (hash, token_id, user, client_id, scopes, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
                )?
                .execute(params![
                    &hash[..],
                    access.id,
                    access.user,
                    access.client_id,
                    access.scopes,
                    access.created_at_ms
                ])?;
            if inserted == 0 {
                return Err(StoreError::Conflict(format!("token {}", access.id)));
            }
            Ok(())
        })
        .await
    }

    async fn access_by_hash(&self, hash: &TokenHash) -> StoreResult<Option<AccessRecord>> {
        let hash = *hash;
        self.read_inline(move |conn| {
            Ok(conn
                .prepare_cached(
                    "SELECT token_id, user, client_id, scopes, created_at
                     FROM oauth_tokens WHERE hash = ?1",
                )?
                .query_row([&hash[..]], |row| {
                    Ok(AccessRecord {
                        id: row.get(0)?,
                        user: row.get(1)?,
                        client_id: row.get(2)?,
                        scopes: row.get(3)?,
                        created_at_ms: row.get(4)?,
                    })
                })
                .optional()?)
        })
        .await
    }

    async fn revoke_access(&self, hash: &TokenHash, client_id: &str) -> StoreResult<bool> {
        let (hash, client_id) = (*hash, client_id.to_owned());
        self.write(move |tx| {
            let deleted = tx
                .prepare_cached("DELETE FROM oauth_tokens WHERE hash = ?1 AND client_id = ?2")?
                .execute(params![&hash[..], client_id])?;
            Ok(deleted > 0)
        })
        .await
    }

    async fn insert_refresh(&self, hash: &TokenHash, refresh: &RefreshRecord) -> StoreResult<()> {
        let (hash, r) = (*hash, refresh.clone());
        self.write(move |tx| {
            let inserted = tx
                .prepare_cached(
                    "INSERT INTO oauth_refresh
                       (hash, token_id, user, client_id, scopes, access_hash, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
                )?
                .execute(params![
                    &hash[..],
                    r.id,
                    r.user,
                    r.client_id,
                    r.scopes,
                    &r.access_hash[..],
                    r.created_at_ms
                ])?;
            if inserted == 0 {
                return Err(StoreError::Conflict(format!("refresh token {}", r.id)));
            }
            Ok(())
        })
        .await
    }

    async fn take_refresh(&self, hash: &TokenHash) -> StoreResult<Option<RefreshRecord>> {
        let hash = *hash;
        self.write(move |tx| {
            Ok(tx
                .prepare_cached(
                    "DELETE FROM oauth_refresh WHERE hash = ?1
                     RETURNING token_id, user, client_id, scopes, access_hash, created_at",
                )?
                .query_row([&hash[..]], |row| {
                    Ok(RefreshRecord {
                        id: row.get(0)?,
                        user: row.get(1)?,
                        client_id: row.get(2)?,
                        scopes: row.get(3)?,
                        access_hash: hash_of(row.get(4)?),
                        created_at_ms: row.get(5)?,
                    })
                })
                .optional()?)
        })
        .await
    }

    async fn revoke_refresh(&self, hash: &TokenHash, client_id: &str) -> StoreResult<bool> {
        let (hash, client_id) = (*hash, client_id.to_owned());
        self.write(move |tx| {
            let deleted = tx
                .prepare_cached("DELETE FROM oauth_refresh WHERE hash = ?1 AND client_id = ?2")?
                .execute(params![&hash[..], client_id])?
                + tx.prepare_cached(
                    "DELETE FROM oauth_refresh WHERE access_hash = ?1 AND client_id = ?2",
                )?
                .execute(params![&hash[..], client_id])?;
            Ok(deleted > 0)
        })
        .await
    }
}

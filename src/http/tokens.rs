//! `/v1/users/{id}/tokens`: more API tokens, and revoking them (`auth.mode = token`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;
use super::auth::Owner;
use super::error::{ApiResult, Json, Problem};
use crate::domain::format_time_ms;
use crate::service::IssuedToken;

/// A token, shown once: only its hash is stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenBody {
    /// Names the token, to revoke it.
    #[schema(example = "9f86d081884c7d65")]
    pub id: String,
    /// Send as `Authorization: Bearer <token>`.
    #[schema(example = "q2xUuYVZ6v0Xn5b8hC1m3h1oL8ZbW2t2jX0yK4dY7rA")]
    pub token: String,
    #[schema(example = "2026-11-22T14:00:00.000Z")]
    pub created_at: String,
}

impl From<IssuedToken> for TokenBody {
    fn from(token: IssuedToken) -> Self {
        TokenBody {
            id: token.id,
            token: token.token,
            created_at: format_time_ms(token.created_at_ms),
        }
    }
}

/// Issue another API token for the caller.
#[utoipa::path(
    post, path = "/v1/users/{id}/tokens", tag = "users",
    params(("id" = String, Path, description = "The caller's user id")),
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Issued; the token is shown only now", body = TokenBody),
        (status = 404, description = "Tokens are not issued in this auth mode", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn issue_token(
    State(state): State<AppState>,
    Owner(id): Owner,
) -> ApiResult<(StatusCode, Json<TokenBody>)> {
    let token = state.social.issue_token(&id).await?;
    Ok((StatusCode::CREATED, Json(token.into())))
}

/// Revoke one of the caller's tokens. Other processes may accept it for up to
/// `auth.token_cache_ttl` more.
#[utoipa::path(
    delete, path = "/v1/users/{id}/tokens/{token_id}", tag = "users",
    params(("id" = String, Path, description = "The caller's user id"), ("token_id" = String, Path, description = "Token id")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Revoked"),
        (status = 404, description = "No such token", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn revoke_token(
    State(state): State<AppState>,
    Owner(id): Owner,
    Path((_owner, token_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    state.social.revoke_token(&id, &token_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

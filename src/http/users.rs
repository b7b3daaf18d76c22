//! `/v1/users`: profiles.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::Owner;
use super::error::{ApiError, ApiResult, Json, Problem};
use super::{AppState, known_user_id};
use crate::domain::{User, format_time_ms, validate_display_name, validate_user_id};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateUser {
    /// 1–32 characters of `[A-Za-z0-9_]`.
    #[schema(example = "alice", pattern = "^[A-Za-z0-9_]{1,32}$")]
    pub id: String,
    /// 1–64 characters, not all whitespace; defaults to the id.
    #[schema(
        example = "Alice",
        min_length = 1,
        max_length = 64,
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub display_name: Option<String>,
    /// Optional: 8–128 characters, for signing in to the Mastodon API (docs/mastodon-signin.md).
    /// Stored as an Argon2id hash only.
    #[schema(example = "correct horse battery", min_length = 8, max_length = 128, format = Password)]
    pub password: Option<String>,
}

/// Never prints the password.
impl std::fmt::Debug for CreateUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateUser")
            .field("id", &self.id)
            .field("display_name", &self.display_name)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetPassword {
    /// 8–128 characters. Stored as an Argon2id hash only.
    #[schema(example = "correct horse battery", min_length = 8, max_length = 128, format = Password)]
    pub password: String,
}

/// Never prints the password.
impl std::fmt::Debug for SetPassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SetPassword { .. }")
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateUser {
    /// 1–64 characters, not all whitespace.
    #[schema(
        example = "Alice L.",
        min_length = 1,
        max_length = 64,
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub display_name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UserBody {
    #[schema(example = "alice")]
    pub id: String,
    #[schema(example = "Alice")]
    pub display_name: String,
    pub followers_count: u64,
    pub following_count: u64,
    pub posts_count: u64,
    /// RFC 3339.
    #[schema(example = "2026-11-22T14:00:00.000Z")]
    pub created_at: String,
}

/// A new user, with their first API token when the server issues tokens.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedUser {
    #[serde(flatten)]
    pub user: UserBody,
    /// `auth.mode = token`: send as `Authorization: Bearer <token>`. Shown only now.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "q2xUuYVZ6v0Xn5b8hC1m3h1oL8ZbW2t2jX0yK4dY7rA")]
    pub token: Option<String>,
    /// Names the token, to revoke it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "9f86d081884c7d65")]
    pub token_id: Option<String>,
}

impl From<User> for UserBody {
    fn from(user: User) -> Self {
        UserBody {
            created_at: format_time_ms(user.created_at_ms),
            id: user.id,
            display_name: user.display_name,
            followers_count: user.followers_count,
            following_count: user.following_count,
            posts_count: user.posts_count,
        }
    }
}

/// Create a user. With `auth.mode = token` the answer carries their first API token.
#[utoipa::path(
    post, path = "/v1/users", tag = "users",
    request_body = CreateUser,
    responses(
        (status = 201, description = "Created", body = CreatedUser),
        (status = 409, description = "The id is taken", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid id, display name or password", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_user(
    State(state): State<AppState>,
    Json(body): Json<CreateUser>,
) -> ApiResult<(StatusCode, Json<CreatedUser>)> {
    validate_user_id(&body.id).map_err(ApiError::invalid)?;
    let display_name = body.display_name.unwrap_or_else(|| body.id.clone());
    validate_display_name(&display_name).map_err(ApiError::invalid)?;
    let (user, token) = match body.password.as_deref() {
        Some(password) => {
            state
                .social
                .register_with_password(&body.id, &display_name, Some(password))
                .await?
        }
        None => state.social.register(&body.id, &display_name).await?,
    };
    Ok((
        StatusCode::CREATED,
        Json(CreatedUser {
            user: user.into(),
            token_id: token.as_ref().map(|t| t.id.clone()),
            token: token.map(|t| t.token),
        }),
    ))
}

/// Get a user with their counters.
#[utoipa::path(
    get, path = "/v1/users/{id}", tag = "users",
    params(("id" = String, Path, description = "User id")),
    responses(
        (status = 200, description = "The user", body = UserBody),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_user(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<UserBody>> {
    known_user_id(&id)?;
    Ok(Json(state.social.user(&id).await?.into()))
}

/// Change a user's display name.
#[utoipa::path(
    patch, path = "/v1/users/{id}", tag = "users",
    params(("id" = String, Path, description = "User id")),
    request_body = UpdateUser,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The updated user", body = UserBody),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid display name", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn update_user(
    State(state): State<AppState>,
    Owner(id): Owner,
    Json(body): Json<UpdateUser>,
) -> ApiResult<Json<UserBody>> {
    known_user_id(&id)?;
    validate_display_name(&body.display_name).map_err(ApiError::invalid)?;
    Ok(Json(
        state.social.rename(&id, &body.display_name).await?.into(),
    ))
}

/// Set or replace the user's password (for the Mastodon API's sign-in).
#[utoipa::path(
    put, path = "/v1/users/{id}/password", tag = "users",
    params(("id" = String, Path, description = "User id")),
    request_body = SetPassword,
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Set"),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A password of the wrong length", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn set_password(
    State(state): State<AppState>,
    Owner(id): Owner,
    Json(body): Json<SetPassword>,
) -> ApiResult<StatusCode> {
    known_user_id(&id)?;
    state.social.set_password(&id, &body.password).await?;
    Ok(StatusCode::NO_CONTENT)
}

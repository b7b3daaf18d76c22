//! Authentication and authorization at the edge: extractors that name, in a handler's
//! signature, the identity it needs. [`Owner`] is the user in the path, proven by the
//! credentials; [`Caller`] is whoever the credentials say; [`Admin`] guards the
//! operations endpoints. Each authenticated request also draws from its user's read or
//! write bucket. With `auth.mode = none` they check nothing and limit nothing per user.

use axum::extract::{FromRequestParts, RawPathParams};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use super::AppState;
use super::error::ApiError;
use super::rate::Class;
use crate::service::AuthError;

/// The bearer credential of a request, if it sends one.
fn bearer(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, credential) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credential.trim())
}

/// The authenticated user, `None` only when authentication is off.
#[derive(Debug, Clone)]
pub struct Caller(pub Option<String>);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let user = match state.social.auth().authenticate(bearer(parts)).await {
            Ok(user) => user,
            Err(AuthError::Missing | AuthError::Invalid) => return Err(ApiError::unauthorized()),
            Err(AuthError::Store(error)) => return Err(error.into()),
        };
        if let Some(user) = &user {
            state.rate.check_user(user, Class::of(&parts.method))?;
        }
        Ok(Caller(user))
    }
}

/// Whoever valid credentials name, or `None` without any: for public reads that
/// answer differently to a user a block hides them from. Invalid credentials are still
/// a 401.
#[derive(Debug, Clone)]
pub struct Viewer(pub Option<String>);

impl FromRequestParts<AppState> for Viewer {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let user = match state.social.auth().authenticate(bearer(parts)).await {
            Ok(user) => user,
            Err(AuthError::Missing) => None,
            Err(AuthError::Invalid) => return Err(ApiError::unauthorized()),
            Err(AuthError::Store(error)) => return Err(error.into()),
        };
        if let Some(user) = &user {
            state.rate.check_user(user, Class::of(&parts.method))?;
        }
        Ok(Viewer(user))
    }
}

/// The `{id}` of the path, once the credentials proved the caller is that user:
/// otherwise 401 without valid credentials, 403 with someone else's.
#[derive(Debug, Clone)]
pub struct Owner(pub String);

impl FromRequestParts<AppState> for Owner {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Caller(caller) = Caller::from_request_parts(parts, state).await?;
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::not_found("no such resource"))?;
        let id = params
            .iter()
            .find(|(name, _)| *name == "id")
            .map(|(_, value)| value.to_owned())
            .ok_or_else(|| ApiError::not_found("no such resource"))?;
        match caller {
            Some(caller) if caller != id => Err(ApiError::forbidden(format!(
                "only {id} may do this; the credentials are {caller}'s"
            ))),
            _ => Ok(Owner(id)),
        }
    }
}

/// Access to `/metrics` and `/v1/workers`: with `auth.admin_token` set, only with that
/// bearer token.
pub struct Admin;

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if state.social.auth().admin_allowed(bearer(parts)) {
            Ok(Admin)
        } else {
            Err(ApiError::unauthorized())
        }
    }
}

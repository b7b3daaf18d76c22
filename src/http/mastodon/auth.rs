//! The Mastodon API's credentials: [`MastoAuth`] resolves `Authorization: Bearer` to a
//! [`Grant`] (a user or an app alone, and scopes): an OAuth access token, or a `/v1`
//! credential (API token or JWT), which holds every scope. A route requires a scope with
//! [`MastoAuth::require`] or the typed [`Scoped`] (`read:accounts` is satisfied by
//! `read` too; the follow family by `follow`). A missing or unknown token is 401
//! `{"error": "The access token is invalid"}`, a scope not granted 403 `{"error": "This
//! action is outside the authorized scopes"}`, as Mastodon answers. Each request with a
//! user draws from that user's read or write bucket, as on `/v1`.

use std::marker::PhantomData;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::StatusCode;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};

use super::error::MastoError;
use crate::http::AppState;
use crate::http::rate::{Class, StandingSlot};
use crate::service::AuthError;
pub use crate::service::oauth::Grant;

/// The bearer credential of a request, if it sends one.
pub(super) fn bearer(parts: &Parts) -> Option<&str> {
    bearer_value(&parts.headers)
}

/// The bearer credential of `headers`, if they send one.
pub(super) fn bearer_value(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, credential) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credential.trim())
}

/// A request's grant, whatever its scopes.
#[derive(Debug, Clone)]
pub struct MastoAuth(pub Grant);

impl FromRequestParts<AppState> for MastoAuth {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let grant = match state.social.grant(bearer(parts)).await {
            Ok(grant) => grant,
            Err(AuthError::Missing | AuthError::Invalid) => {
                return Err(MastoError::unauthorized().into_response());
            }
            Err(AuthError::Store(error)) => return Err(MastoError::from(error).into_response()),
        };
        if let Some(user) = &grant.user {
            let slot = parts.extensions.get::<StandingSlot>();
            state
                .rate
                .check_user_into(user, Class::of(&parts.method), slot)
                .map_err(IntoResponse::into_response)?;
        }
        Ok(MastoAuth(grant))
    }
}

impl MastoAuth {
    /// 403 unless the grant holds one of `any_of`.
    pub fn require(&self, any_of: &[&str]) -> Result<(), MastoError> {
        if self.0.scopes.satisfies_any(any_of) {
            Ok(())
        } else {
            Err(MastoError::outside_scopes())
        }
    }

    /// The user the token acts for; an app's own token has none (422, as Mastodon).
    pub fn user(&self) -> Result<&str, MastoError> {
        self.0
            .user
            .as_deref()
            .ok_or_else(|| MastoError::unprocessable("This method requires an authenticated user"))
    }
}

/// The scopes a route needs: any one of them.
pub trait RequiredScope: Send + Sync + 'static {
    const ANY_OF: &'static [&'static str];
}

/// A grant that holds `S`, or the request is refused (401, then 403).
#[derive(Debug, Clone)]
pub struct Scoped<S: RequiredScope>(pub MastoAuth, PhantomData<S>);

impl<S: RequiredScope> std::ops::Deref for Scoped<S> {
    type Target = MastoAuth;
    fn deref(&self) -> &MastoAuth {
        &self.0
    }
}

impl<S: RequiredScope> FromRequestParts<AppState> for Scoped<S> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let auth = MastoAuth::from_request_parts(parts, state).await?;
        auth.require(S::ANY_OF)
            .map_err(IntoResponse::into_response)?;
        Ok(Scoped(auth, PhantomData))
    }
}

/// Credentials that may be absent (public reads): with a token, it must hold `S`.
pub struct MaybeScoped<S: RequiredScope>(pub Option<MastoAuth>, PhantomData<S>);

impl<S: RequiredScope> FromRequestParts<AppState> for MaybeScoped<S> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        if bearer(parts).is_none() {
            return Ok(MaybeScoped(None, PhantomData));
        }
        let auth = Scoped::<S>::from_request_parts(parts, state).await?;
        Ok(MaybeScoped(Some(auth.0), PhantomData))
    }
}

impl<S: RequiredScope> MaybeScoped<S> {
    /// The token's user, if there is a token and it has one.
    pub fn viewer(&self) -> Option<&str> {
        self.0.as_ref().and_then(|a| a.0.user.as_deref())
    }
}

macro_rules! scopes {
    ($($(#[$doc:meta])* $name:ident => [$($scope:literal),+];)+) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;
        impl RequiredScope for $name {
            const ANY_OF: &'static [&'static str] = &[$($scope),+];
        }
    )+};
}

scopes! {
    /// `verify_credentials`: `read:accounts`, or `profile` alone.
    ReadProfile => ["read:accounts", "profile"];
    ReadAccounts => ["read:accounts"];
    WriteAccounts => ["write:accounts"];
    ReadStatuses => ["read:statuses"];
    WriteStatuses => ["write:statuses"];
    ReadNotifications => ["read:notifications"];
    WriteNotifications => ["write:notifications"];
    WriteFavourites => ["write:favourites"];
    ReadFavourites => ["read:favourites"];
    ReadFollows => ["read:follows"];
    WriteFollows => ["write:follows"];
    ReadBlocks => ["read:blocks"];
    WriteBlocks => ["write:blocks"];
    ReadMutes => ["read:mutes"];
    WriteMutes => ["write:mutes"];
    ReadSearch => ["read:search"];
    ReadLists => ["read:lists"];
    ReadFilters => ["read:filters"];
    Push => ["push"];
}

/// The client's address (the peer, or behind a trusted proxy its `X-Forwarded-For`),
/// for the sign-in limits.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub IpAddr);

impl FromRequestParts<AppState> for ClientAddr {
    type Rejection = (StatusCode, &'static str);

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip());
        Ok(ClientAddr(state.rate.client_ip(peer, &parts.headers)))
    }
}

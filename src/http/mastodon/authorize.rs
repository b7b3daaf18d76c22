//! The authorize page, `/oauth/authorize` (also with a trailing slash, as toot asks):
//! server-rendered HTML, usable without JavaScript. `GET` checks the request (a known
//! app, one of its registered redirect URIs exactly, scopes within its own, PKCE S256
//! only) and shows a form naming the app and the scopes; an error there is a page,
//! never a redirect. `POST` checks the form's CSRF token (an HMAC over the request's
//! fields, `service::oauth::forms`), then either denies (a redirect with
//! `error=access_denied`) or signs the user in under the sign-in limits and redirects
//! with `code=` and `state=`; `urn:ietf:wg:oauth:2.0:oob` shows the code on a page.

use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use super::auth::ClientAddr;
use super::form::FormOrJson;
use crate::http::AppState;
use crate::service::oauth::{AuthorizeRequest, OAuthError, OOB_URI};

/// An authorization request, as the query of `GET` or the fields of `POST`.
#[derive(Debug, Default, Deserialize, IntoParams)]
pub struct AuthorizeQuery {
    /// `code`.
    pub response_type: Option<String>,
    pub client_id: Option<String>,
    pub redirect_uri: Option<String>,
    /// Space-separated; the app's scopes when absent.
    pub scope: Option<String>,
    /// Returned unchanged with the code.
    pub state: Option<String>,
    /// PKCE: BASE64URL(SHA-256(verifier)).
    pub code_challenge: Option<String>,
    /// `S256` (the only one served).
    pub code_challenge_method: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct AuthorizeForm {
    #[serde(flatten)]
    pub request: AuthorizeQuery,
    pub csrf: Option<String>,
    pub user: Option<String>,
    pub password: Option<String>,
    /// `approve` or `deny`.
    pub decision: Option<String>,
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An HTML page: not framed, not cached, no referrer, no script.
fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{}</title>\
         <style>body{{font-family:sans-serif;max-width:32em;margin:2em auto;padding:0 1em}}\
         label,input,button{{display:block;margin:.5em 0}}.error{{color:#b00}}</style></head>\
         <body><h1>{}</h1>{body}</body></html>",
        escape(title),
        escape(title)
    );
    let mut response = (status, html).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
        ),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

fn error_page(status: StatusCode, message: &str) -> Response {
    page(
        status,
        "Authorization failed",
        &format!("<p class=\"error\">{}</p>", escape(message)),
    )
}

fn refused(error: OAuthError) -> Response {
    match error {
        OAuthError::Store(error) => {
            tracing::error!(error = %format!("{error:#}"), "storage failure");
            error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service unavailable; try again.",
            )
        }
        OAuthError::TooManyAttempts => {
            error_page(StatusCode::TOO_MANY_REQUESTS, &error.to_string())
        }
        other => error_page(StatusCode::BAD_REQUEST, &other.to_string()),
    }
}

/// The fields the CSRF token binds, in order.
fn bound_fields<'a>(
    request: &'a AuthorizeRequest,
    query: &'a AuthorizeQuery,
    scope: &'a str,
) -> [&'a str; 6] {
    [
        request.app.client_id.as_str(),
        request.redirect_uri.as_str(),
        scope,
        query.state.as_deref().unwrap_or(""),
        query.code_challenge.as_deref().unwrap_or(""),
        query.code_challenge_method.as_deref().unwrap_or(""),
    ]
}

async fn checked(state: &AppState, query: &AuthorizeQuery) -> Result<AuthorizeRequest, Response> {
    if query.response_type.as_deref().unwrap_or("code") != "code" {
        return Err(error_page(
            StatusCode::BAD_REQUEST,
            "response_type must be code",
        ));
    }
    if query
        .code_challenge
        .as_deref()
        .is_some_and(|c| !c.is_empty())
        && query.code_challenge_method.as_deref() != Some("S256")
    {
        return Err(error_page(
            StatusCode::BAD_REQUEST,
            "code_challenge_method must be S256",
        ));
    }
    let client_id = query.client_id.as_deref().unwrap_or("");
    state
        .social
        .authorize_request(
            client_id,
            query.redirect_uri.as_deref(),
            query.scope.as_deref(),
        )
        .await
        .map_err(refused)
}

fn form(
    state: &AppState,
    request: &AuthorizeRequest,
    query: &AuthorizeQuery,
    error: Option<&str>,
    user: &str,
) -> Response {
    let scope = request.scopes.to_string();
    let csrf = state
        .social
        .form_token(&bound_fields(request, query, &scope));
    let hidden = |name: &str, value: &str| {
        format!(
            "<input type=\"hidden\" name=\"{name}\" value=\"{}\">",
            escape(value)
        )
    };
    let scopes: String = request
        .scopes
        .iter()
        .map(|s| format!("<li><code>{}</code></li>", escape(s)))
        .collect();
    let body = format!(
        "{error}<p><strong>{app}</strong> asks to act for you on this server with these scopes:</p>\
         <ul>{scopes}</ul>\
         <form method=\"post\" action=\"/oauth/authorize\">{hidden}\
         <label for=\"user\">User id</label><input id=\"user\" name=\"user\" autocomplete=\"username\" value=\"{user}\">\
         <label for=\"password\">Password (or your API token, if you have set no password)</label>\
         <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\">\
         <button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>\
         <button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></form>",
        error = error.map_or(String::new(), |e| format!(
            "<p class=\"error\">{}</p>",
            escape(e)
        )),
        app = escape(&request.app.name),
        user = escape(user),
        hidden = [
            hidden("client_id", &request.app.client_id),
            hidden("redirect_uri", &request.redirect_uri),
            hidden("scope", &scope),
            hidden("state", query.state.as_deref().unwrap_or("")),
            hidden(
                "code_challenge",
                query.code_challenge.as_deref().unwrap_or("")
            ),
            hidden(
                "code_challenge_method",
                query.code_challenge_method.as_deref().unwrap_or("")
            ),
            hidden("response_type", "code"),
            hidden("csrf", &csrf),
        ]
        .concat(),
    );
    let status = if error.is_some() {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::OK
    };
    page(status, "Authorize an application", &body)
}

/// Where to send the browser: the registered URI with `params` added to its query.
fn redirect(uri: &str, params: &[(&str, &str)]) -> Response {
    let query = serde_urlencoded::to_string(params).unwrap_or_default();
    let separator = if uri.contains('?') { '&' } else { '?' };
    let location = format!("{uri}{separator}{query}");
    match HeaderValue::from_str(&location) {
        Ok(value) => {
            let mut response = StatusCode::FOUND.into_response();
            response.headers_mut().insert(header::LOCATION, value);
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(_) => error_page(StatusCode::BAD_REQUEST, "the redirect URI cannot be used"),
    }
}

/// The sign-in and approval page.
#[utoipa::path(get, path = "/oauth/authorize", tag = "mastodon",
    params(AuthorizeQuery),
    responses(
        (status = 200, description = "The form: the app, its scopes, sign-in, approve or deny", content_type = "text/html"),
        (status = 400, description = "An unknown app, an unregistered redirect URI, scopes beyond the app's, or PKCE other than S256: a page, never a redirect", content_type = "text/html"),
    ))]
pub async fn authorize_page(
    State(state): State<AppState>,
    Query(query): Query<AuthorizeQuery>,
) -> Response {
    match checked(&state, &query).await {
        Ok(request) => form(&state, &request, &query, None, ""),
        Err(page) => page,
    }
}

/// The form's answer: approve (with credentials) or deny.
#[utoipa::path(post, path = "/oauth/authorize", tag = "mastodon",
    request_body(content = String, content_type = "application/x-www-form-urlencoded",
        description = "The form's fields: the request's, `csrf`, `user`, `password`, `decision`"),
    responses(
        (status = 302, description = "To the redirect URI with `code` and `state`, or `error=access_denied`"),
        (status = 200, description = "The code, for urn:ietf:wg:oauth:2.0:oob", content_type = "text/html"),
        (status = 400, description = "The request does not hold (as for GET)", content_type = "text/html"),
        (status = 401, description = "Wrong credentials: the form again", content_type = "text/html"),
        (status = 403, description = "A missing, wrong or expired CSRF token", content_type = "text/html"),
        (status = 429, description = "Too many failed sign-ins for the user or from the address", content_type = "text/html"),
    ))]
pub async fn authorize_submit(
    State(state): State<AppState>,
    ClientAddr(address): ClientAddr,
    FormOrJson(submitted): FormOrJson<AuthorizeForm>,
) -> Response {
    let query = &submitted.request;
    let request = match checked(&state, query).await {
        Ok(request) => request,
        Err(page) => return page,
    };
    let scope = request.scopes.to_string();
    let csrf = submitted.csrf.as_deref().unwrap_or("");
    if !state
        .social
        .form_token_holds(csrf, &bound_fields(&request, query, &scope))
    {
        return error_page(
            StatusCode::FORBIDDEN,
            "This form was not issued here, or has expired: open the authorization link again.",
        );
    }
    let oob = request.redirect_uri == OOB_URI;
    let client_state = query.state.as_deref().unwrap_or("");
    if submitted.decision.as_deref() != Some("approve") {
        if oob {
            return page(
                StatusCode::OK,
                "Authorization denied",
                "<p>You denied the application access.</p>",
            );
        }
        let mut params = vec![("error", "access_denied")];
        if !client_state.is_empty() {
            params.push(("state", client_state));
        }
        return redirect(&request.redirect_uri, &params);
    }
    let user = submitted.user.as_deref().unwrap_or("").trim();
    let password = submitted.password.as_deref().unwrap_or("");
    match state.social.sign_in(user, password, address).await {
        Ok(()) => {}
        Err(OAuthError::InvalidGrant(why)) => {
            return form(&state, &request, query, Some(&why), user);
        }
        Err(other) => return refused(other),
    }
    let code = match state
        .social
        .issue_code(
            &request,
            user,
            query.code_challenge.as_deref(),
            query.code_challenge_method.as_deref(),
        )
        .await
    {
        Ok(code) => code,
        Err(error) => return refused(error),
    };
    if oob {
        return page(
            StatusCode::OK,
            "Authorization code",
            &format!(
                "<p>Copy this code into the application:</p><p><code id=\"code\">{}</code></p>",
                escape(&code)
            ),
        );
    }
    let mut params = vec![("code", code.as_str())];
    if !client_state.is_empty() {
        params.push(("state", client_state));
    }
    redirect(&request.redirect_uri, &params)
}

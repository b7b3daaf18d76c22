//! The OpenAPI document: the operations, the security schemes, and the responses every
//! operation shares (401/403 for user-scoped ones, 400/413/415 for those with a JSON
//! body, 429, 431, 503), as served at `/openapi.json` and committed to
//! `openapi/openapi.json`.

use utoipa::OpenApi;

use super::{
    activity, engagement, error, events, follows, listings, mastodon, notifications, ops, posts,
    relations, reposts, threads, timeline, tokens, trends, users,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "socialite",
        description = "A social feed service: users, a follow graph, posts and home timelines built by a configurable fan-out strategy."
    ),
    paths(
        users::create_user, users::get_user, users::update_user,
        tokens::issue_token, tokens::revoke_token,
        follows::follow, follows::unfollow, follows::list_following, follows::list_followers,
        relations::block, relations::unblock, relations::list_blocks,
        relations::mute, relations::unmute, relations::list_mutes,
        posts::create_post, posts::get_post, posts::delete_post, posts::list_posts,
        reposts::repost, reposts::unrepost,
        engagement::list_likers, engagement::list_reposters,
        threads::context,
        timeline::timeline, events::timeline_stream, events::list_events,
        trends::tag, trends::trends, listings::tag_posts, listings::public_timeline,
        activity::like, activity::unlike, activity::list_activity,
        notifications::list_notifications, notifications::get_notification,
        notifications::dismiss_notification, notifications::clear_notifications,
        ops::healthz, ops::readyz, ops::metrics, ops::openapi, ops::meta, ops::workers,
        mastodon::instance_v1, mastodon::instance_v2, mastodon::nodeinfo_links, mastodon::nodeinfo,
        mastodon::apps::create_app, mastodon::apps::verify_app,
        mastodon::oauth::token_endpoint, mastodon::oauth::revoke, mastodon::oauth::metadata,
        mastodon::authorize::authorize_page, mastodon::authorize::authorize_submit,
        mastodon::registration::register, mastodon::registration::verify_credentials,
        mastodon::markers::markers, mastodon::markers::save_markers, mastodon::stubs::custom_emojis,
        mastodon::stubs::lists, mastodon::stubs::followed_tags, mastodon::stubs::filters_v2,
        mastodon::stubs::filters_v1, mastodon::stubs::announcements, mastodon::stubs::preferences,
        mastodon::search::trending_tags, mastodon::search::trends, mastodon::search::search,
        mastodon::accounts::get_account, mastodon::accounts::lookup,
        mastodon::accounts::update_credentials, mastodon::account_statuses::statuses,
        mastodon::accounts::followers, mastodon::accounts::following, mastodon::accounts::follow,
        mastodon::accounts::unfollow, mastodon::accounts::block, mastodon::accounts::unblock,
        mastodon::accounts::mute, mastodon::accounts::unmute,
        mastodon::relationships::relationships, mastodon::relationships::blocks,
        mastodon::relationships::mutes,
        mastodon::streaming::sse::health, mastodon::streaming::sse::user,
        mastodon::streaming::sse::user_notification, mastodon::streaming::sse::public,
        mastodon::streaming::sse::hashtag, mastodon::streaming::sse::public_local,
        mastodon::streaming::sse::hashtag_local, mastodon::streaming::ws::socket,
        mastodon::statuses::create_status, mastodon::statuses::get_status,
        mastodon::statuses::delete_status, mastodon::statuses::status_context,
        mastodon::statuses::favourite, mastodon::statuses::unfavourite,
        mastodon::statuses::reblog, mastodon::statuses::unreblog,
        mastodon::timelines::home, mastodon::notifications::notifications,
        mastodon::notifications::grouped_notifications,
        mastodon::engagement::favourited_by, mastodon::engagement::reblogged_by,
        mastodon::notifications::notification, mastodon::notifications::dismiss,
        mastodon::notifications::dismiss_by_form, mastodon::notifications::clear,
        mastodon::timelines::public, mastodon::timelines::tag,
        mastodon::entities::account::placeholder_image,
        users::set_password,
    ),
    components(schemas(error::Problem, mastodon::error::MastoErrorBody)),
    modifiers(&SecuritySchemes),
    tags(
        (name = "users", description = "Profiles"),
        (name = "graph", description = "The follow graph"),
        (name = "relations", description = "Blocks and mutes, private to their owner"),
        (name = "posts", description = "Content"),
        (name = "timeline", description = "Home timelines"),
        (name = "events", description = "The event log"),
        (name = "trends", description = "Hashtag counts"),
        (name = "activity", description = "Likes and the user activity log"),
        (name = "notifications", description = "What others did to a user: follows, likes, reposts, replies, mentions"),
        (name = "operations", description = "Health, metrics and metadata"),
        (name = "mastodon", description = "The Mastodon-compatible client API (docs/mastodon.md)"),
    )
)]
pub struct ApiDoc;

/// `bearer`: a user's API token (`auth.mode = token`) or a JWT (`jwt`); `admin`:
/// `auth.admin_token`.
struct SecuritySchemes;

impl utoipa::Modify for SecuritySchemes {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The user's API token (auth.mode = token) or a JWT whose sub is the user id (auth.mode = jwt)",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "admin",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("auth.admin_token, when set"))
                    .build(),
            ),
        );
    }
}

/// The spec, as served and as committed to `openapi/openapi.json`.
pub fn api_doc() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    // utoipa copies Cargo.toml's license field, which this crate does not set.
    doc.info.license = None;
    document_unavailable(&mut doc);
    document_header_limit(&mut doc);
    document_auth_and_limits(&mut doc);
    document_json_bodies(&mut doc);
    document_mastodon_errors(&mut doc);
    doc
}

/// Under the Mastodon API's paths every error is `{"error": ...}` as `application/json`
/// (`mastodon::error::rewrite_problems`), including the shared ones added above.
fn document_mastodon_errors(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{ContentBuilder, Ref, RefOr};
    let json = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name("MastoErrorBody")))
        .build();
    for (path, operation) in operations(doc) {
        if !mastodon::error::is_mastodon_path(path) {
            continue;
        }
        for response in operation.responses.responses.values_mut() {
            if let RefOr::T(response) = response
                && response
                    .content
                    .shift_remove("application/problem+json")
                    .is_some()
            {
                response
                    .content
                    .insert("application/json".to_owned(), json.clone());
            }
        }
    }
}

fn problem_response(description: &str, headers: &[(&str, &str)]) -> utoipa::openapi::Response {
    use utoipa::openapi::{
        ContentBuilder, HeaderBuilder, ObjectBuilder, Ref, ResponseBuilder, Type,
    };
    let mut response = ResponseBuilder::new().description(description).content(
        "application/problem+json",
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name("Problem")))
            .build(),
    );
    for (name, about) in headers {
        let kind = if *name == "WWW-Authenticate" {
            Type::String
        } else {
            Type::Integer
        };
        response = response.header(
            *name,
            HeaderBuilder::new()
                .schema(ObjectBuilder::new().schema_type(kind))
                .description(Some(*about))
                .build(),
        );
    }
    response.build()
}

/// Every operation that names the `bearer` scheme answers 401 without valid
/// credentials and 403 with another user's; every operation but the health checks can
/// answer 429 (the per-address limit, and the per-user ones where authenticated).
fn document_auth_and_limits(doc: &mut utoipa::openapi::OpenApi) {
    let unauthorized = problem_response(
        "Missing or invalid credentials (the same answer for an unknown user)",
        &[("WWW-Authenticate", "Bearer")],
    );
    let forbidden = problem_response("The credentials are another user's", &[]);
    let limited = problem_response(
        "A rate limit was reached",
        &[
            ("Retry-After", "Seconds until a request would be allowed"),
            ("RateLimit-Limit", "Requests allowed a minute"),
            ("RateLimit-Remaining", "Requests left now: 0"),
            (
                "RateLimit-Reset",
                "Seconds until a request would be allowed",
            ),
        ],
    );
    for (path, operation) in operations(doc) {
        let responses = &mut operation.responses.responses;
        let user_scheme = operation.security.iter().flatten().any(|requirement| {
            serde_json::to_value(requirement).is_ok_and(|v| v.get("bearer").is_some())
        });
        if user_scheme {
            responses
                .entry("401".to_owned())
                .or_insert_with(|| unauthorized.clone().into());
            responses
                .entry("403".to_owned())
                .or_insert_with(|| forbidden.clone().into());
        }
        if path != "/healthz" && path != "/readyz" {
            responses
                .entry("429".to_owned())
                .or_insert_with(|| limited.clone().into());
        }
    }
}

/// Every operation that takes a JSON body reads it with the `Json` extractor, whose
/// rejections are the same everywhere: 400 for malformed JSON, 413 past
/// `server.body_limit_bytes`, 415 without `Content-Type: application/json` (422, a body
/// of the wrong shape, each operation documents with its own validation).
fn document_json_bodies(doc: &mut utoipa::openapi::OpenApi) {
    let rejections = [
        ("400", problem_response("Malformed JSON", &[])),
        ("413", problem_response("Body too large", &[])),
        ("415", problem_response("Not JSON", &[])),
    ];
    for (_, operation) in operations(doc) {
        if operation.request_body.is_none() {
            continue;
        }
        for (code, response) in &rejections {
            operation
                .responses
                .responses
                .entry((*code).to_owned())
                .or_insert_with(|| response.clone().into());
        }
    }
}

/// Every operation can answer 503: any request that runs past `server.request_timeout`,
/// and any that touches storage when storage fails. Added here once rather than on each
/// handler.
fn document_unavailable(doc: &mut utoipa::openapi::OpenApi) {
    let response = problem_response(
        "Storage unavailable or the request timed out; retry after `Retry-After` seconds",
        &[("Retry-After", "Seconds to wait before retrying")],
    );
    for (_, operation) in operations(doc) {
        operation
            .responses
            .responses
            .entry("503".to_owned())
            .or_insert_with(|| response.clone().into());
    }
}

/// Every operation answers 431 to a request with more than `MAX_HEADERS` header fields,
/// checked before routing (`server.rs`).
fn document_header_limit(doc: &mut utoipa::openapi::OpenApi) {
    let response = problem_response(
        &format!(
            "More than {} request header fields",
            super::server::MAX_HEADERS
        ),
        &[],
    );
    for (_, operation) in operations(doc) {
        operation
            .responses
            .responses
            .entry("431".to_owned())
            .or_insert_with(|| response.clone().into());
    }
}

/// Every operation of the document, with its path.
fn operations(
    doc: &mut utoipa::openapi::OpenApi,
) -> impl Iterator<Item = (&str, &mut utoipa::openapi::path::Operation)> {
    doc.paths.paths.iter_mut().flat_map(|(path, item)| {
        let utoipa::openapi::PathItem {
            get,
            put,
            post,
            delete,
            patch,
            ..
        } = item;
        [get, put, post, delete, patch]
            .into_iter()
            .flatten()
            .map(move |operation| (path.as_str(), operation))
    })
}

pub fn openapi_json() -> String {
    let mut json = api_doc()
        .to_pretty_json()
        .expect("the OpenAPI document serialises");
    json.push('\n');
    json
}

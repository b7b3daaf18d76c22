//! Discovery: the instance documents (v1 and v2) and NodeInfo, which clients read before
//! anything else (Mastodon.py parses `version`, toot reads `uri`, Elk reads
//! `configuration.urls.streaming`, megalodon reads NodeInfo's `software`).

use axum::extract::State;
use axum::http::HeaderMap;
use serde::Serialize;
use utoipa::ToSchema;

use super::Origin;
use crate::domain::MAX_POST_CHARS;
use crate::http::AppState;
use crate::http::error::Json;

/// The Mastodon API version whose behaviour this server follows, then its own.
fn version() -> String {
    format!(
        "4.3.0 (compatible; socialite {})",
        env!("CARGO_PKG_VERSION")
    )
}

/// The `repository` of Cargo.toml; empty while none is named.
const SOURCE_URL: &str = env!("CARGO_PKG_REPOSITORY");

#[derive(Debug, Serialize, ToSchema)]
pub struct UrlsV1 {
    /// Where the streaming API is (this server).
    #[schema(example = "wss://social.example")]
    pub streaming_api: String,
}

/// `GET /api/v1/instance`: Mastodon's v1 instance document (without `stats`).
#[derive(Debug, Serialize, ToSchema)]
pub struct InstanceV1 {
    /// The domain.
    #[schema(example = "social.example")]
    pub uri: String,
    pub title: String,
    pub short_description: String,
    pub description: String,
    pub email: String,
    #[schema(example = "4.3.0 (compatible; socialite 0.1.0)")]
    pub version: String,
    pub urls: UrlsV1,
    pub thumbnail: Option<String>,
    pub languages: Vec<String>,
    /// `true`: `POST /api/v1/accounts` registers users (with an app's token).
    pub registrations: bool,
    pub approval_required: bool,
    pub invites_enabled: bool,
    pub configuration: Configuration,
    pub rules: Vec<serde_json::Value>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Configuration {
    pub urls: ConfigurationUrls,
    pub statuses: StatusLimits,
    pub accounts: AccountLimits,
    pub translation: Translation,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConfigurationUrls {
    #[schema(example = "wss://social.example")]
    pub streaming: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StatusLimits {
    pub max_characters: usize,
    pub max_media_attachments: u32,
    pub characters_reserved_per_url: u32,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AccountLimits {
    pub max_featured_tags: u32,
    pub max_pinned_statuses: u32,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Translation {
    pub enabled: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Registrations {
    pub enabled: bool,
    pub approval_required: bool,
    pub message: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ApiVersions {
    /// Mastodon's API version number for 4.3.
    pub mastodon: u32,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Contact {
    pub email: String,
    pub account: Option<serde_json::Value>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Thumbnail {
    pub url: Option<String>,
}

/// `GET /api/v2/instance`: Mastodon's v2 instance document (without `usage`).
#[derive(Debug, Serialize, ToSchema)]
pub struct InstanceV2 {
    #[schema(example = "social.example")]
    pub domain: String,
    pub title: String,
    #[schema(example = "4.3.0 (compatible; socialite 0.1.0)")]
    pub version: String,
    pub source_url: String,
    pub description: String,
    pub thumbnail: Thumbnail,
    pub icon: Vec<serde_json::Value>,
    pub languages: Vec<String>,
    pub configuration: Configuration,
    pub registrations: Registrations,
    pub api_versions: ApiVersions,
    pub contact: Contact,
    pub rules: Vec<serde_json::Value>,
}

fn configuration(origin: &Origin) -> Configuration {
    Configuration {
        urls: ConfigurationUrls {
            streaming: origin.streaming(),
        },
        statuses: StatusLimits {
            max_characters: MAX_POST_CHARS,
            max_media_attachments: 0,
            characters_reserved_per_url: 23,
        },
        accounts: AccountLimits {
            max_featured_tags: 0,
            max_pinned_statuses: 0,
        },
        translation: Translation { enabled: false },
    }
}

fn description() -> String {
    "A social feed service with a Mastodon-compatible client API.".to_owned()
}

/// The v1 instance document. Also served at `/api/v1/instance/`, which Mastodon.py asks for.
#[utoipa::path(get, path = "/api/v1/instance", tag = "mastodon",
    responses((status = 200, description = "The instance", body = InstanceV1)))]
pub async fn instance_v1(State(state): State<AppState>, headers: HeaderMap) -> Json<InstanceV1> {
    let origin = Origin::of(&state.mastodon, &headers);
    Json(InstanceV1 {
        uri: origin.domain().to_owned(),
        title: state.mastodon.title.clone(),
        short_description: description(),
        description: description(),
        email: String::new(),
        version: version(),
        urls: UrlsV1 {
            streaming_api: origin.streaming(),
        },
        thumbnail: None,
        languages: vec!["en".to_owned()],
        registrations: true,
        approval_required: false,
        invites_enabled: false,
        configuration: configuration(&origin),
        rules: Vec::new(),
    })
}

/// The v2 instance document. Also served at `/api/v2/instance/`.
#[utoipa::path(get, path = "/api/v2/instance", tag = "mastodon",
    responses((status = 200, description = "The instance", body = InstanceV2)))]
pub async fn instance_v2(State(state): State<AppState>, headers: HeaderMap) -> Json<InstanceV2> {
    let origin = Origin::of(&state.mastodon, &headers);
    Json(InstanceV2 {
        domain: origin.domain().to_owned(),
        title: state.mastodon.title.clone(),
        version: version(),
        source_url: SOURCE_URL.to_owned(),
        description: description(),
        thumbnail: Thumbnail { url: None },
        icon: Vec::new(),
        languages: vec!["en".to_owned()],
        configuration: configuration(&origin),
        registrations: Registrations {
            enabled: true,
            approval_required: false,
            message: None,
        },
        api_versions: ApiVersions { mastodon: 2 },
        contact: Contact {
            email: String::new(),
            account: None,
        },
        rules: Vec::new(),
    })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NodeInfoLink {
    #[schema(example = "http://nodeinfo.diaspora.software/ns/schema/2.0")]
    pub rel: String,
    #[schema(example = "https://social.example/nodeinfo/2.0")]
    pub href: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NodeInfoLinks {
    pub links: Vec<NodeInfoLink>,
}

/// NodeInfo discovery: where the NodeInfo 2.0 document is.
#[utoipa::path(get, path = "/.well-known/nodeinfo", tag = "mastodon",
    responses((status = 200, description = "Links to the NodeInfo documents", body = NodeInfoLinks)))]
pub async fn nodeinfo_links(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Json<NodeInfoLinks> {
    let origin = Origin::of(&state.mastodon, &headers);
    Json(NodeInfoLinks {
        links: vec![NodeInfoLink {
            rel: "http://nodeinfo.diaspora.software/ns/schema/2.0".to_owned(),
            href: format!("{}/nodeinfo/2.0", origin.base()),
        }],
    })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Software {
    #[schema(example = "socialite")]
    pub name: String,
    pub version: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Services {
    pub inbound: Vec<String>,
    pub outbound: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Usage {
    /// Empty: the counts are not served.
    pub users: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Upstream {
    /// `mastodon`: the client API this server follows (megalodon detects it by this).
    pub name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NodeInfoMetadata {
    #[serde(rename = "nodeName")]
    pub node_name: String,
    pub upstream: Upstream,
}

/// NodeInfo 2.0.
#[derive(Debug, Serialize, ToSchema)]
pub struct NodeInfo {
    #[schema(example = "2.0")]
    pub version: String,
    pub software: Software,
    /// Empty: this server does not federate.
    pub protocols: Vec<String>,
    pub services: Services,
    #[serde(rename = "openRegistrations")]
    pub open_registrations: bool,
    pub usage: Usage,
    pub metadata: NodeInfoMetadata,
}

/// The NodeInfo 2.0 document (Elk reads this fixed path).
#[utoipa::path(get, path = "/nodeinfo/2.0", tag = "mastodon",
    responses((status = 200, description = "NodeInfo 2.0", body = NodeInfo)))]
pub async fn nodeinfo(State(state): State<AppState>) -> Json<NodeInfo> {
    Json(NodeInfo {
        version: "2.0".to_owned(),
        software: Software {
            name: "socialite".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
        protocols: Vec::new(),
        services: Services {
            inbound: Vec::new(),
            outbound: Vec::new(),
        },
        open_registrations: true,
        usage: Usage {
            users: serde_json::Map::new(),
        },
        metadata: NodeInfoMetadata {
            node_name: state.mastodon.title.clone(),
            upstream: Upstream {
                name: "mastodon".to_owned(),
            },
        },
    })
}

//! `GET`/`POST /api/v1/markers`: the user's reading positions in the `home` and
//! `notifications` timelines, which clients (Elk, Phanpy, Tusky, Ivory) sync across
//! devices. `last_read_id` is kept as the client sent it, never parsed as an id. Each
//! write moves its marker's version by one in one atomic upsert (`store::markers`), so
//! no write conflicts with another and Mastodon's 409 never happens here.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use super::auth::{ReadStatuses, Scoped, WriteStatuses};
use super::error::{MastoError, MastoErrorBody};
use super::form::{FormOrJson, StringOrList};
use crate::domain::format_time_ms;
use crate::domain::markers::{Marker, MarkerTimeline};
use crate::http::AppState;
use crate::http::error::Json;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MarkersQuery {
    /// `home`, `notifications`, as `timeline[]=home&timeline[]=notifications`; other
    /// names are ignored; none asked: `{}`.
    #[serde(default)]
    #[param(rename = "timeline[]", value_type = Vec<String>)]
    pub timeline: Option<StringOrList>,
}

/// Mastodon's Marker entity.
#[derive(Debug, Serialize, ToSchema)]
pub struct MarkerView {
    /// As the client sent it.
    #[schema(example = "113456789012345678")]
    pub last_read_id: String,
    /// 1 at the first write, one more at each.
    #[schema(example = 3)]
    pub version: u64,
    #[schema(example = "2026-11-28T08:30:00.000Z")]
    pub updated_at: String,
}

/// The markers by timeline: a key only for a timeline asked for (or written) that has one.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct Markers {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub home: Option<MarkerView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notifications: Option<MarkerView>,
}

impl Markers {
    fn new(markers: Vec<Marker>) -> Markers {
        let mut view = Markers::default();
        for marker in markers {
            let slot = match marker.timeline {
                MarkerTimeline::Home => &mut view.home,
                MarkerTimeline::Notifications => &mut view.notifications,
            };
            *slot = Some(MarkerView {
                last_read_id: marker.last_read_id,
                version: marker.version,
                updated_at: format_time_ms(marker.updated_at_ms),
            });
        }
        view
    }
}

/// The user's markers of the timelines asked for.
#[utoipa::path(get, path = "/api/v1/markers", tag = "mastodon",
    security(("bearer" = [])),
    params(MarkersQuery),
    responses(
        (status = 200, description = "A key per timeline asked for that has a marker", body = Markers),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:statuses", body = MastoErrorBody),
        (status = 422, description = "An app's own token (no user)", body = MastoErrorBody),
    ))]
pub async fn markers(
    State(state): State<AppState>,
    auth: Scoped<ReadStatuses>,
    FormOrJson(query): FormOrJson<MarkersQuery>,
) -> Result<Json<Markers>, MastoError> {
    let user = auth.user()?;
    let mut timelines: Vec<MarkerTimeline> = query
        .timeline
        .map(|names| names.items())
        .unwrap_or_default()
        .iter()
        .filter_map(|name| MarkerTimeline::parse(name))
        .collect();
    timelines.sort();
    timelines.dedup();
    Ok(Json(Markers::new(
        state.social.markers(user, &timelines).await?,
    )))
}

/// The positions a body sets: `home[last_read_id]=` (a form) or
/// `{"home": {"last_read_id": ..}}` (JSON), for each timeline; other keys are ignored.
fn positions(body: &Map<String, Value>) -> Result<Vec<(MarkerTimeline, String)>, MastoError> {
    let mut positions = Vec::new();
    for timeline in MarkerTimeline::ALL {
        let name = timeline.as_str();
        let value = match body.get(name) {
            Some(Value::Object(fields)) => Some(fields.get("last_read_id")),
            Some(_) => {
                return Err(MastoError::unprocessable(format!(
                    "Validation failed: {name} must hold last_read_id"
                )));
            }
            None => body.get(&format!("{name}[last_read_id]")).map(Some),
        };
        let id = match value {
            None => continue,
            Some(None) => {
                return Err(MastoError::unprocessable(format!(
                    "Validation failed: {name}[last_read_id] is missing"
                )));
            }
            Some(Some(Value::String(id))) => id.clone(),
            Some(Some(Value::Number(n))) if n.is_u64() => n.to_string(),
            Some(_) => {
                return Err(MastoError::unprocessable(format!(
                    "Validation failed: {name}[last_read_id] must be a string"
                )));
            }
        };
        positions.push((timeline, id));
    }
    Ok(positions)
}

/// Saves the user's position in each timeline given; answers the markers written.
#[utoipa::path(post, path = "/api/v1/markers", tag = "mastodon",
    security(("bearer" = [])),
    request_body(content = serde_json::Value,
        description = "`home[last_read_id]`, `notifications[last_read_id]` (a form), or \
                       `{\"home\": {\"last_read_id\": \"..\"}}` (JSON): 1 to 64 printable ASCII \
                       characters, kept as sent",
        content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The markers written, each at its new version", body = Markers),
        (status = 400, description = "A malformed body", body = MastoErrorBody),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks write:statuses", body = MastoErrorBody),
        (status = 422, description = "A bad last_read_id, or an app's own token (no user)", body = MastoErrorBody),
    ))]
pub async fn save_markers(
    State(state): State<AppState>,
    auth: Scoped<WriteStatuses>,
    FormOrJson(body): FormOrJson<Map<String, Value>>,
) -> Result<Json<Markers>, MastoError> {
    let user = auth.user()?;
    let positions = positions(&body)?;
    Ok(Json(Markers::new(
        state.social.set_markers(user, &positions).await?,
    )))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(body: Value) -> Result<Vec<(MarkerTimeline, String)>, MastoError> {
        let Value::Object(map) = body else {
            unreachable!()
        };
        positions(&map)
    }

    #[test]
    fn forms_and_json_give_the_same_positions() {
        let expected = vec![
            (MarkerTimeline::Home, "12".to_owned()),
            (MarkerTimeline::Notifications, "ab".to_owned()),
        ];
        let form = json!({"home[last_read_id]": "12", "notifications[last_read_id]": "ab", "x": 1});
        assert_eq!(parse(form).unwrap(), expected);
        let body = json!({"home": {"last_read_id": 12}, "notifications": {"last_read_id": "ab"}});
        assert_eq!(parse(body).unwrap(), expected);
        assert_eq!(
            parse(json!({"public": {"last_read_id": "1"}})).unwrap(),
            vec![]
        );
        assert_eq!(parse(json!({"home": "1"})).unwrap_err().status(), 422);
        assert_eq!(
            parse(json!({"home": {"last_read_id": []}}))
                .unwrap_err()
                .status(),
            422
        );
        assert_eq!(parse(json!({"home": {}})).unwrap_err().status(), 422);
    }
}

//! Bodies as Mastodon takes them: a form (`application/x-www-form-urlencoded`, with
//! `key[]=` for lists, as Rails reads it), a multipart form (`multipart/form-data`,
//! which masto.js sends for registration and `update_credentials`; its text fields
//! only: a file part is refused, since this server keeps no media) or JSON, plus the
//! query string, which Rails merges in too (the body wins). Any of them becomes one
//! JSON object, deserialized into the handler's type; a malformed body is a 400 and a
//! wrong field a 422, both `{"error"}`.

use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Request};
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::error::MastoError;

pub struct FormOrJson<T>(pub T);

/// `key[]` (Rails) and `key[0]` (masto.js's multipart forms) name list items.
fn list_key(key: &str) -> Option<&str> {
    if let Some(key) = key.strip_suffix("[]") {
        return Some(key);
    }
    let (key, index) = key.strip_suffix(']')?.rsplit_once('[')?;
    (!index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) && !key.contains('['))
        .then_some(key)
}

fn add(map: &mut Map<String, Value>, key: &str, value: String) {
    let (key, list) = match list_key(key) {
        Some(key) => (key, true),
        None => (key, false),
    };
    match map.get_mut(key) {
        Some(Value::Array(items)) => items.push(Value::String(value)),
        Some(existing) if list => {
            let first = existing.take();
            *existing = Value::Array(vec![first, Value::String(value)]);
        }
        _ if list => {
            map.insert(key.to_owned(), Value::Array(vec![Value::String(value)]));
        }
        _ => {
            map.insert(key.to_owned(), Value::String(value));
        }
    }
}

fn pairs(text: &[u8]) -> Result<Vec<(String, String)>, MastoError> {
    serde_urlencoded::from_bytes(text)
        .map_err(|e| MastoError::new(StatusCode::BAD_REQUEST, format!("malformed form: {e}")))
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for FormOrJson<T> {
    type Rejection = MastoError;

    async fn from_request(request: Request, state: &S) -> Result<Self, MastoError> {
        let content_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let query = request.uri().query().unwrap_or("").to_owned();
        let mut map = Map::new();
        for (key, value) in pairs(query.as_bytes())? {
            add(&mut map, &key, value);
        }
        if content_type.starts_with("multipart/form-data") {
            let multipart = Multipart::from_request(request, state)
                .await
                .map_err(|e| MastoError::new(e.status(), e.body_text()))?;
            for (key, value) in multipart_fields(multipart).await? {
                add(&mut map, &key, value);
            }
            return deserialize(map);
        }
        let body = Bytes::from_request(request, state)
            .await
            .map_err(|e| MastoError::new(e.status(), e.body_text()))?;
        if content_type.starts_with("application/json") {
            let value: Value = serde_json::from_slice(&body).map_err(|e| {
                MastoError::new(StatusCode::BAD_REQUEST, format!("malformed JSON: {e}"))
            })?;
            let Value::Object(fields) = value else {
                return Err(MastoError::unprocessable("the body must be a JSON object"));
            };
            map.extend(fields);
        } else if content_type.starts_with("application/x-www-form-urlencoded") || body.is_empty() {
            for (key, value) in pairs(&body)? {
                add(&mut map, &key, value);
            }
        } else {
            return Err(MastoError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "send application/x-www-form-urlencoded, multipart/form-data or application/json",
            ));
        }
        deserialize(map)
    }
}

fn deserialize<T: DeserializeOwned>(map: Map<String, Value>) -> Result<FormOrJson<T>, MastoError> {
    serde_json::from_value(Value::Object(map))
        .map(FormOrJson)
        .map_err(|e| MastoError::unprocessable(format!("Validation failed: {e}")))
}

/// A multipart form's text fields, in order. A part with a file name (an avatar, a
/// header, media) is refused by name rather than dropped: nothing here would keep it.
async fn multipart_fields(mut multipart: Multipart) -> Result<Vec<(String, String)>, MastoError> {
    let malformed =
        |e: axum::extract::multipart::MultipartError| MastoError::new(e.status(), e.body_text());
    let mut fields = Vec::new();
    while let Some(field) = multipart.next_field().await.map_err(malformed)? {
        let name = field.name().unwrap_or("").to_owned();
        if field.file_name().is_some() {
            return Err(MastoError::unprocessable(format!(
                "Validation failed: {name} is a file, and this server keeps no media"
            )));
        }
        let value = field.text().await.map_err(malformed)?;
        fields.push((name, value));
    }
    Ok(fields)
}

/// A list sent as one string (space or newline separated) or as a list.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(untagged)]
pub enum StringOrList {
    One(String),
    Many(Vec<String>),
}

impl StringOrList {
    pub fn items(&self) -> Vec<String> {
        match self {
            StringOrList::One(text) => text.split_whitespace().map(str::to_owned).collect(),
            StringOrList::Many(items) => items
                .iter()
                .flat_map(|i| i.split_whitespace())
                .map(str::to_owned)
                .collect(),
        }
    }

    /// Scopes, space separated, whichever way they came.
    pub fn joined(&self) -> String {
        self.items().join(" ")
    }
}

/// A flag sent as a JSON boolean or a form's `true`/`1`/`on`.
pub fn truthy(value: &Option<Value>) -> bool {
    match value {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => matches!(s.as_str(), "true" | "1" | "on" | "yes"),
        Some(Value::Number(n)) => n.as_i64() == Some(1),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_lists_become_arrays() {
        let mut map = Map::new();
        for (k, v) in pairs(b"a=1&b[]=x&b[]=y&c=z&d[0]=p&d[1]=q&e[0][name]=n").unwrap() {
            add(&mut map, &k, v);
        }
        assert_eq!(
            Value::Object(map),
            serde_json::json!({"a": "1", "b": ["x", "y"], "c": "z", "d": ["p", "q"], "e[0][name]": "n"})
        );
    }
}

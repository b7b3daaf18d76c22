//! Bodies as Mastodon takes them: a form (`application/x-www-form-urlencoded`, with
//! `key[]=` for lists, as Rails reads it) or JSON, plus the query string, which Rails
//! merges in too (the body wins). Either becomes one JSON object, deserialized into the
//! handler's type; a malformed body is a 400 and a wrong field a 422, both `{"error"}`.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::error::MastoError;

pub struct FormOrJson<T>(pub T);

fn add(map: &mut Map<String, Value>, key: &str, value: String) {
    let (key, list) = match key.strip_suffix("[]") {
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
        let body = Bytes::from_request(request, state)
            .await
            .map_err(|e| MastoError::new(e.status(), e.body_text()))?;
        let mut map = Map::new();
        for (key, value) in pairs(query.as_bytes())? {
            add(&mut map, &key, value);
        }
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
                "send application/x-www-form-urlencoded or application/json",
            ));
        }
        serde_json::from_value(Value::Object(map))
            .map(FormOrJson)
            .map_err(|e| MastoError::unprocessable(format!("Validation failed: {e}")))
    }
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
        for (k, v) in pairs(b"a=1&b[]=x&b[]=y&c=z").unwrap() {
            add(&mut map, &k, v);
        }
        assert_eq!(
            Value::Object(map),
            serde_json::json!({"a": "1", "b": ["x", "y"], "c": "z"})
        );
    }
}

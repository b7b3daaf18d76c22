//! The Context entity: a status's ancestors and descendants.

use serde::Serialize;
use utoipa::ToSchema;

use super::Status;

#[derive(Debug, Serialize, ToSchema)]
pub struct Context {
    /// Root first.
    pub ancestors: Vec<Status>,
    /// In thread order: depth first, each post's replies oldest first.
    pub descendants: Vec<Status>,
}

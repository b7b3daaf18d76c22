//! Mastodon's entities as this server renders them, one file each: serde structs built
//! from the service's values, never read back. Per-viewer flags (`favourited`,
//! `reblogged`) come filled in by the service, batched per page.

pub mod account;
pub mod content;
pub mod context;
pub mod notification;
pub mod relationship;
pub mod status;
pub mod tag;

pub use account::{Account, AccountSource};
pub use context::Context;
pub use relationship::Relationship;
pub use status::Status;
pub use tag::Tag;

//! Reading the event log: batched tail readers, and the live streams (home timeline,
//! notifications, public and tag listings) fanned out from one shared tail per process.

pub mod hub;
pub mod reader;
mod router;
mod seen;
pub mod stream;

pub use hub::{Hub, HubSettings};
pub use reader::EventReader;
pub use stream::{Interest, Listings, StreamMessage, TimelineStream};

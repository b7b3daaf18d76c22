//! Reading the event log: batched tail readers, and the live timeline streams fanned
//! out from one shared tail per process.

pub mod hub;
pub mod reader;
pub mod stream;

pub use hub::{Hub, HubSettings};
pub use reader::EventReader;
pub use stream::{StreamMessage, TimelineStream};

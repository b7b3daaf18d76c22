//! The port's size model, checked against the documents this adapter writes.

use mongodb::bson::oid::ObjectId;

use super::*;
use crate::store::timelines::{DOCUMENT_FIXED_BYTES, largest_document_bytes, largest_entry_bytes};

fn bytes(doc: &Document) -> usize {
    let mut out = Vec::new();
    doc.to_writer(&mut out).unwrap();
    out.len()
}

/// The port's size model, checked against the documents this adapter writes.
#[test]
fn the_size_model_matches_real_documents() {
    let user = "u".repeat(32);
    let id = ObjectId::new();
    let entry = TimelineEntry {
        id: PostId::from_bytes(id.bytes()),
        author: user.clone(),
        text: Some("😀".repeat(500)),
        name: Some(NameStamp {
            display_name: "😀".repeat(64),
            version: u64::MAX >> 1,
        }),
        reply_to_author: None,
        repost_of: Some(crate::domain::ReplyTo {
            post: PostId::from_bytes(id.bytes()),
            author: user.clone(),
        }),
    };
    assert_eq!(bytes(&entry_doc(&entry)), largest_entry_bytes());
    let skeletons = [
        doc! { "_id": { "u": &user, "t": i64::MAX, "p": i64::MAX }, "n": i64::MAX,
        "mn": id, "mx": id, "pmx": id, "c": [] },
        doc! { "_id": id, "u": &user, "s": i64::MAX, "n": i64::MAX,
        "mn": id, "mx": id, "pmx": id, "c": [] },
        doc! { "_id": &user, "ready": true, "started": i64::MAX, "c": [] },
    ];
    for skeleton in skeletons {
        let fixed = bytes(&skeleton);
        assert!(fixed <= DOCUMENT_FIXED_BYTES, "{fixed} bytes: {skeleton}");
        let mut full = skeleton.clone();
        full.insert("c", vec![entry_doc(&entry); 12]);
        let modelled = largest_document_bytes(12) - DOCUMENT_FIXED_BYTES + fixed;
        assert_eq!(bytes(&full), modelled);
    }
}

//! Feed positions. To a reader a position is an opaque string; here it is relaxed
//! extended JSON naming the format, the mode and where each stream stands:
//! `{"v": 2, "mode": "collections", "streams": {"users": {"after": <token>}, ...}}`.
//! Anything else, including today's earlier format (a bare map of tokens), is
//! `InvalidPosition`, never a guess.

use mongodb::bson::{Bson, Document, Timestamp, doc};
use mongodb::change_stream::event::ResumeToken;

use super::WATCHED;
use crate::domain::ChangePosition;
use crate::store::{StoreError, StoreResult};

/// Bumped whenever the layout changes.
const FORMAT: i64 = 2;
/// The one stream of the database mode, by name.
const DATABASE_STREAM: &str = "*";

/// How the feed watches the database, detected once per store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// One database-level stream: the server orders events across collections.
    Database,
    /// One stream per watched collection, merged in cluster-time order under a
    /// watermark. `post_batch_tokens`: the server reports a post-batch resume token
    /// after every batch (real MongoDB does; the test stand-in does not).
    Collections { post_batch_tokens: bool },
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Database => "database",
            Mode::Collections { .. } => "collections",
        }
    }

    /// The names of this mode's streams, in the order the feed keeps them.
    pub(super) fn streams(self) -> Vec<&'static str> {
        match self {
            Mode::Database => vec![DATABASE_STREAM],
            Mode::Collections { .. } => WATCHED.iter().map(|(name, _)| *name).collect(),
        }
    }
}

/// Where one stream stands: everything up to here has been delivered.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Mark {
    /// Resume after this token: an event's, or the server's post-batch token.
    After(ResumeToken),
    /// Every event of the stream earlier than this cluster time has been delivered (and
    /// none at or after it); resume with `startAtOperationTime`, which is inclusive.
    From(Timestamp),
}

/// The smallest cluster time after `time`.
pub(super) fn successor(time: Timestamp) -> Timestamp {
    match time.increment.checked_add(1) {
        Some(increment) => Timestamp {
            time: time.time,
            increment,
        },
        None => Timestamp {
            time: time.time + 1,
            increment: 0,
        },
    }
}

fn backend(error: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(anyhow::anyhow!("encoding a change feed position: {error}"))
}

pub(super) fn encode(mode: Mode, marks: &[Mark]) -> StoreResult<ChangePosition> {
    let mut streams = Document::new();
    for (name, mark) in mode.streams().into_iter().zip(marks) {
        let mark = match mark {
            Mark::After(token) => doc! { "after": mongodb::bson::to_bson(token).map_err(backend)? },
            Mark::From(time) => doc! { "from": *time },
        };
        streams.insert(name, mark);
    }
    let position = doc! { "v": FORMAT, "mode": mode.name(), "streams": streams };
    Ok(ChangePosition(
        Bson::Document(position).into_relaxed_extjson().to_string(),
    ))
}

/// The marks of a position this store's mode wrote, one per stream in `mode.streams()`.
pub(super) fn decode(position: &ChangePosition, mode: Mode) -> StoreResult<Vec<Mark>> {
    parse(&position.0, mode).ok_or_else(|| StoreError::InvalidPosition(position.0.clone()))
}

fn parse(text: &str, mode: Mode) -> Option<Vec<Mark>> {
    let json: serde_json::Value = serde_json::from_str(text).ok()?;
    let Bson::Document(position) = Bson::try_from(json).ok()? else {
        return None;
    };
    let version = match position.get("v")? {
        Bson::Int32(v) => i64::from(*v),
        Bson::Int64(v) => *v,
        _ => return None,
    };
    if version != FORMAT || position.get_str("mode").ok()? != mode.name() {
        return None;
    }
    let streams = position.get_document("streams").ok()?;
    let names = mode.streams();
    if streams.len() != names.len() {
        return None;
    }
    names
        .into_iter()
        .map(|name| {
            let mark = streams.get_document(name).ok()?;
            match (mark.get("after"), mark.get("from")) {
                (Some(token), None) => mongodb::bson::from_bson(token.clone())
                    .ok()
                    .map(Mark::After),
                (None, Some(Bson::Timestamp(time))) => Some(Mark::From(*time)),
                _ => None,
            }
        })
        .collect()
}

/// The cluster time a MongoDB resume token stands at. Since 4.2 a token's `_data` is
/// the hex of a KeyString that starts with the cluster time: type byte 130 and then
/// the timestamp, big-endian (seconds, then increment). `None` for any other shape.
pub(super) fn token_time(token: &ResumeToken) -> Option<Timestamp> {
    let Ok(Bson::Document(token)) = mongodb::bson::to_bson(token) else {
        return None;
    };
    let data = token.get_str("_data").ok()?;
    let byte = |i: usize| u8::from_str_radix(data.get(2 * i..2 * i + 2)?, 16).ok();
    if byte(0)? != 130 {
        return None;
    }
    let word = |from: usize| -> Option<u32> {
        (from..from + 4).try_fold(0u32, |acc, i| Some(acc << 8 | u32::from(byte(i)?)))
    };
    Some(Timestamp {
        time: word(1)?,
        increment: word(5)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(data: &str) -> ResumeToken {
        mongodb::bson::from_bson(Bson::Document(doc! { "_data": data })).unwrap()
    }

    #[test]
    fn positions_round_trip_in_their_own_mode_only() {
        let mode = Mode::Collections {
            post_batch_tokens: false,
        };
        let marks = vec![
            Mark::After(token("6b0375960000000a")),
            Mark::From(Timestamp {
                time: 7,
                increment: 3,
            }),
            Mark::After(token("6b0375960000000b")),
            Mark::After(token("6b0375960000000c")),
            Mark::After(token("6b0375960000000d")),
        ];
        let position = encode(mode, &marks).unwrap();
        assert_eq!(decode(&position, mode).unwrap(), marks);
        assert!(matches!(
            decode(&position, Mode::Database),
            Err(StoreError::InvalidPosition(_))
        ));
        let database = encode(Mode::Database, &marks[..1]).unwrap();
        assert_eq!(decode(&database, Mode::Database).unwrap(), marks[..1]);
    }

    #[test]
    fn other_formats_are_invalid() {
        let mode = Mode::Database;
        for text in [
            "",
            "42",
            "not json",
            r#"{"users":{"_data":"6b03"}}"#,
            r#"{"v":1,"mode":"database","streams":{"*":{"from":{"$timestamp":{"t":1,"i":1}}}}}"#,
            r#"{"v":2,"mode":"database","streams":{"*":{"from":5}}}"#,
            r#"{"v":2,"mode":"database","streams":{"users":{"from":{"$timestamp":{"t":1,"i":1}}}}}"#,
        ] {
            let position = ChangePosition(text.to_owned());
            assert!(
                matches!(decode(&position, mode), Err(StoreError::InvalidPosition(_))),
                "{text}"
            );
        }
        let good =
            r#"{"v":2,"mode":"database","streams":{"*":{"from":{"$timestamp":{"t":1,"i":1}}}}}"#;
        assert!(decode(&ChangePosition(good.to_owned()), mode).is_ok());
    }

    #[test]
    fn token_times_come_from_the_keystring_prefix() {
        let real = token("8265F1A2B3000000042B022C0100296E5A1004");
        assert_eq!(
            token_time(&real),
            Some(Timestamp {
                time: 0x65F1_A2B3,
                increment: 4
            })
        );
        assert_eq!(token_time(&token("6b0375960000000a")), None);
        assert_eq!(token_time(&token("82")), None);
        assert_eq!(
            successor(Timestamp {
                time: 1,
                increment: u32::MAX
            }),
            Timestamp {
                time: 2,
                increment: 0
            }
        );
    }
}

//! Where API tokens are kept: only their SHA-256, never the plaintext.

use serde_json::json;

use crate::common::{self, TestServer, fresh_config, kinds};

/// The tokens are in no table or collection: only their SHA-256 is.
#[tokio::test]
async fn the_database_holds_no_plaintext_token() {
    for kind in kinds("the_database_holds_no_plaintext_token") {
        let test = fresh_config(kind);
        let (file, uri) = (
            test.config.storage.path.clone(),
            test.config.storage.mongodb_uri.clone(),
        );
        let server = TestServer::start(test).await;
        let api = server.api();
        api.user("keeper").await;
        let (_, more) = api.post("/v1/users/keeper/tokens", json!({})).await;
        let tokens = [
            api.token("keeper"),
            more["token"].as_str().unwrap().to_owned(),
        ];
        let hash = hex_sha256(&tokens[0]);
        let stored = match kind {
            common::Kind::Embedded => {
                // The WAL holds the newest pages: read the database and its log.
                let mut bytes = std::fs::read(&file).unwrap();
                bytes.extend(std::fs::read(file.with_extension("db-wal")).unwrap_or_default());
                let hex_hash_bytes: [u8; 32] = hex::decode(&hash).unwrap().try_into().unwrap();
                assert!(
                    bytes.windows(32).any(|w| w == hex_hash_bytes),
                    "the hash is stored, so the scan reads the right data"
                );
                String::from_utf8_lossy(&bytes).into_owned()
            }
            common::Kind::Mongo => {
                let client = mongodb::Client::with_uri_str(uri.unwrap()).await.unwrap();
                let db = client.default_database().unwrap();
                let mut dump = String::new();
                for name in db.list_collection_names().await.unwrap() {
                    let mut cursor = db
                        .collection::<mongodb::bson::Document>(&name)
                        .find(mongodb::bson::doc! {})
                        .await
                        .unwrap();
                    while cursor.advance().await.unwrap() {
                        let doc = cursor.deserialize_current().unwrap();
                        dump.push_str(&format!("{name}: {doc}\n"));
                    }
                }
                assert!(dump.contains(&hash), "the hash is stored: {dump}");
                dump
            }
        };
        for token in &tokens {
            assert!(
                !stored.contains(token.as_str()),
                "{kind:?}: token stored in clear"
            );
        }
        server.stop().await;
    }
}

fn hex_sha256(value: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(value.as_bytes()))
}

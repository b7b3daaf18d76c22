//! Push latency into a user's activity log that already holds N entries: one unbounded
//! document against the outlier pattern. Prints a table like the design article's.
//!
//! `cargo bench --bench activity` runs it on the embedded backend; with
//! `SOCIALITE_BENCH_MONGODB_URI` set it also runs on MongoDB. Both layouts use the same
//! durability setting (SQLite `synchronous=NORMAL`), so the table measures layout cost.

use std::sync::Arc;
use std::time::Instant;

use mongodb::bson::{Document, doc};
use rusqlite::Connection;
use socialite::domain::{ActivityLimits, ActivityType, NewUser, now_ms};
use socialite::store::Store;
use socialite::store::embedded::{EmbeddedStore, Synchronous};

const SIZES: [usize; 4] = [100, 1_000, 5_000, 10_000];
const PUSHES: usize = 300;
const LIMITS: ActivityLimits = ActivityLimits {
    primary_limit: 1000,
    page_size: 1000,
};

fn entry_json(i: usize) -> String {
    format!(
        r#"{{"type":"like","ts":{},"ref":"6b0302e803d60000000{i:05}"}}"#,
        1_795_000_000_000_i64 + i as i64
    )
}

/// Mean microseconds per push into one JSON array row holding `size` entries.
fn sqlite_unbounded(dir: &std::path::Path, size: usize) -> f64 {
    let conn = Connection::open(dir.join(format!("unbounded-{size}.db"))).unwrap();
    conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE log (id TEXT PRIMARY KEY, doc TEXT NOT NULL);").unwrap();
    let doc = format!(
        "[{}]",
        (0..size).map(entry_json).collect::<Vec<_>>().join(",")
    );
    conn.execute("INSERT INTO log VALUES ('user-1', ?1)", [doc])
        .unwrap();
    let mut push = conn
        .prepare("UPDATE log SET doc = json_insert(doc, '$[#]', json(?1)) WHERE id = 'user-1'")
        .unwrap();
    let started = Instant::now();
    for i in 0..PUSHES {
        push.execute([entry_json(size + i)]).unwrap();
    }
    started.elapsed().as_secs_f64() * 1e6 / PUSHES as f64
}

async fn bounded(store: &Store, size: usize) -> f64 {
    let user = format!("user{size}");
    store
        .users
        .create_user(&NewUser {
            id: user.clone(),
            display_name: user.clone(),
            created_at_ms: now_ms(),
        })
        .await
        .unwrap();
    for i in 0..size {
        store
            .activity
            .record_activity(
                &user,
                ActivityType::Like,
                &format!("r{i}"),
                now_ms(),
                LIMITS,
            )
            .await
            .unwrap();
    }
    let started = Instant::now();
    for i in 0..PUSHES {
        store
            .activity
            .record_activity(
                &user,
                ActivityType::Post,
                &format!("p{i}"),
                now_ms(),
                LIMITS,
            )
            .await
            .unwrap();
    }
    started.elapsed().as_secs_f64() * 1e6 / PUSHES as f64
}

async fn mongo_unbounded(db: &mongodb::Database, size: usize) -> f64 {
    let coll = db.collection::<Document>("unbounded");
    let entries: Vec<Document> = (0..size)
        .map(|i| doc! { "type": "like", "ts": i as i64, "ref": format!("r{i}") })
        .collect();
    let id = format!("user-{size}");
    coll.insert_one(doc! { "_id": &id, "activities": entries })
        .await
        .unwrap();
    let started = Instant::now();
    for i in 0..PUSHES {
        coll.update_one(
            doc! { "_id": &id },
            doc! { "$push": { "activities": { "type": "post", "ts": i as i64, "ref": "p" } } },
        )
        .await
        .unwrap();
    }
    started.elapsed().as_secs_f64() * 1e6 / PUSHES as f64
}

fn print_table(backend: &str, rows: &[(usize, f64, f64)]) {
    println!(
        "\n{backend}: mean push latency, {PUSHES} pushes per cell (primary_limit 1000, page_size 1000)"
    );
    println!("| existing entries | unbounded (µs) | bounded (µs) | unbounded / bounded |");
    println!("|---:|---:|---:|---:|");
    for (size, unbounded, bounded) in rows {
        println!(
            "| {size} | {unbounded:.0} | {bounded:.0} | {:.1}× |",
            unbounded / bounded
        );
    }
    let flat = rows.last().unwrap().2 / rows.first().unwrap().2;
    println!(
        "bounded at {} / bounded at {}: {flat:.2}×",
        rows.last().unwrap().0,
        rows.first().unwrap().0
    );
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(Arc::new(
        EmbeddedStore::open(&dir.path().join("bounded.db"), Synchronous::Normal).unwrap(),
    ));
    let mut rows = Vec::new();
    for size in SIZES {
        let unbounded = sqlite_unbounded(dir.path(), size);
        let bounded = bounded(&store, size).await;
        rows.push((size, unbounded, bounded));
    }
    print_table("embedded (SQLite)", &rows);

    match std::env::var("SOCIALITE_BENCH_MONGODB_URI") {
        Ok(uri) => {
            let store = socialite::store::mongo::connect(&uri).await.unwrap();
            let db = mongodb::Client::with_uri_str(&uri)
                .await
                .unwrap()
                .default_database()
                .unwrap_or_else(|| panic!("name a database in the URI"));
            let mut rows = Vec::new();
            for size in SIZES {
                rows.push((
                    size,
                    mongo_unbounded(&db, size).await,
                    bounded(&store, size).await,
                ));
            }
            print_table("MongoDB", &rows);
        }
        Err(_) => println!(
            "\nMongoDB: skipped (set SOCIALITE_BENCH_MONGODB_URI=mongodb://host/db to run it)"
        ),
    }
}

//! A database written at schema 1 (before compactions rebased) is
//! migrated on connect and keeps its promises; one written at schema 2
//! (images in the rows) keeps its images readable. In a binary of its own: it
//! runs the store's logging call sites, which other tests capture.
//!
//! Reads `MEMORY_POSTGRES_URL`; skips with a notice when unset, and fails
//! when it is unset under CI.

use std::time::{SystemTime, UNIX_EPOCH};

use memory_core::test_util::POSTGRES;
use memory_core::{ContentBlock, ImageContent, Message, Store, StoredMessage};
use memory_postgres::PostgresStore;
use memory_store_support::test_util::rebases_after_migration;

/// A connection for changing the schema by hand, a schema of its own, and
/// the URL of a store in that schema.
async fn scratch(url: &str) -> (tokio_postgres::Client, String, String) {
    let (admin, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect to MEMORY_POSTGRES_URL");
    tokio::spawn(connection);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    // Letters, digits and underscores, made here: safe as an identifier.
    let schema = format!("memory_migration_{}_{nanos}", std::process::id());
    admin
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .unwrap();
    let separator = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{separator}options=-csearch_path%3D{schema}");
    (admin, schema, url)
}

#[tokio::test]
async fn a_schema_1_database_is_migrated_and_rebases_from_then_on() {
    let Some(url) = POSTGRES.value() else { return };
    let (admin, schema, url) = scratch(&url).await;

    let m = |text: &str| StoredMessage::new(Message::user(text), 1, false);
    let store = PostgresStore::connect(&url).await.unwrap();
    store.append("s", vec![m("1")]).await.unwrap();
    store.append("s", vec![m("2"), m("3")]).await.unwrap();
    drop(store);
    // Back to schema 1, as an older version of the library left it.
    admin
        .batch_execute(&format!(
            "ALTER TABLE {schema}.memory_sessions DROP COLUMN compacted;
             ALTER TABLE {schema}.memory_messages DROP COLUMN version;
             DROP TABLE {schema}.memory_images;
             UPDATE {schema}.memory_schema_version SET version = 1;"
        ))
        .await
        .unwrap();
    let store = PostgresStore::connect(&url).await.unwrap();
    rebases_after_migration(&store).await;
    drop(store);
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_schema_2_database_keeps_its_inline_images_readable() {
    let Some(url) = POSTGRES.value() else { return };
    let (admin, schema, url) = scratch(&url).await;
    let image = |data: Vec<u8>| ContentBlock::Image(ImageContent::new("image/png", data));
    let old = StoredMessage::new(Message::user_blocks(vec![image(vec![5; 300])]), 765, false);
    let store = PostgresStore::connect(&url).await.unwrap();
    store
        .append("s", vec![StoredMessage::new(Message::user("x"), 1, false)])
        .await
        .unwrap();
    drop(store);
    // Back to schema 2, a row holding its image, as an older version of
    // the library wrote it.
    let body = serde_json::to_string(&old.message).unwrap();
    admin
        .batch_execute(&format!(
            "DROP TABLE {schema}.memory_images;
             UPDATE {schema}.memory_schema_version SET version = 2;"
        ))
        .await
        .unwrap();
    admin
        .execute(
            &format!("UPDATE {schema}.memory_messages SET body = $1, tokens = 765"),
            &[&body],
        )
        .await
        .unwrap();
    let store = PostgresStore::connect(&url).await.unwrap();
    let new = StoredMessage::new(
        Message::user_blocks(vec![image(vec![5; 300]), image(vec![6; 10])]),
        1_530,
        false,
    );
    store.append("s", vec![new.clone()]).await.unwrap();
    assert_eq!(store.load("s").await.unwrap().messages, vec![old, new]);
    let held: i64 = admin
        .query_one(&format!("SELECT count(*) FROM {schema}.memory_images"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(held, 2);
    drop(store);
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}

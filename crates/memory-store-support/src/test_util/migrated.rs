//! [`rebases_after_migration`]: what a durable store promises about a
//! session written before its schema learned to rebase compactions.

use memory_core::{Message, Store, StoreError, StoredMessage, summary};

/// Checks session `s`, written before the migration as the messages `1`,
/// `2` and `3` (text, one token each, unprotected) at version 2: it reads
/// back whole; a compaction from before the migration conflicts (what came
/// after that version is not known); from the migration's version on, a
/// compaction rebases over later appends.
///
/// # Panics
///
/// When any of that does not hold.
///
/// ```no_run
/// # async fn check(store: &dyn memory_core::Store) {
/// // `store` opened on a database migrated from the schema before.
/// memory_store_support::test_util::rebases_after_migration(store).await;
/// # }
/// ```
pub async fn rebases_after_migration(store: &dyn Store) {
    let m = |text: &str| StoredMessage::new(Message::user(text), 1, false);
    assert_eq!(
        store.load("s").await.expect("load"),
        memory_core::Snapshot {
            messages: vec![m("1"), m("2"), m("3")],
            version: 2
        }
    );
    assert!(matches!(
        store.replace_view("s", 1, vec![]).await,
        Err(StoreError::Conflict { actual: 2, .. })
    ));
    store.append("s", vec![m("4")]).await.expect("append");
    let summary = StoredMessage::new(summary::message("1-3"), 2, true);
    assert_eq!(
        store
            .replace_view("s", 2, vec![summary.clone()])
            .await
            .expect("a compaction from the migration's version"),
        4
    );
    assert_eq!(
        store.load("s").await.expect("load").messages,
        vec![summary, m("4")]
    );
    assert_eq!(
        store.replaced("s").await.expect("replaced"),
        vec![vec![m("1"), m("2"), m("3")]]
    );
}

//! The `Store` contract, run against every store: the in-memory store, SQLite
//! (with group commit and with a commit per append) and PostgreSQL (when
//! `MEMORY_POSTGRES_URL` names a server; skipped with a notice otherwise, and
//! failed under CI, where a lost server must not pass).
//!
//! Each case is a function over a [`Backend`]: a way to open handles on one
//! body of data, as a restarted process would. A new store joins by adding
//! one `contract!` line.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use memory_core::{
    CharTokenCounter, ContentBlock, ImageContent, InMemoryStore, Memory, MemoryError, Message,
    Snapshot, Store, StoreError, StoreWrite, StoredMessage, TokenCounter, ToolCall, summary,
    validate,
};
use memory_postgres::PostgresStore;
use memory_session::WindowMemory;
use memory_sqlite::SqliteStore;
use serde_json::json;

/// Where a store's data lives.
#[async_trait::async_trait]
trait Backend: Send + Sync {
    /// A new handle on the same data, as a restarted process opens it.
    async fn open(&self) -> Arc<dyn Store>;

    /// Handles of tenants `a` and `b` ([`Store::for_tenant`]) and the one
    /// they were made from, on the same data; `None` for a store without
    /// tenants.
    async fn tenants(&self) -> Option<[Arc<dyn Store>; 3]>;
}

struct InMemory(Arc<InMemoryStore>);

#[async_trait::async_trait]
impl Backend for InMemory {
    async fn open(&self) -> Arc<dyn Store> {
        self.0.clone()
    }
    async fn tenants(&self) -> Option<[Arc<dyn Store>; 3]> {
        let store: Arc<dyn Store> = self.0.clone();
        Some([store.for_tenant("a"), store.for_tenant("b"), store])
    }
}

struct Sqlite {
    _dir: tempfile::TempDir,
    path: PathBuf,
    group_commit: bool,
}

impl Sqlite {
    fn new(group_commit: bool) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("memory.db");
        Self {
            _dir: dir,
            path,
            group_commit,
        }
    }

    fn store(&self) -> SqliteStore {
        SqliteStore::open(&self.path)
            .expect("open the SQLite file")
            .with_group_commit(self.group_commit)
    }
}

#[async_trait::async_trait]
impl Backend for Sqlite {
    async fn open(&self) -> Arc<dyn Store> {
        Arc::new(self.store())
    }
    async fn tenants(&self) -> Option<[Arc<dyn Store>; 3]> {
        let store: Arc<dyn Store> = Arc::new(self.store());
        Some([store.for_tenant("a"), store.for_tenant("b"), store])
    }
}

/// Each test works in a tenant of its own, so runs sharing a database never
/// meet.
struct Postgres {
    url: String,
    tenant: String,
}

impl Postgres {
    fn from_env() -> Option<Self> {
        memory_core::test_util::POSTGRES.value().map(|url| Self {
            url,
            tenant: unique("contract"),
        })
    }

    async fn store(&self) -> PostgresStore {
        PostgresStore::connect_with(&self.url, 4)
            .await
            .expect("connect to MEMORY_POSTGRES_URL")
    }
}

#[async_trait::async_trait]
impl Backend for Postgres {
    async fn open(&self) -> Arc<dyn Store> {
        Arc::new(self.store().await.with_tenant(&self.tenant))
    }
    async fn tenants(&self) -> Option<[Arc<dyn Store>; 3]> {
        let store: Arc<dyn Store> = Arc::new(self.store().await);
        Some([
            store.for_tenant(&format!("{}-a", self.tenant)),
            store.for_tenant(&format!("{}-b", self.tenant)),
            store,
        ])
    }
}

/// A name no other run uses.
fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}-{}-{nanos}", std::process::id())
}

fn user(text: &str) -> StoredMessage {
    StoredMessage::new(Message::user(text), text.len(), false)
}

fn summary_of(text: &str) -> StoredMessage {
    StoredMessage::new(summary::message(text), 7, true)
}

fn plain(stored: &[StoredMessage]) -> Vec<Message> {
    stored.iter().map(|s| s.message.clone()).collect()
}

async fn append_load_and_versions(backend: &dyn Backend) {
    let store = backend.open().await;
    assert_eq!(store.load("s").await.unwrap(), Snapshot::default());
    assert!(store.history("s").await.unwrap().is_empty());
    assert!(store.replaced("s").await.unwrap().is_empty());

    let system = StoredMessage::new(Message::system("rules"), 2, true);
    let v1 = store.append("s", vec![system.clone()]).await.unwrap();
    let v2 = store
        .append("s", vec![user("one"), user("two")])
        .await
        .unwrap();
    assert_eq!((v1, v2), (1, 2));

    let snapshot = store.load("s").await.unwrap();
    assert_eq!(snapshot.version, 2);
    assert_eq!(snapshot.messages, vec![system, user("one"), user("two")]);
    assert_eq!(store.history("s").await.unwrap(), plain(&snapshot.messages));

    // Another handle (another process, after a restart) sees the same.
    let reopened = backend.open().await;
    assert_eq!(reopened.load("s").await.unwrap(), snapshot);
    assert_eq!(reopened.append("s", vec![user("3")]).await.unwrap(), 3);
    assert_eq!(store.load("s").await.unwrap().version, 3);
}

async fn sessions_are_isolated(backend: &dyn Backend) {
    let store = backend.open().await;
    // Ids that differ by a character, a case, or look like SQL are all
    // plain, distinct ids.
    let ids = [
        "a",
        "A",
        "a ",
        "a/b",
        "a%",
        "a_",
        "x'; DROP TABLE messages; --",
        "日本",
    ];
    for (i, id) in ids.iter().enumerate() {
        store
            .append(id, vec![user(&format!("in {i}"))])
            .await
            .unwrap();
    }
    let v = store.load("a").await.unwrap().version;
    store
        .replace_view("a", v, vec![summary_of("a only")])
        .await
        .unwrap();
    for (i, id) in ids.iter().enumerate() {
        let snapshot = store.load(id).await.unwrap();
        let history = store.history(id).await.unwrap();
        assert_eq!(history, vec![Message::user(format!("in {i}"))], "{id}");
        if i == 0 {
            assert_eq!(snapshot.messages, vec![summary_of("a only")]);
            assert_eq!(snapshot.version, 2);
        } else {
            assert_eq!(snapshot.messages, vec![user(&format!("in {i}"))], "{id}");
            assert_eq!(snapshot.version, 1, "{id}");
            assert!(store.replaced(id).await.unwrap().is_empty(), "{id}");
        }
    }
    assert!(store.load("a'").await.unwrap().messages.is_empty());
}

async fn tenants_are_isolated(backend: &dyn Backend) {
    let Some([a, b, none]) = backend.tenants().await else {
        return;
    };
    let session = unique("shared");
    a.append(&session, vec![user("for a")]).await.unwrap();
    b.append(&session, vec![user("for b"), user("b again")])
        .await
        .unwrap();
    assert_eq!(
        a.load(&session).await.unwrap().messages,
        vec![user("for a")]
    );
    assert_eq!(b.load(&session).await.unwrap().version, 1);
    assert_eq!(b.history(&session).await.unwrap().len(), 2);
    assert_eq!(none.load(&session).await.unwrap(), Snapshot::default());

    // A's version says nothing about b's session: b compacted twice from
    // one read conflicts; a, never at b's version, conflicts there too, and
    // commits at its own.
    b.append(&session, vec![user("b3")]).await.unwrap();
    assert_eq!(
        b.replace_view(&session, 2, vec![summary_of("b")])
            .await
            .unwrap(),
        3
    );
    for (store, expected, actual) in [(&b, 2, 3), (&a, 2, 1)] {
        let err = store
            .replace_view(&session, expected, vec![summary_of("again")])
            .await
            .unwrap_err();
        assert!(
            matches!(err, StoreError::Conflict { expected: e, actual: v, .. } if e == expected && v == actual),
            "{err:?}"
        );
    }
    a.replace_view(&session, 1, vec![summary_of("a")])
        .await
        .unwrap();
    assert_eq!(
        b.load(&session).await.unwrap().messages,
        vec![summary_of("b")]
    );
    assert_eq!(
        b.replaced(&session).await.unwrap(),
        vec![vec![user("for b"), user("b again"), user("b3")]]
    );
    assert_eq!(
        a.replaced(&session).await.unwrap(),
        vec![vec![user("for a")]]
    );
    assert!(none.history(&session).await.unwrap().is_empty());
}

async fn a_compaction_rebases_over_appends(backend: &dyn Backend) {
    let store = backend.open().await;
    let system = StoredMessage::new(Message::system("rules"), 2, true);
    let read = store
        .append("s", vec![system.clone(), user("1"), user("2")])
        .await
        .unwrap();
    // Appended while the compaction is computed from `read`.
    store.append("s", vec![user("3")]).await.unwrap();
    store.append("s", vec![user("4"), user("5")]).await.unwrap();
    let first = vec![system.clone(), summary_of("1, 2")];
    assert_eq!(
        store.replace_view("s", read, first.clone()).await.unwrap(),
        4
    );
    let snapshot = store.load("s").await.unwrap();
    assert_eq!(snapshot.version, 4);
    assert_eq!(
        snapshot.messages,
        [first.clone(), vec![user("3"), user("4"), user("5")]].concat()
    );
    assert_eq!(
        store.replaced("s").await.unwrap(),
        vec![vec![system.clone(), user("1"), user("2")]]
    );

    // From the version that compaction produced, which rebased: what it
    // rebased over is part of the view it replaced.
    store.append("s", vec![user("6")]).await.unwrap();
    let second = vec![summary_of("1-5")];
    assert_eq!(store.replace_view("s", 4, second.clone()).await.unwrap(), 6);
    assert_eq!(
        store.load("s").await.unwrap().messages,
        vec![summary_of("1-5"), user("6")]
    );

    // From a version between appends, after a compaction.
    let read = store.load("s").await.unwrap().version;
    store.append("s", vec![user("7")]).await.unwrap();
    assert_eq!(
        store
            .replace_view("s", read, vec![summary_of("1-6")])
            .await
            .unwrap(),
        read + 2
    );
    let snapshot = store.load("s").await.unwrap();
    assert_eq!(snapshot.messages, vec![summary_of("1-6"), user("7")]);
    let replaced = vec![
        vec![system.clone(), user("1"), user("2")],
        [first, (3..=5).map(|i| user(&i.to_string())).collect()].concat(),
        [second, vec![user("6")]].concat(),
    ];
    assert_eq!(store.replaced("s").await.unwrap(), replaced);
    assert_eq!(store.history("s").await.unwrap().len(), 8);
    let reopened = backend.open().await;
    assert_eq!(reopened.load("s").await.unwrap(), snapshot);
    assert_eq!(reopened.replaced("s").await.unwrap(), replaced);

    // From version 0 of a session that has only had appends: all of them
    // follow, and the view it replaced was empty.
    store.append("fresh", vec![user("a")]).await.unwrap();
    assert_eq!(
        store
            .replace_view("fresh", 0, vec![summary_of("nothing")])
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store.load("fresh").await.unwrap().messages,
        vec![summary_of("nothing"), user("a")]
    );
    assert_eq!(store.replaced("fresh").await.unwrap(), vec![vec![]]);
}

async fn a_stale_compaction_conflicts_and_changes_nothing(backend: &dyn Backend) {
    let store = backend.open().await;
    let read = store.append("s", vec![user("1")]).await.unwrap();
    store.append("s", vec![user("2")]).await.unwrap();
    let compacted = store
        .replace_view("s", 2, vec![summary_of("1, 2")])
        .await
        .unwrap();
    store.append("s", vec![user("3")]).await.unwrap();
    let before = (
        store.load("s").await.unwrap(),
        store.history("s").await.unwrap(),
        store.replaced("s").await.unwrap(),
    );
    // From before the compaction, or a version the session never had.
    for expected in [read, 2, 0, 5, 9] {
        let err = store
            .replace_view("s", expected, vec![summary_of("1")])
            .await
            .unwrap_err();
        assert_eq!(
            err,
            StoreError::Conflict {
                session: "s".into(),
                expected,
                actual: 4
            }
        );
    }
    let after = (
        store.load("s").await.unwrap(),
        store.history("s").await.unwrap(),
        store.replaced("s").await.unwrap(),
    );
    assert_eq!(after, before);
    // From the compaction's version on, it commits.
    assert_eq!(
        store
            .replace_view("s", compacted, vec![summary_of("1, 2 again")])
            .await
            .unwrap(),
        5
    );
    assert_eq!(
        store.load("s").await.unwrap().messages,
        vec![summary_of("1, 2 again"), user("3")]
    );
    // A session never written is at version 0.
    assert_eq!(
        store
            .replace_view("new", 0, vec![summary_of("x")])
            .await
            .unwrap(),
        1
    );
    assert!(matches!(
        store.replace_view("newer", 1, vec![]).await,
        Err(StoreError::Conflict { actual: 0, .. })
    ));
}

/// One compactor and a writer appending all the while: every compaction
/// commits, and every view is a summary then the end of the history.
async fn compactions_commit_while_appends_stream_in(backend: &dyn Backend) {
    let store = backend.open().await;
    store.append("s", vec![user("0")]).await.unwrap();
    let writer = {
        let store = backend.open().await;
        tokio::spawn(async move {
            for i in 1..=60 {
                store.append("s", vec![user(&i.to_string())]).await.unwrap();
                tokio::task::yield_now().await;
            }
        })
    };
    let mut committed = 0;
    while !writer.is_finished() || committed == 0 {
        let snapshot = store.load("s").await.unwrap();
        let mut view = vec![summary_of(&format!("at {}", snapshot.version))];
        let recorded: Vec<&StoredMessage> = snapshot
            .messages
            .iter()
            .filter(|m| !summary::is_summary(&m.message))
            .collect();
        let newest = recorded.len().saturating_sub(2);
        view.extend(recorded[newest..].iter().map(|&m| m.clone()));
        tokio::task::yield_now().await;
        store
            .replace_view("s", snapshot.version, view)
            .await
            .expect("only appends came between: it commits");
        committed += 1;
    }
    writer.await.unwrap();
    let history = store.history("s").await.unwrap();
    assert_eq!(history.len(), 61);
    let snapshot = store.load("s").await.unwrap();
    assert_eq!(snapshot.version, 61 + committed);
    let view = plain(&snapshot.messages);
    assert!(summary::is_summary(&view[0]));
    assert!(view[1..].iter().all(|m| !summary::is_summary(m)));
    assert!(history.ends_with(&view[1..]), "{view:?}");
    assert!(view.len() >= 2, "the newest messages are in the view");
    assert_eq!(store.replaced("s").await.unwrap().len(), committed as usize);
}

async fn of_two_racing_compactions_one_commits(backend: &dyn Backend) {
    let (first, second) = (backend.open().await, backend.open().await);
    let v = first
        .append("s", vec![user("1"), user("2"), user("3")])
        .await
        .unwrap();
    for round in 0..5 {
        let v = first.load("s").await.unwrap().version;
        let (x, y) = tokio::join!(
            first.replace_view("s", v, vec![summary_of(&format!("first {round}"))]),
            second.replace_view("s", v, vec![summary_of(&format!("second {round}"))]),
        );
        let won = match (&x, &y) {
            (Ok(w), Err(StoreError::Conflict { actual, .. }))
            | (Err(StoreError::Conflict { actual, .. }), Ok(w)) => {
                assert_eq!(*w, v + 1);
                assert!(*actual == v + 1, "{actual}");
                if x.is_ok() { "first" } else { "second" }
            }
            other => panic!("expected one commit and one conflict, got {other:?}"),
        };
        assert_eq!(
            first.load("s").await.unwrap().messages,
            vec![summary_of(&format!("{won} {round}"))]
        );
    }
    assert_eq!(first.load("s").await.unwrap().version, v + 5);
    assert_eq!(first.replaced("s").await.unwrap().len(), 5);
    assert_eq!(first.history("s").await.unwrap().len(), 3);
}

async fn compaction_keeps_replaced_readable_and_history_intact(backend: &dyn Backend) {
    let store = backend.open().await;
    let system = StoredMessage::new(Message::system("rules"), 2, true);
    let v = store
        .append("s", vec![system.clone(), user("1"), user("2"), user("3")])
        .await
        .unwrap();
    let first = vec![system.clone(), summary_of("1, 2"), user("3")];
    assert_eq!(
        store.replace_view("s", v, first.clone()).await.unwrap(),
        v + 1
    );
    store.append("s", vec![user("4")]).await.unwrap();
    let v = store.append("s", vec![user("5")]).await.unwrap();
    let second = vec![system.clone(), summary_of("1-4"), user("5")];
    let v = store.replace_view("s", v, second.clone()).await.unwrap();
    store.append("s", vec![user("6")]).await.unwrap();

    let snapshot = store.load("s").await.unwrap();
    assert_eq!(snapshot.version, v + 1);
    assert_eq!(
        snapshot.messages,
        [second.clone(), vec![user("6")]].concat()
    );
    assert_eq!(
        store.history("s").await.unwrap(),
        [
            vec![Message::system("rules")],
            (1..=6).map(|i| Message::user(i.to_string())).collect(),
        ]
        .concat()
    );
    assert_eq!(
        store.replaced("s").await.unwrap(),
        vec![
            vec![system, user("1"), user("2"), user("3")],
            [first, vec![user("4"), user("5")]].concat(),
        ]
    );
    // And after a restart.
    let reopened = backend.open().await;
    assert_eq!(reopened.load("s").await.unwrap(), snapshot);
    assert_eq!(reopened.replaced("s").await.unwrap().len(), 2);
}

async fn invalid_session_ids_are_refused(backend: &dyn Backend) {
    let store = backend.open().await;
    store.append("ok", vec![user("kept")]).await.unwrap();
    for id in ["", "a\nb", "nul\0", "tab\there", "\u{7f}"] {
        let refused = |r: Result<(), StoreError>| {
            assert!(
                matches!(r, Err(StoreError::InvalidSession(ref s)) if s.contains(id)),
                "{id:?}: {r:?}"
            );
        };
        refused(store.load(id).await.map(drop));
        refused(store.append(id, vec![user("x")]).await.map(drop));
        refused(store.replace_view(id, 0, vec![]).await.map(drop));
        refused(store.history(id).await.map(drop));
        refused(store.replaced(id).await.map(drop));
    }
    if let Some([a, _, _]) = backend.tenants().await {
        assert!(matches!(
            a.load("").await,
            Err(StoreError::InvalidSession(_))
        ));
    }
    assert_eq!(
        store.history("ok").await.unwrap(),
        vec![Message::user("kept")]
    );
    assert_eq!(store.load("ok").await.unwrap().version, 1);
}

fn every_shape() -> Vec<StoredMessage> {
    let image = ImageContent::new("image/png", (0..=255).collect());
    let low = image.clone().with_detail("low");
    let other = ImageContent::new("image/jpeg", vec![0xFF, 0xD8, 0, 1]).with_detail("high");
    let empty = ImageContent::new("image/webp", Vec::new()).with_detail("a word of its own");
    let wire = json!({
        "type": "input_audio",
        "input_audio": {"data": "UklGRg==", "format": "wav"},
        "numbers": [0.1, 1e300, -2.5e-308, 42, -7, 18446744073709551615_u64],
        "z": null, "a": true, "nested": {"b": {}, "a": []},
        "text": "quote \" backslash \\ nul \u{0} emoji 🦀"
    });
    vec![
        StoredMessage::new(Message::system("You are terse. ✓ 日本語"), 9, true),
        StoredMessage::new(
            Message::user_blocks(vec![
                ContentBlock::Text("look at this".into()),
                ContentBlock::Image(image.clone()),
                ContentBlock::Wire(wire),
                ContentBlock::Wire(json!("a bare string")),
            ]),
            1_000,
            false,
        ),
        // The same bytes at other details, twice in one message, beside
        // other images; an image of no bytes; an image by URL.
        StoredMessage::new(
            Message::user_blocks(vec![
                ContentBlock::Image(low.clone()),
                ContentBlock::Image(other.clone()),
                ContentBlock::Image(image),
                ContentBlock::Image(low),
                ContentBlock::Image(empty),
                ContentBlock::Wire(
                    json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}),
                ),
            ]),
            3_000,
            true,
        ),
        StoredMessage::new(Message::user_blocks(vec![]), 0, false),
        StoredMessage::new(
            Message::Assistant {
                content: String::new(),
                reasoning: Some("think\n  step by step\r\n".into()),
                tool_calls: vec![
                    ToolCall::new("c1", "read", r#"{"path": "a b.rs"}"#),
                    ToolCall::new("c2", "shell", "not json { at all"),
                ],
            },
            31,
            false,
        ),
        StoredMessage::new(
            Message::ToolResult {
                tool_call_id: "c1".into(),
                content: "line 1\r\nline 2\t\u{0}end".into(),
                name: Some("read".into()),
            },
            12,
            false,
        ),
        StoredMessage::new(Message::tool_result("c2", ""), 0, false),
        StoredMessage::new(
            Message::assistant("'; DROP TABLE messages; -- $1 ?1 %s {}"),
            5,
            false,
        ),
        StoredMessage::new(Message::user("x".repeat(300_000)), 1 << 40, true),
        StoredMessage::new(summary::message("so far: 🦀"), 6, true),
    ]
}

async fn messages_of_every_shape_round_trip(backend: &dyn Backend) {
    let store = backend.open().await;
    let shapes = every_shape();
    assert!(validate(&plain(&shapes)).is_empty());
    let v = store.append("s", shapes.clone()).await.unwrap();
    for one in &shapes {
        store.append("one by one", vec![one.clone()]).await.unwrap();
    }
    let reopened = backend.open().await;
    for id in ["s", "one by one"] {
        assert_eq!(reopened.load(id).await.unwrap().messages, shapes);
        assert_eq!(reopened.history(id).await.unwrap(), plain(&shapes));
    }
    // In a compacted view and in what a compaction replaced, too.
    let view: Vec<StoredMessage> = shapes.iter().rev().cloned().collect();
    store.replace_view("s", v, view.clone()).await.unwrap();
    let reopened = backend.open().await;
    assert_eq!(reopened.load("s").await.unwrap().messages, view);
    assert_eq!(reopened.replaced("s").await.unwrap(), vec![shapes]);
}

/// An image of `size` bytes that differs from every other `seed`'s.
fn picture(seed: u8, size: usize) -> ImageContent {
    let data = (0..size)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect();
    ImageContent::new("image/png", data)
}

fn showing(text: &str, images: &[&ImageContent]) -> StoredMessage {
    let mut blocks = vec![ContentBlock::Text(text.into())];
    blocks.extend(images.iter().map(|&i| ContentBlock::Image(i.clone())));
    StoredMessage::new(Message::user_blocks(blocks), 1_530, false)
}

async fn one_image_in_many_messages_and_sessions_round_trips(backend: &dyn Backend) {
    let (a, b) = (picture(1, 40_000), picture(2, 30_000).with_detail("low"));
    let b_high = ImageContent {
        detail: Some("high".into()),
        ..b.clone()
    };
    let store = backend.open().await;
    let (first, second) = (unique("images"), unique("images"));
    let mut shown = Vec::new();
    let mut v = 0;
    for i in 0..4 {
        let message = showing(&format!("turn {i}"), &[&a, &b, &b_high, &a]);
        v = store.append(&first, vec![message.clone()]).await.unwrap();
        shown.push(message);
    }
    store.append(&second, shown[..2].to_vec()).await.unwrap();
    let view = vec![
        summary_of("turns 0-2"),
        shown[3].clone(),
        showing("again", &[&b]),
    ];
    store.replace_view(&first, v, view.clone()).await.unwrap();
    let after = showing("after", &[&a]);
    store.append(&first, vec![after.clone()]).await.unwrap();
    let reopened = backend.open().await;
    let mut expected_view = view;
    expected_view.push(after.clone());
    assert_eq!(reopened.load(&first).await.unwrap().messages, expected_view);
    let mut history = plain(&shown);
    history.push(after.message);
    assert_eq!(reopened.history(&first).await.unwrap(), history);
    assert_eq!(
        reopened.replaced(&first).await.unwrap(),
        vec![shown.clone()]
    );
    assert_eq!(reopened.load(&second).await.unwrap().messages, shown[..2]);
    if let Some([x, y, _]) = backend.tenants().await {
        x.append(&first, vec![shown[0].clone()]).await.unwrap();
        assert_eq!(x.history(&first).await.unwrap(), plain(&shown[..1]));
        assert!(y.history(&first).await.unwrap().is_empty());
    }
}

async fn many_appends_keep_order(backend: &dyn Backend) {
    let store = backend.open().await;
    let mut expected = Vec::new();
    let mut versions = Vec::new();
    for i in 0..150 {
        let m = user(&format!("single {i}"));
        expected.push(m.message.clone());
        versions.push(store.append("s", vec![m]).await.unwrap());
    }
    for batch in 0..3 {
        let ms: Vec<StoredMessage> = (0..100)
            .map(|i| user(&format!("batch {batch} {i}")))
            .collect();
        expected.extend(plain(&ms));
        versions.push(store.append("s", ms).await.unwrap());
    }
    assert_eq!(versions, (1..=153).collect::<Vec<u64>>());
    assert_eq!(store.history("s").await.unwrap(), expected);
    assert_eq!(plain(&store.load("s").await.unwrap().messages), expected);

    // Four writers at once: each one's messages in its order, none lost.
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut versions = Vec::new();
                for i in 0..25 {
                    let m = user(&format!("w{w} {i}"));
                    versions.push(store.append("shared", vec![m]).await.unwrap());
                }
                versions
            })
        })
        .collect();
    let mut versions = Vec::new();
    for writer in writers {
        versions.extend(writer.await.unwrap());
    }
    versions.sort_unstable();
    assert_eq!(versions, (1..=100).collect::<Vec<u64>>());
    let history = store.history("shared").await.unwrap();
    assert_eq!(history.len(), 100);
    for w in 0..4 {
        let mine: Vec<String> = history
            .iter()
            .map(Message::text)
            .filter(|t| t.starts_with(&format!("w{w} ")))
            .collect();
        let wanted: Vec<String> = (0..25).map(|i| format!("w{w} {i}")).collect();
        assert_eq!(mine, wanted);
    }
}

/// Counts how often a message is counted.
#[derive(Default)]
struct Counting(AtomicUsize);

#[async_trait::async_trait]
impl TokenCounter for Counting {
    async fn count(&self, text: &str) -> Result<usize, MemoryError> {
        CharTokenCounter.count(text).await
    }
    async fn count_message(&self, message: &Message) -> Result<usize, MemoryError> {
        // The index of what a context leaves out is made at every call (a
        // projection, never stored): counting it recounts nothing.
        if !memory_session::left_out::is_index(message) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
        CharTokenCounter.count_message(message).await
    }
}

async fn window_memory_reopens_without_recounting(backend: &dyn Backend) {
    let store = backend.open().await;
    let mut memory = WindowMemory::new(60)
        .with_strategy(memory_core::test_util::FoldOld)
        .with_store(store.clone(), "agent");
    memory
        .record_protected(Message::system("You are a coding agent."))
        .await
        .unwrap();
    for i in 0..10 {
        memory
            .record(Message::user(format!("question number {i}")))
            .await
            .unwrap();
        memory
            .record(Message::assistant_with_tools(
                "",
                vec![ToolCall::new(format!("c{i}"), "shell", "{}")],
            ))
            .await
            .unwrap();
        memory
            .record(Message::tool_result(format!("c{i}"), "ok"))
            .await
            .unwrap();
        let context = memory.context().await.unwrap();
        assert!(validate(&context).is_empty());
    }
    let before = memory.context().await.unwrap();
    let tokens = memory.total_tokens();
    drop(memory);
    assert!(!store.replaced("agent").await.unwrap().is_empty());
    assert!(before.iter().any(summary::is_summary));

    let counter = Arc::new(Counting::default());
    let mut reopened = WindowMemory::new(60)
        .with_strategy(memory_core::test_util::FoldOld)
        .with_token_counter(counter.clone())
        .with_store(backend.open().await, "agent");
    assert_eq!(reopened.context().await.unwrap(), before);
    assert_eq!(reopened.total_tokens(), tokens);
    assert_eq!(counter.0.load(Ordering::SeqCst), 0, "nothing recounted");
    reopened.record(Message::user("one more")).await.unwrap();
    assert_eq!(counter.0.load(Ordering::SeqCst), 1, "only the new message");
    assert_eq!(reopened.history().await.unwrap().len(), 1 + 30 + 1);
}

async fn writes_go_together_and_each_is_answered(backend: &dyn Backend) {
    let store = backend.open().await;
    let (a, b) = (unique("wa"), unique("wb"));
    let read = store.append(&b, vec![user("b1")]).await.unwrap();
    store.append(&b, vec![user("b2")]).await.unwrap();
    let answers = store
        .write_all(vec![
            StoreWrite::Append {
                session: a.clone(),
                messages: vec![user("a1"), user("a2")],
            },
            // A stale version, then the right one: the first conflicts and
            // leaves the others to stand.
            StoreWrite::Replace {
                session: b.clone(),
                expected: 9,
                view: vec![summary_of("no")],
            },
            StoreWrite::Replace {
                session: b.clone(),
                expected: read,
                view: vec![summary_of("b1")],
            },
            StoreWrite::Append {
                session: b.clone(),
                messages: vec![user("b3")],
            },
            StoreWrite::Append {
                session: String::new(),
                messages: vec![user("nowhere")],
            },
            StoreWrite::Append {
                session: a.clone(),
                messages: vec![user("a3")],
            },
        ])
        .await;
    assert_eq!(answers.len(), 6);
    assert_eq!(answers[0].as_ref().ok(), Some(&1));
    assert!(
        matches!(answers[1], Err(StoreError::Conflict { expected: 9, .. })),
        "{:?}",
        answers[1]
    );
    assert_eq!(answers[2].as_ref().ok(), Some(&3));
    assert_eq!(answers[3].as_ref().ok(), Some(&4));
    assert!(matches!(answers[4], Err(StoreError::InvalidSession(_))));
    assert_eq!(answers[5].as_ref().ok(), Some(&2));
    assert_eq!(
        store.load(&a).await.unwrap().messages,
        vec![user("a1"), user("a2"), user("a3")]
    );
    assert_eq!(
        store.load(&b).await.unwrap(),
        Snapshot {
            messages: vec![summary_of("b1"), user("b2"), user("b3")],
            version: 4
        }
    );
    assert_eq!(store.history(&b).await.unwrap().len(), 3);
}

async fn a_deleted_session_is_gone_and_nothing_else(backend: &dyn Backend) {
    let store = backend.open().await;
    let (gone, kept) = (unique("gone"), unique("kept"));
    let read = store
        .append(&gone, vec![user("1"), user("2")])
        .await
        .unwrap();
    store
        .replace_view(&gone, read, vec![summary_of("1, 2")])
        .await
        .unwrap();
    store.append(&kept, vec![user("k")]).await.unwrap();
    store.delete(&gone).await.unwrap();
    assert_eq!(store.load(&gone).await.unwrap(), Snapshot::default());
    assert!(store.history(&gone).await.unwrap().is_empty());
    assert!(store.replaced(&gone).await.unwrap().is_empty());
    assert_eq!(store.history(&kept).await.unwrap().len(), 1);
    // Written again, it starts afresh.
    assert_eq!(store.append(&gone, vec![user("new")]).await.unwrap(), 1);
    assert_eq!(
        store.history(&gone).await.unwrap(),
        vec![Message::user("new")]
    );
    // Erasing a session never written is no error; another tenant's is
    // left alone.
    store.delete(&unique("never")).await.unwrap();
    if let Some([a, b, _]) = backend.tenants().await {
        a.append(&kept, vec![user("a")]).await.unwrap();
        b.delete(&kept).await.unwrap();
        assert_eq!(a.history(&kept).await.unwrap().len(), 1);
    }
}

/// One test per case and store.
macro_rules! contract {
    ($store:ident, $backend:expr) => {
        mod $store {
            use super::*;

            async fn backend() -> Option<Box<dyn Backend>> {
                $backend
            }

            contract!(@cases
                append_load_and_versions,
                sessions_are_isolated,
                tenants_are_isolated,
                writes_go_together_and_each_is_answered,
                a_deleted_session_is_gone_and_nothing_else,
                a_compaction_rebases_over_appends,
                a_stale_compaction_conflicts_and_changes_nothing,
                compactions_commit_while_appends_stream_in,
                of_two_racing_compactions_one_commits,
                compaction_keeps_replaced_readable_and_history_intact,
                invalid_session_ids_are_refused,
                messages_of_every_shape_round_trip,
                one_image_in_many_messages_and_sessions_round_trips,
                many_appends_keep_order,
                window_memory_reopens_without_recounting
            );
        }
    };
    (@cases $($case:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                if let Some(backend) = backend().await {
                    super::$case(&*backend).await;
                }
            }
        )*
    };
}

contract!(
    in_memory,
    Some(Box::new(InMemory(Arc::new(InMemoryStore::new()))))
);
contract!(sqlite, Some(Box::new(Sqlite::new(true))));
contract!(sqlite_a_commit_each, Some(Box::new(Sqlite::new(false))));
contract!(
    postgres,
    Postgres::from_env().map(|p| Box::new(p) as Box<dyn Backend>)
);

/// A handle resolves to exactly the original through `WindowMemory`, after
/// the SQLite store it was recorded in is closed and opened again; another
/// session's handle is refused.
#[tokio::test]
async fn a_recall_returns_the_original_across_a_restart_of_a_sqlite_store() {
    use memory_core::recall::{Handle, RecallRequest};
    use memory_core::{Memory, Message, ToolCall};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("recall.db");
    let call =
        Message::assistant_with_tools("", vec![ToolCall::new("c1", "cat", r#"{"path":"a.rs"}"#)]);
    let output = Message::tool_result("c1", "fn main() {\n    println!(\"hi\");\n}\n".repeat(40));
    {
        let store = Arc::new(memory_sqlite::SqliteStore::open(&path).unwrap());
        let mut memory = memory_session::WindowMemory::new(50).with_store(store, "s1");
        memory.record(Message::user("Read a.rs.")).await.unwrap();
        memory.record(call.clone()).await.unwrap();
        memory.record(output.clone()).await.unwrap();
        memory.record(Message::user("Now fix it.")).await.unwrap();
        // The output is shed from the context...
        assert!(!memory.context().await.unwrap().contains(&output));
    }
    let store = Arc::new(memory_sqlite::SqliteStore::open(&path).unwrap());
    let memory = memory_session::WindowMemory::new(50).with_store(store.clone(), "s1");
    // ... and one recall away after the restart, exactly.
    let one = memory
        .recall(&RecallRequest::new(
            Handle::of(std::slice::from_ref(&output)).to_string(),
        ))
        .await
        .unwrap();
    assert_eq!(one.messages, vec![output.clone()]);
    let both = Handle::of(&[call.clone(), output.clone()]).to_string();
    assert_eq!(
        memory
            .recall(&RecallRequest::new(both.clone()))
            .await
            .unwrap()
            .messages,
        vec![call, output]
    );
    let other = memory_session::WindowMemory::new(50).with_store(store, "s2");
    assert!(other.recall(&RecallRequest::new(both)).await.is_err());
}

/// An agent session recorded into SQLite through a Thrift memory: every
/// handle any of its contexts carried (placeholders of results, images and
/// reasoning, cut markers, the index) names recorded messages, and after the store is closed and
/// opened again one recall of it returns exactly those originals.
#[tokio::test]
async fn every_handle_a_context_carried_recalls_its_originals_after_a_restart() {
    use memory_core::recall::{self, Handle, RecallRequest, handles_in};
    use memory_core::{ContentBlock, ImageContent, Memory, Message, ToolCall};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("handles.db");
    let mut recorded = vec![
        Message::system("You are a coding agent."),
        Message::user("Fix the parser in src/parse.rs."),
        Message::assistant("Which error do you see?"),
        Message::user_blocks(vec![
            ContentBlock::Text("This one.".into()),
            ContentBlock::Image(ImageContent::new("image/png", vec![7; 4_000])),
        ]),
        Message::assistant("I see it."),
        Message::user("Now fix it."),
    ];
    for step in 0..12 {
        let id = format!("c{step}");
        // Every third step thinks aloud at length first.
        let reasoning = (step % 3 == 0)
            .then(|| format!("The parser may call f{step} before it is defined. ").repeat(12));
        recorded.push(Message::Assistant {
            content: String::new(),
            reasoning,
            tool_calls: vec![ToolCall::new(
                &id,
                "cat",
                format!(r#"{{"path":"src/f{step}.rs"}}"#),
            )],
        });
        // Every fourth output is long enough to be cut (over 1,024 tokens).
        let lines = if step % 4 == 3 { 300 } else { 25 };
        let output: String = (0..lines)
            .map(|l| format!("fn f{step}_{l}() {{ parse(); }}\n"))
            .collect();
        recorded.push(Message::tool_result(id, output));
    }
    recorded.push(Message::assistant("The parser is fixed."));
    recorded.push(Message::user("And what did src/f1.rs hold?"));
    recorded.push(Message::assistant("Two functions."));
    let mut carried: Vec<Handle> = Vec::new();
    let mut texts = String::new();
    {
        let store = Arc::new(SqliteStore::open(&path).unwrap());
        let mut memory = WindowMemory::new(2_500)
            .with_store(store, "s1")
            // Images priced at their bytes over four, so that Thrift
            // replaces them when it must.
            .with_token_counter(memory_core::test_util::PricedImages(1_000))
            .with_strategy(memory_thrift::Thrift::new());
        for (i, message) in recorded.iter().enumerate() {
            if i > 1 && message.is_assistant() {
                let context = memory.context().await.unwrap();
                for handle in handles_in(&context) {
                    if !carried.contains(&handle) {
                        carried.push(handle);
                    }
                }
                texts.extend(context.iter().map(|m| recall::part_text(m) + "\n"));
            }
            if i == 0 {
                memory.record_protected(message.clone()).await.unwrap();
            } else {
                memory.record(message.clone()).await.unwrap();
            }
        }
    }
    // Each kind of shed piece left its handle somewhere.
    for kind in [
        "[earlier tool result omitted",
        "characters cut; recall r:",
        "[image omitted",
        "[reasoning omitted",
        memory_session::left_out::PREFIX,
    ] {
        assert!(texts.contains(kind), "no context carried {kind:?}");
    }
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let memory = WindowMemory::new(2_500).with_store(store, "s1");
    for handle in carried {
        let range = handle
            .find(&recorded)
            .unwrap_or_else(|| panic!("{handle} names no recorded message"));
        let back = memory
            .recall(&RecallRequest::new(handle.to_string()))
            .await
            .unwrap();
        assert_eq!(back.messages, recorded[range], "{handle}");
        assert!(back.whole);
    }
}

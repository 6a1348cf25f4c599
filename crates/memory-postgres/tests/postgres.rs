//! PostgresStore against a real server: schema migration, secrets kept out
//! of `Debug` and logs. The `Store` contract itself is checked by the
//! cross-crate suite (`tests/tests/store_contract.rs`).
//!
//! Reads `MEMORY_POSTGRES_URL`; each test skips with a notice when unset,
//! and fails when it is unset under CI.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use memory_core::test_util::POSTGRES;
use memory_core::{
    ContentBlock, ImageContent, Message, Snapshot, Store, StoreError, StoreWrite, StoredMessage,
};
use memory_postgres::{PostgresStore, SCHEMA_VERSION};

/// The server's URL; a notice and `None` when it is unset (a failure under
/// CI).
fn url() -> Option<String> {
    POSTGRES.value()
}

fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}_{}_{nanos}", std::process::id())
}

/// A PostgreSQL schema of its own for a test, dropped at the end: `url`
/// with `search_path` pointing at it.
struct Scratch {
    client: tokio_postgres::Client,
    name: String,
    url: String,
}

impl Scratch {
    async fn new(url: &str) -> Self {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect to MEMORY_POSTGRES_URL");
        tokio::spawn(connection);
        let name = unique("memory_test");
        // An identifier cannot be a parameter; this one is made here, of
        // letters, digits and underscores.
        client
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .await
            .unwrap();
        let separator = if url.contains('?') { '&' } else { '?' };
        let url = format!("{url}{separator}options=-csearch_path%3D{name}");
        Self { client, name, url }
    }

    async fn drop(self) {
        self.client
            .batch_execute(&format!("DROP SCHEMA {} CASCADE", self.name))
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_starting_at_once_migrate_the_schema_once() {
    let Some(url) = url() else { return };
    let scratch = Scratch::new(&url).await;
    let connects: Vec<_> = (0..8)
        .map(|_| {
            let url = scratch.url.clone();
            tokio::spawn(async move { PostgresStore::connect_with(&url, 2).await })
        })
        .collect();
    let mut stores = Vec::new();
    for connect in connects {
        stores.push(connect.await.unwrap().expect("every worker connects"));
    }
    let versions = scratch
        .client
        .query(
            &format!("SELECT version FROM {}.memory_schema_version", scratch.name),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0].get::<_, i32>(0), SCHEMA_VERSION);
    // The tables are in the scratch schema and work.
    let v = stores[3]
        .append("s", vec![StoredMessage::new(Message::user("hi"), 1, false)])
        .await
        .unwrap();
    assert_eq!(stores[5].load("s").await.unwrap().version, v);
    drop(stores);
    scratch.drop().await;
}

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let Some(url) = url() else { return };
    let scratch = Scratch::new(&url).await;
    drop(PostgresStore::connect(&scratch.url).await.unwrap());
    scratch
        .client
        .batch_execute(&format!(
            "UPDATE {}.memory_schema_version SET version = 99",
            scratch.name
        ))
        .await
        .unwrap();
    let err = PostgresStore::connect(&scratch.url).await.unwrap_err();
    assert!(err.to_string().contains("upgrade memory-postgres"), "{err}");
    scratch.drop().await;
}

/// A store in a scratch schema where the database refuses every message
/// with `refused` in it, and notes which transaction wrote each message
/// (table `written`).
async fn refusing_store(scratch: &Scratch) -> PostgresStore {
    let store = PostgresStore::connect_with(&scratch.url, 2).await.unwrap();
    scratch
        .client
        .batch_execute(&format!(
            "SET search_path = {0};
             CREATE TABLE written (session text, xid bigint);
             CREATE FUNCTION note_xid() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN INSERT INTO written VALUES (NEW.session, txid_current()); RETURN NEW; END $$;
             CREATE TRIGGER note_xid AFTER INSERT ON memory_messages
                 FOR EACH ROW EXECUTE FUNCTION note_xid();
             ALTER TABLE memory_messages ADD CONSTRAINT refused CHECK (body NOT LIKE '%refused%');",
            scratch.name
        ))
        .await
        .unwrap();
    store
}

/// How many transactions wrote the messages of `sessions` (quoted, comma
/// separated).
async fn transactions(scratch: &Scratch, sessions: &str) -> i64 {
    let query = format!("SELECT count(DISTINCT xid) FROM written WHERE session IN ({sessions})");
    scratch
        .client
        .query_one(&query, &[])
        .await
        .unwrap()
        .get::<_, i64>(0)
}

fn m(text: &str) -> StoredMessage {
    StoredMessage::new(Message::user(text), 1, false)
}

fn append(session: &str, text: &str) -> StoreWrite {
    StoreWrite::Append {
        session: session.into(),
        messages: vec![m(text)],
    }
}

fn is_refused(answer: &Result<u64, StoreError>) -> bool {
    matches!(answer, Err(StoreError::Backend(e)) if e.contains("refused"))
}

/// `write_all` commits its writes in one transaction, and a write that
/// fails in the database is rolled back alone: the writes before and after
/// it commit, the session it wrote to is left as it was. Writes on
/// sessions of their own go in one round trip (and, after a failure, again
/// each in a savepoint); writes that share a session go each in a
/// savepoint from the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_commit_in_one_transaction_and_one_that_fails_is_rolled_back_alone() {
    let Some(url) = url() else { return };
    let scratch = Scratch::new(&url).await;
    let store = refusing_store(&scratch).await;

    // Sessions of their own.
    let answers = store
        .write_all(vec![
            append("e", "e1"),
            append("f", "refused"),
            append("g", "g1"),
        ])
        .await;
    assert_eq!(answers[0].as_ref().ok(), Some(&1));
    assert!(is_refused(&answers[1]), "{:?}", answers[1]);
    assert_eq!(answers[2].as_ref().ok(), Some(&1));
    assert_eq!(store.load("f").await.unwrap(), Snapshot::default());
    assert_eq!(store.load("g").await.unwrap().messages, vec![m("g1")]);
    assert_eq!(transactions(&scratch, "'e', 'g'").await, 1);

    // A session written twice.
    let answers = store
        .write_all(vec![
            append("a", "a1"),
            append("b", "refused"),
            append("c", "c1"),
            append("a", "a2"),
        ])
        .await;
    assert_eq!(answers[0].as_ref().ok(), Some(&1));
    assert!(is_refused(&answers[1]), "{:?}", answers[1]);
    assert_eq!(answers[2].as_ref().ok(), Some(&1));
    assert_eq!(answers[3].as_ref().ok(), Some(&2));
    let a = store.load("a").await.unwrap().messages;
    assert_eq!(a, vec![m("a1"), m("a2")]);
    assert_eq!(store.load("b").await.unwrap(), Snapshot::default());
    assert_eq!(transactions(&scratch, "'a', 'c'").await, 1);

    // Alone, each append is a transaction of its own.
    store.append("d", vec![m("d1")]).await.unwrap();
    store.append("d", vec![m("d2")]).await.unwrap();
    assert_eq!(transactions(&scratch, "'d'").await, 2);
    drop(store);
    scratch.drop().await;
}

/// Views replaced among writes on sessions of their own: one that
/// conflicts is answered with the session's version and writes nothing,
/// the others commit together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_replaced_among_other_writes_commit_or_conflict_alone() {
    let Some(url) = url() else { return };
    let scratch = Scratch::new(&url).await;
    let store = refusing_store(&scratch).await;
    let read = store.append("h", vec![m("h1")]).await.unwrap();
    let replace = |expected| StoreWrite::Replace {
        session: "h".into(),
        expected,
        view: vec![m("h view")],
    };
    let answers = store
        .write_all(vec![append("i", "i1"), replace(9), append("j", "j1")])
        .await;
    assert_eq!(answers[0].as_ref().ok(), Some(&1));
    assert!(
        matches!(
            answers[1],
            Err(StoreError::Conflict {
                expected: 9,
                actual: 1,
                ..
            })
        ),
        "{:?}",
        answers[1]
    );
    assert_eq!(answers[2].as_ref().ok(), Some(&1));
    assert_eq!(transactions(&scratch, "'i', 'j'").await, 1);
    let answers = store
        .write_all(vec![replace(read), append("k", "k1")])
        .await;
    assert_eq!(answers[0].as_ref().ok(), Some(&2));
    assert_eq!(answers[1].as_ref().ok(), Some(&1));
    assert_eq!(
        store.load("h").await.unwrap(),
        Snapshot {
            messages: vec![m("h view")],
            version: 2
        }
    );
    assert_eq!(store.history("h").await.unwrap(), vec![Message::user("h1")]);
    drop(store);
    scratch.drop().await;
}

/// `write_all` stores each distinct image its writes name once, with the
/// writes that name it: a refused write leaves none of its images behind,
/// images named by several writes of one call are stored once, and every
/// message reads back with its images, whether the writes went in one
/// round trip or each in a savepoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_all_stores_each_image_once_and_reads_it_back() {
    let Some(url) = url() else { return };
    let scratch = Scratch::new(&url).await;
    let store = refusing_store(&scratch).await;
    let pictured =
        |text: &str, images: &[u8]| {
            let mut blocks = vec![ContentBlock::Text(text.into())];
            blocks.extend(images.iter().map(|&byte| {
                ContentBlock::Image(ImageContent::new("image/png", vec![byte; 4096]))
            }));
            StoredMessage::new(Message::user_blocks(blocks), 1, false)
        };
    let write = |session: &str, message: StoredMessage| StoreWrite::Append {
        session: session.into(),
        messages: vec![message],
    };
    let versions = |answers: &[Result<u64, StoreError>]| {
        answers
            .iter()
            .map(|answer| answer.as_ref().ok().copied())
            .collect::<Vec<_>>()
    };

    // Sessions of their own, one write refused: one round trip, rolled
    // back, then each in a savepoint.
    let answers = store
        .write_all(vec![
            write("a", pictured("a1", &[1])),
            write("b", pictured("refused", &[9])),
            write("c", pictured("c1", &[1, 2])),
        ])
        .await;
    assert_eq!(versions(&answers), vec![Some(1), None, Some(1)]);
    // Sessions of their own, a view replaced, an image new to two writes:
    // one round trip.
    let answers = store
        .write_all(vec![
            write("e", pictured("e1", &[2])),
            StoreWrite::Replace {
                session: "c".into(),
                expected: 1,
                view: vec![pictured("c view", &[1, 3])],
            },
            write("d", pictured("d1", &[3])),
        ])
        .await;
    assert_eq!(versions(&answers), vec![Some(1), Some(2), Some(1)]);
    assert_eq!(transactions(&scratch, "'d', 'e'").await, 1);
    // A session written twice: each in a savepoint.
    let answers = store
        .write_all(vec![
            write("a", pictured("a3", &[1])),
            write("a", pictured("a4", &[4, 4])),
        ])
        .await;
    assert_eq!(versions(&answers), vec![Some(2), Some(3)]);

    let a = vec![
        pictured("a1", &[1]),
        pictured("a3", &[1]),
        pictured("a4", &[4, 4]),
    ];
    assert_eq!(store.load("a").await.unwrap().messages, a);
    assert_eq!(store.load("b").await.unwrap(), Snapshot::default());
    assert_eq!(
        store.load("c").await.unwrap().messages,
        vec![pictured("c view", &[1, 3])]
    );
    assert_eq!(
        store.history("c").await.unwrap(),
        vec![pictured("c1", &[1, 2]).message]
    );
    assert_eq!(
        store.load("d").await.unwrap().messages,
        vec![pictured("d1", &[3])]
    );
    assert_eq!(
        store.load("e").await.unwrap().messages,
        vec![pictured("e1", &[2])]
    );
    let held: i64 = scratch
        .client
        .query_one(
            &format!("SELECT count(*) FROM {}.memory_images", scratch.name),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        held, 4,
        "images 1, 2, 3 and 4, each once; not the refused 9"
    );
    drop(store);
    scratch.drop().await;
}

/// Collects every event and span field, as any log sink would see them.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<String>>);

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        span.record(&mut Fields(&mut self.0.lock().unwrap()));
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        values.record(&mut Fields(&mut self.0.lock().unwrap()));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut log = self.0.lock().unwrap();
        log.push('\n');
        log.push_str(event.metadata().target());
        event.record(&mut Fields(&mut log));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test]
async fn the_password_stays_out_of_debug_output_errors_and_logs() {
    let Some(url) = url() else { return };
    let config: tokio_postgres::Config = url.parse().unwrap();
    let Some(password) = config
        .get_password()
        .map(|p| String::from_utf8_lossy(p).into_owned())
    else {
        eprintln!("skipping: MEMORY_POSTGRES_URL has no password to hide");
        return;
    };
    let capture = Capture::default();
    let _guard = tracing::dispatcher::set_default(&tracing::Dispatch::new(capture.clone()));

    let store = PostgresStore::connect(&url).await.unwrap();
    let tenant = store.with_tenant(unique("debug"));
    tenant
        .append("s", vec![StoredMessage::new(Message::user("hi"), 1, false)])
        .await
        .unwrap();
    // A version the session never had.
    let conflict = tenant.replace_view("s", 2, vec![]).await.unwrap_err();
    // A wrong password: the server refuses, the message names the target.
    let wrong = url.replacen(&password, "not-the-password", 1);
    let refused = PostgresStore::connect(&wrong).await.unwrap_err();

    let shown = format!("{store:?} {tenant:?} {conflict} {conflict:?} {refused} {refused:?}");
    assert!(shown.contains(":***@"), "{shown}");
    assert!(!shown.contains(&password), "{shown}");
    assert!(
        refused
            .to_string()
            .contains("password authentication failed"),
        "{refused}"
    );
    let logged = capture.0.lock().unwrap().clone();
    assert!(
        logged.contains("memory_postgres"),
        "nothing was logged: {logged}"
    );
    assert!(!logged.contains(&password), "{logged}");
    assert!(!logged.contains("not-the-password"), "{logged}");
}

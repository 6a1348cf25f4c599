//! Images at their price and stored once: eight 1 MB images cost what
//! OpenAI bills for them, so a budget too small for them says so or sheds
//! them, and a SQLite file holding them in many messages grows by their
//! size once.

use std::path::Path;
use std::sync::Arc;

use memory_core::{ContentBlock, ImageContent, Memory, Message, Store, image};
use memory_session::WindowMemory;
use memory_sqlite::SqliteStore;

/// The size of each image, as a client's screenshot or photo.
const IMAGE_BYTES: usize = 1 << 20;

/// How many distinct images a session shows.
const IMAGES: usize = 8;

/// What one 1024 x 1024 image costs: seen at 768 x 768, four tiles.
const IMAGE_TOKENS: usize = 85 + 4 * 170;

/// A PNG of 1024 x 1024 pixels as far as its header says, `IMAGE_BYTES`
/// long, its bytes after the header random (`seed`'s own).
fn png(seed: u64) -> ImageContent {
    let mut data = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    data.extend_from_slice(&1024_u32.to_be_bytes());
    data.extend_from_slice(&1024_u32.to_be_bytes());
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while data.len() < IMAGE_BYTES {
        // xorshift64: bytes that do not compress.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        data.extend_from_slice(&state.to_le_bytes());
    }
    data.truncate(IMAGE_BYTES);
    ImageContent::new("image/png", data)
}

fn showing(text: &str, images: &[ImageContent]) -> Message {
    let mut blocks = vec![ContentBlock::Text(text.into())];
    blocks.extend(images.iter().cloned().map(ContentBlock::Image));
    Message::user_blocks(blocks)
}

#[tokio::test]
async fn eight_images_are_priced_and_a_small_budget_says_so() {
    let images: Vec<ImageContent> = (0..IMAGES as u64).map(png).collect();
    assert_eq!(image::tokens(&images[0]), IMAGE_TOKENS);
    let budget = 4_000;
    assert!(IMAGES * IMAGE_TOKENS > budget);

    // All eight in the question: the floor alone is over the budget.
    let mut memory = WindowMemory::new(budget);
    memory
        .record(Message::system("You look at screenshots."))
        .await
        .unwrap();
    memory
        .record(showing("What changed between these?", &images))
        .await
        .unwrap();
    let context = memory.fitted().await.unwrap();
    assert!(!context.fits, "eight images in {budget} tokens");
    assert!(
        context.tokens >= IMAGES * IMAGE_TOKENS,
        "{}",
        context.tokens
    );

    // One a turn: the older turns are shed, and what is sent fits.
    let mut memory = WindowMemory::new(budget);
    for (i, picture) in images.iter().enumerate() {
        memory
            .record(showing(
                &format!("Screenshot {i}."),
                std::slice::from_ref(picture),
            ))
            .await
            .unwrap();
        memory
            .record(Message::assistant(format!("Seen {i}.")))
            .await
            .unwrap();
    }
    memory
        .record(Message::user("Which one shows the error?"))
        .await
        .unwrap();
    let context = memory.fitted().await.unwrap();
    assert!(context.fits);
    assert!(context.tokens <= budget, "{}", context.tokens);
    let shown = context
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User(blocks) => Some(blocks),
            _ => None,
        })
        .flatten()
        .filter(|b| matches!(b, ContentBlock::Image(_)))
        .count();
    assert!(shown < IMAGES, "{shown} images shown");
    assert!(shown * IMAGE_TOKENS <= budget);
}

/// The bytes of a SQLite file and its write-ahead log.
fn on_disk(path: &Path) -> u64 {
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    size(path) + size(&path.with_extension("db-wal"))
}

/// How long the store's group commit may hold the file after its last
/// answer: its thread lets go of the connection a moment later, on a
/// busy machine at most a few seconds.
const CLOSING: std::time::Duration = std::time::Duration::from_secs(10);

/// Waits until the last connection to `path` closed, which checkpoints
/// its write-ahead log into the file and removes it (or `CLOSING` passed).
fn closed(path: &Path) {
    let started = std::time::Instant::now();
    while path.with_extension("db-wal").exists() && started.elapsed() < CLOSING {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[tokio::test]
async fn the_same_images_in_five_messages_grow_the_file_by_their_size_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let images: Vec<ImageContent> = (0..IMAGES as u64).map(png).collect();
    let raw = (IMAGES * IMAGE_BYTES) as u64;
    let before = {
        let store = SqliteStore::open(&path).unwrap();
        drop(store);
        closed(&path);
        on_disk(&path)
    };
    let mut recorded = Vec::new();
    {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
        let mut memory = WindowMemory::new(100_000).with_store(store, "screens");
        // A client that sends every image again with each question.
        for i in 0..5 {
            let question = showing(&format!("Look again, time {i}."), &images);
            let reply = Message::assistant(format!("Looked {i} times."));
            memory.record(question.clone()).await.unwrap();
            memory.record(reply.clone()).await.unwrap();
            recorded.extend([question, reply]);
        }
    }
    closed(&path);
    let grown = on_disk(&path) - before;
    assert!(grown >= raw, "{grown} bytes for {raw} bytes of images");
    // Each image once; 5 x 3.5 times their size before images were kept apart.
    assert!(
        grown * 2 < raw * 3,
        "{grown} bytes for {raw} bytes of images"
    );

    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.history("screens").await.unwrap(), recorded);
}

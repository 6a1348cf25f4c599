//! Our cl100k and o200k counts equal tiktoken-rs's on every message text of
//! the real data sets (skipped, with a notice, when they are absent; failed
//! when they are absent under CI).
//!
//! The reference is `encode_ordinary`: bpe-openai has no special tokens, so a
//! marker such as `<|endoftext|>` inside a message is counted as the plain
//! text it is, which is what `encode_ordinary` does. (`encode_with_special_tokens`
//! would turn it into one token; messages from users and tools must never be
//! able to smuggle control tokens in.)

use crate::common;

use memory_tokenizers::{Cl100k, O200k};
use tiktoken_rs::{cl100k_base_singleton, o200k_base_singleton};

#[test]
fn counts_equal_tiktoken_on_every_message_of_the_real_data() {
    let (corpora, notices) = common::corpus::load();
    for notice in &notices {
        eprintln!("notice: {notice}");
    }
    for corpus in &corpora {
        assert!(!corpus.texts.is_empty(), "{} has no texts", corpus.name);
        let mut mismatches = Vec::new();
        for (i, text) in corpus.texts.iter().enumerate() {
            let ours = (Cl100k.count_text(text), O200k.count_text(text));
            let theirs = (
                cl100k_base_singleton().encode_ordinary(text).len(),
                o200k_base_singleton().encode_ordinary(text).len(),
            );
            if ours != theirs {
                mismatches.push(format!(
                    "text {i} ({} bytes): ours {ours:?}, tiktoken {theirs:?}",
                    text.len()
                ));
            }
        }
        assert!(
            mismatches.is_empty(),
            "{}: {} of {} texts differ:\n{}",
            corpus.name,
            mismatches.len(),
            corpus.texts.len(),
            mismatches.join("\n")
        );
        eprintln!(
            "{}: {} texts ({} bytes), cl100k and o200k counts identical to tiktoken-rs",
            corpus.name,
            corpus.texts.len(),
            corpus.bytes()
        );
    }
}

#[test]
fn special_token_markers_count_as_plain_text() {
    for text in [
        "<|endoftext|>",
        "before <|endoftext|> after",
        "<|im_start|>user\nhi<|im_end|>",
        "<|fim_prefix|>def f():<|fim_suffix|>",
    ] {
        assert_eq!(
            Cl100k.count_text(text),
            cl100k_base_singleton().encode_ordinary(text).len(),
            "{text:?}"
        );
        assert_eq!(
            O200k.count_text(text),
            o200k_base_singleton().encode_ordinary(text).len(),
            "{text:?}"
        );
    }
    // Where the two tiktoken entry points differ, we side with encode_ordinary.
    let marker = "<|endoftext|>";
    assert_eq!(
        cl100k_base_singleton()
            .encode_with_special_tokens(marker)
            .len(),
        1
    );
    assert!(Cl100k.count_text(marker) > 1);
}

#[test]
fn counts_equal_tiktoken_on_awkward_text() {
    let long = ["x".repeat(5_000), " ".repeat(3_000), "ab ".repeat(2_000)];
    let texts = [
        "",
        " ",
        "\n\n\n",
        "   leading and trailing spaces   ",
        "tabs\tand\r\nwindows line ends\r\n",
        "I'm sure they'll say it's what we've done, DON'T they?",
        "numbers 1 12 123 1234 12345 3.14159 -42 1e10",
        "fn main() {\n    println!(\"{}\", 1 + 1);\n}\n",
        "{\"command\":\"view\",\"path\":\"/workspace/src/lib.rs\",\"view_range\":[1,-1]}",
        "emoji 🙂👍🏽 and combining e\u{301}",
        "日本語のテキストと中文文本",
        "Ünïcödé çåsé ÀÉÎÕÜ",
        "привет мир, γειά σου κόσμε",
        long[0].as_str(),
        long[1].as_str(),
        long[2].as_str(),
    ];
    for text in texts {
        assert_eq!(
            Cl100k.count_text(text),
            cl100k_base_singleton().encode_ordinary(text).len(),
            "cl100k {text:?}"
        );
        assert_eq!(
            O200k.count_text(text),
            o200k_base_singleton().encode_ordinary(text).len(),
            "o200k {text:?}"
        );
    }
}

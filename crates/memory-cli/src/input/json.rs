//! Bytes to top-level JSON values, with positions for every error.

use serde_json::Value;

use super::Located;

/// One top-level JSON value of a file (the whole document, or one JSONL
/// line) and the line it starts on (1-based).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Record {
    pub(crate) value: Value,
    pub(crate) line: usize,
}

/// The bytes as UTF-8 text, without a leading byte-order mark.
///
/// # Errors
///
/// The byte offset and line of the first byte that is not UTF-8.
pub(crate) fn decode(bytes: &[u8]) -> Result<&str, Located> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text.strip_prefix('\u{feff}').unwrap_or(text)),
        Err(e) => {
            let at = e.valid_up_to();
            let line = 1 + count_newlines(&bytes[..at]);
            let what = bytes
                .get(at)
                .map(|b| format!(" (byte 0x{b:02x})"))
                .unwrap_or_default();
            Err(Located::new(
                format!("line {line}, byte {at}"),
                format!("invalid UTF-8{what}; the input must be UTF-8 text"),
            ))
        }
    }
}

/// Every top-level JSON value in `text`, in order: one for a JSON document,
/// one per line for JSONL.
///
/// # Errors
///
/// The line and column of the first syntax error (a truncated document, a
/// broken JSONL line, trailing garbage).
pub(crate) fn records(text: &str) -> Result<Vec<Record>, Located> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let bytes = text.as_bytes();
    let mut records = Vec::new();
    let mut offset = 0;
    let mut line = 1;
    loop {
        let skipped = bytes[offset..]
            .iter()
            .take_while(|b| is_json_space(**b))
            .count();
        let start = offset + skipped;
        line += count_newlines(&bytes[offset..start]);
        match stream.next() {
            None => return Ok(records),
            Some(Ok(value)) => {
                records.push(Record { value, line });
                let end = stream.byte_offset().clamp(start, bytes.len());
                line += count_newlines(&bytes[start..end]);
                offset = end;
            }
            Some(Err(e)) => return Err(syntax_error(&e)),
        }
    }
}

fn is_json_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn count_newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

/// serde_json's message without its trailing " at line L column C", which
/// moves to the position.
fn syntax_error(e: &serde_json::Error) -> Located {
    let message = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let problem = message.strip_suffix(&suffix).unwrap_or(&message);
    Located::new(
        format!("line {}, column {}", e.line(), e.column()),
        format!("invalid JSON: {problem}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_is_one_record() {
        let r = records("\n\n[1,\n 2]\n").unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].line, 3);
    }

    #[test]
    fn jsonl_records_carry_their_lines() {
        let r = records("{\"a\":1}\n\n{\"b\":\n2}\n{\"c\":3}").unwrap();
        let lines: Vec<usize> = r.iter().map(|r| r.line).collect();
        assert_eq!(lines, vec![1, 3, 5]);
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let e = records("{\"a\":1}\n{\"b\": tru}\n").unwrap_err();
        assert_eq!(e.position, "line 2, column 10");
        assert!(e.problem.starts_with("invalid JSON: "), "{}", e.problem);
        assert!(!e.problem.contains("at line"), "{}", e.problem);
        let e = records("[{\"role\": \"user\",\n \"content\": \"x").unwrap_err();
        assert!(e.position.starts_with("line 2, column"), "{}", e.position);
    }

    #[test]
    fn invalid_utf8_names_the_byte() {
        let e = decode(b"[\n\"ok\",\n\"\xff\"]").unwrap_err();
        assert_eq!(e.position, "line 3, byte 9");
        assert!(e.problem.contains("0xff"));
        assert_eq!(decode("\u{feff}[]".as_bytes()).unwrap(), "[]");
    }
}

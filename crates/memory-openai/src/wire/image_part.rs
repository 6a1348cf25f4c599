//! An `image_url` content part and the image it carries: a base64 `data:`
//! URL and its `detail`.

use base64::Engine;
use serde_json::{Value, json};

use memory_core::ImageContent;

/// The image an `image_url` part carries inline, with its `detail`, when
/// [`encode`] gives the part back as it came: `{"type": "image_url",
/// "image_url": {"url": "data:MIME;base64,DATA", "detail": "..."}}`
/// (`detail` optional), its base64 in canonical form. Anything else (an
/// image by `http(s)` URL, a `detail` that is not a string, a field more)
/// is `None`, and the part stays a pass-through block, sent on unchanged.
pub(super) fn decode(part: &Value) -> Option<ImageContent> {
    let part = part.as_object()?;
    if part.len() != 2 || part.get("type")?.as_str()? != "image_url" {
        return None;
    }
    let inner = part.get("image_url")?.as_object()?;
    let detail = match inner.get("detail") {
        None => None,
        Some(detail) => Some(detail.as_str()?.to_string()),
    };
    if inner.len() != 1 + usize::from(detail.is_some()) {
        return None;
    }
    let url = inner.get("url")?.as_str()?;
    let (mime, data) = url.strip_prefix("data:")?.split_once(";base64,")?;
    // The standard engine takes canonical base64 only (padded, no stray
    // bits, no whitespace), so the bytes encode back to the same text.
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()?;
    let image = ImageContent::new(mime, bytes);
    Some(match detail {
        Some(detail) => image.with_detail(detail),
        None => image,
    })
}

/// The `image_url` part of `image`: a `data:` URL, and its `detail` when it
/// has one.
pub(super) fn encode(image: &ImageContent) -> Value {
    let data = base64::engine::general_purpose::STANDARD.encode(&image.data);
    let mut inner = json!({"url": format!("data:{};base64,{data}", image.mime_type)});
    if let Some(detail) = &image.detail {
        inner["detail"] = json!(detail);
    }
    json!({"type": "image_url", "image_url": inner})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(inner: Value) -> Value {
        json!({"type": "image_url", "image_url": inner})
    }

    #[test]
    fn an_inline_image_comes_back_as_it_came_detail_and_all() {
        for detail in [None, Some("low"), Some("high"), Some("auto"), Some("ultra")] {
            let mut inner = json!({"url": "data:image/png;base64,AQID"});
            if let Some(d) = detail {
                inner["detail"] = json!(d);
            }
            let sent = part(inner);
            let image = decode(&sent).expect("an inline image");
            assert_eq!(image.data, vec![1, 2, 3]);
            assert_eq!(image.detail.as_deref(), detail);
            assert_eq!(encode(&image), sent);
        }
    }

    #[test]
    fn what_would_not_come_back_the_same_stays_a_part() {
        let kept = [
            part(json!({"url": "https://example.com/cat.png", "detail": "low"})),
            part(json!({"url": "data:image/png;base64,AQID", "detail": null})),
            part(json!({"url": "data:image/png;base64,AQID", "detail": 1})),
            part(json!({"url": "data:image/png;base64,AQID", "extra": true})),
            part(json!("data:image/png;base64,AQID")),
            // Not canonical: stray bits, no padding, whitespace.
            part(json!({"url": "data:image/png;base64,AQJ="})),
            part(json!({"url": "data:image/png;base64,AQ"})),
            part(json!({"url": "data:image/png;base64,AQ ID"})),
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AQID"}, "x": 1}),
        ];
        for sent in kept {
            assert_eq!(decode(&sent), None, "{sent}");
        }
    }
}

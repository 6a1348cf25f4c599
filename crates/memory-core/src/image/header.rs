//! An image's size, read from the first bytes of its file: PNG, JPEG, GIF
//! and WebP.

/// The width and height, in pixels, that the header of the image file
/// `data` gives; `None` for a format other than PNG, JPEG, GIF or WebP,
/// a header cut short, or a size of zero. Only the header is read, never
/// the pixels; the bytes are told apart by their signature, not by a MIME
/// type.
///
/// ```
/// use memory_core::image::dimensions;
/// let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
/// png.extend_from_slice(&640_u32.to_be_bytes());
/// png.extend_from_slice(&480_u32.to_be_bytes());
/// assert_eq!(dimensions(&png), Some((640, 480)));
/// assert_eq!(dimensions(b"not an image"), None);
/// ```
pub fn dimensions(data: &[u8]) -> Option<(u32, u32)> {
    let (width, height) = if data.starts_with(PNG) {
        png(data)?
    } else if data.starts_with(&[0xFF, 0xD8]) {
        jpeg(data)?
    } else if data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a") {
        (u32::from(le16(data, 6)?), u32::from(le16(data, 8)?))
    } else if data.starts_with(b"RIFF") && data.get(8..12) == Some(b"WEBP") {
        webp(data)?
    } else {
        return None;
    };
    (width > 0 && height > 0).then_some((width, height))
}

/// The PNG signature.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";

/// The first chunk, `IHDR`: width and height, big-endian.
fn png(data: &[u8]) -> Option<(u32, u32)> {
    if data.get(12..16) != Some(b"IHDR") {
        return None;
    }
    Some((be32(data, 16)?, be32(data, 20)?))
}

/// The first frame header (a `SOFn` segment): the segments before it are
/// skipped by their lengths.
fn jpeg(data: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        if *data.get(at)? != 0xFF {
            return None;
        }
        // Any number of 0xFF may pad a marker.
        while *data.get(at)? == 0xFF {
            at += 1;
        }
        let marker = *data.get(at)?;
        at += 1;
        match marker {
            // Markers without a segment.
            0x01 | 0xD0..=0xD8 => {}
            // The image ends, or its data starts, before any frame header.
            0xD9 | 0xDA => return None,
            // SOF0-SOF15 but DHT (C4), JPG (C8) and DAC (CC): length,
            // precision, height, width.
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                let height = be16(data, at + 3)?;
                let width = be16(data, at + 5)?;
                return Some((u32::from(width), u32::from(height)));
            }
            _ => {
                let length = usize::from(be16(data, at)?);
                if length < 2 {
                    return None;
                }
                at += length;
            }
        }
    }
}

/// The first chunk of a WebP file: lossy (`VP8 `), lossless (`VP8L`) or
/// extended (`VP8X`, the canvas size).
fn webp(data: &[u8]) -> Option<(u32, u32)> {
    match data.get(12..16)? {
        b"VP8 " => {
            if data.get(23..26)? != [0x9D, 0x01, 0x2A] {
                return None;
            }
            let width = le16(data, 26)? & 0x3FFF;
            let height = le16(data, 28)? & 0x3FFF;
            Some((u32::from(width), u32::from(height)))
        }
        b"VP8L" => {
            if *data.get(20)? != 0x2F {
                return None;
            }
            let bits = u32::from_le_bytes(data.get(21..25)?.try_into().ok()?);
            Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
        }
        b"VP8X" => Some((le24(data, 24)? + 1, le24(data, 27)? + 1)),
        _ => None,
    }
}

fn be16(data: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(data.get(at..at + 2)?.try_into().ok()?))
}

fn be32(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

fn le16(data: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(data.get(at..at + 2)?.try_into().ok()?))
}

fn le24(data: &[u8], at: usize) -> Option<u32> {
    let b = data.get(at..at + 3)?;
    Some(u32::from(b[0]) | (u32::from(b[1]) << 8) | (u32::from(b[2]) << 16))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut data = PNG.to_vec();
        data.extend_from_slice(&13_u32.to_be_bytes());
        data.extend_from_slice(b"IHDR");
        data.extend_from_slice(&width.to_be_bytes());
        data.extend_from_slice(&height.to_be_bytes());
        data.extend_from_slice(&[8, 6, 0, 0, 0]);
        data
    }

    #[test]
    fn png_from_its_ihdr() {
        assert_eq!(dimensions(&png(4096, 8192)), Some((4096, 8192)));
        assert_eq!(dimensions(&png(0, 10)), None);
        assert_eq!(dimensions(&png(10, 10)[..20]), None);
    }

    #[test]
    fn jpeg_from_its_frame_header_past_other_segments() {
        let mut data = vec![0xFF, 0xD8];
        // APP0 (JFIF), 16 bytes long.
        data.extend_from_slice(&[0xFF, 0xE0, 0x00, 0x10]);
        data.extend_from_slice(&[0; 14]);
        // DHT, which looks like a frame header but is not one.
        data.extend_from_slice(&[0xFF, 0xC4, 0x00, 0x04, 0x00, 0x00]);
        // Padding, then SOF2 (progressive): length 17, precision 8, 600 x 800.
        data.extend_from_slice(&[0xFF, 0xFF, 0xC2, 0x00, 0x11, 0x08, 0x03, 0x20, 0x02, 0x58]);
        data.extend_from_slice(&[0; 12]);
        assert_eq!(dimensions(&data), Some((600, 800)));
        assert_eq!(dimensions(&data[..30]), None);
        // The scan before any frame header.
        assert_eq!(dimensions(&[0xFF, 0xD8, 0xFF, 0xDA, 0, 2]), None);
        // A segment length that would not move on.
        assert_eq!(dimensions(&[0xFF, 0xD8, 0xFF, 0xE1, 0, 0, 0xFF]), None);
    }

    #[test]
    fn gif_from_its_screen_descriptor() {
        let mut data = b"GIF89a".to_vec();
        data.extend_from_slice(&[0x2C, 0x01, 0xC8, 0x00]);
        assert_eq!(dimensions(&data), Some((300, 200)));
    }

    fn riff(chunk: &[u8], body: &[u8]) -> Vec<u8> {
        let mut data = b"RIFF\0\0\0\0WEBP".to_vec();
        data.extend_from_slice(chunk);
        data.extend_from_slice(&[0; 4]);
        data.extend_from_slice(body);
        data
    }

    #[test]
    fn webp_in_each_of_its_three_forms() {
        // Lossy: frame tag, start code, 14-bit sizes (scale bits ignored).
        let lossy = riff(
            b"VP8 ",
            &[0, 0, 0, 0x9D, 0x01, 0x2A, 0x80, 0x02, 0xE0, 0xC1],
        );
        assert_eq!(dimensions(&lossy), Some((640, 480)));
        // Lossless: signature, then width - 1 and height - 1 in 14 bits each.
        let bits: u32 = 799 | (599 << 14);
        let mut body = vec![0x2F];
        body.extend_from_slice(&bits.to_le_bytes());
        assert_eq!(dimensions(&riff(b"VP8L", &body)), Some((800, 600)));
        // Extended: flags, reserved, canvas width - 1 and height - 1 in 24 bits.
        let body = [0, 0, 0, 0, 0xFF, 0x0F, 0x00, 0xFF, 0x1F, 0x00];
        assert_eq!(dimensions(&riff(b"VP8X", &body)), Some((4096, 8192)));
        assert_eq!(dimensions(&riff(b"VP8?", &body)), None);
    }

    #[test]
    fn other_bytes_have_no_size() {
        assert_eq!(dimensions(&[]), None);
        assert_eq!(dimensions(b"BM not supported"), None);
        assert_eq!(dimensions(&[7; 64]), None);
    }
}

//! JPEG container handling: the marker walk up to start-of-scan, FLIR APP1 chunk joining, and
//! decoding of the visible (false-colour) image.
//!
//! Radiometric cameras hide their data in APP segments of an ordinary JPEG; this module only finds
//! and joins those bytes. What they mean is decided by [`crate::fff`] (FLIR) and [`crate::dji`].

use crate::error::{Error, Result};
use crate::false_colour::RgbImage;

/// Upper bound on the pixels of a visible image we agree to decode (bounds memory on hostile input).
const MAX_VISIBLE_PIXELS: usize = 64 * 1024 * 1024;

/// One marker segment with a length field.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment<'a> {
    /// Marker byte after 0xFF (e.g. 0xE1 for APP1).
    pub marker: u8,
    /// Absolute offset of the 0xFF byte.
    pub offset: usize,
    /// Segment payload (after the 2-byte length).
    pub payload: &'a [u8],
}

/// The segments before start-of-scan, and the frame size from the SOF segment.
#[derive(Debug, Default)]
pub(crate) struct Layout<'a> {
    pub segments: Vec<Segment<'a>>,
    /// (width, height) from the first SOFn segment.
    pub frame_size: Option<(usize, usize)>,
}

impl<'a> Layout<'a> {
    /// Segments with the given marker, in file order.
    pub(crate) fn with_marker(&self, marker: u8) -> impl Iterator<Item = &Segment<'a>> {
        self.segments.iter().filter(move |s| s.marker == marker)
    }
}

/// True when `bytes` starts with the JPEG SOI marker.
pub(crate) fn is_jpeg(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0xFF, 0xD8])
}

fn is_sof(marker: u8) -> bool {
    (0xC0..=0xCF).contains(&marker) && !matches!(marker, 0xC4 | 0xC8 | 0xCC)
}

/// Walks the markers from SOI to SOS (or EOI / end of data).
pub(crate) fn walk(bytes: &[u8]) -> Result<Layout<'_>> {
    let mut layout = Layout::default();
    let mut pos = 2usize;
    while let Some(&b) = bytes.get(pos) {
        if b != 0xFF {
            return Err(Error::JpegSegment {
                index: layout.segments.len(),
                marker: b,
                offset: pos,
                reason: format!("expected a 0xff marker byte, found 0x{b:02x}"),
            });
        }
        let Some(&marker) = bytes.get(pos + 1) else { break };
        match marker {
            0xFF => {
                // Fill byte.
                pos += 1;
                continue;
            }
            0xD8 | 0x01 | 0xD0..=0xD7 => {
                pos += 2;
                continue;
            }
            0xD9 => break,
            _ => {}
        }
        let index = layout.segments.len();
        let len_bytes = bytes.get(pos + 2..pos + 4);
        let Some(&[hi, lo]) = len_bytes else {
            return Err(Error::JpegSegment {
                index,
                marker,
                offset: pos,
                reason: "segment length field cut off by end of file".into(),
            });
        };
        let claimed = usize::from(u16::from_be_bytes([hi, lo]));
        if claimed < 2 {
            return Err(Error::JpegSegment {
                index,
                marker,
                offset: pos,
                reason: format!("segment length {claimed} is below the minimum of 2"),
            });
        }
        let remaining = bytes.len().saturating_sub(pos + 2);
        let Some(payload) = bytes.get(pos + 4..pos + 2 + claimed) else {
            let partial = bytes.get(pos + 4..).unwrap_or_default();
            if marker == 0xE1 && partial.starts_with(b"FLIR\0") {
                let chunk = partial.get(6).map_or(layout.with_marker(0xE1).count(), |&c| usize::from(c));
                let total = partial.get(7).map_or(0, |&c| usize::from(c) + 1);
                return Err(Error::FlirChunkTruncated {
                    index: chunk,
                    total,
                    offset: pos,
                    claimed,
                    remaining,
                });
            }
            return Err(Error::JpegSegment {
                index,
                marker,
                offset: pos,
                reason: format!("segment claims {claimed} bytes, {remaining} remain"),
            });
        };
        if let (true, None, Some(&[_, h0, h1, w0, w1])) =
            (is_sof(marker), layout.frame_size, payload.get(0..5))
        {
            let h = usize::from(u16::from_be_bytes([h0, h1]));
            let w = usize::from(u16::from_be_bytes([w0, w1]));
            layout.frame_size = Some((w, h));
        }
        layout.segments.push(Segment { marker, offset: pos, payload });
        pos += 2 + claimed;
        if marker == 0xDA {
            break;
        }
    }
    Ok(layout)
}

/// Joins the FLIR APP1 chunks (payload after the 8-byte chunk header) in index order.
///
/// Returns `Ok(None)` when the JPEG holds no FLIR chunk.
pub(crate) fn join_flir_chunks(layout: &Layout<'_>) -> Result<Option<Vec<u8>>> {
    struct Chunk<'a> {
        index: usize,
        last: usize,
        offset: usize,
        data: &'a [u8],
    }
    let mut chunks = Vec::new();
    for seg in layout.with_marker(0xE1) {
        if !seg.payload.starts_with(b"FLIR\0") {
            continue;
        }
        let (Some(&index), Some(&last), Some(data)) =
            (seg.payload.get(6), seg.payload.get(7), seg.payload.get(8..))
        else {
            return Err(Error::FlirChunks {
                reason: format!(
                    "APP1 segment at byte {} is shorter than the 8-byte FLIR chunk header",
                    seg.offset
                ),
            });
        };
        chunks.push(Chunk { index: usize::from(index), last: usize::from(last), offset: seg.offset, data });
    }
    let Some(first) = chunks.first() else { return Ok(None) };
    let last = first.last;
    let total = last + 1;
    let mut ordered: Vec<Option<&Chunk<'_>>> = (0..total).map(|_| None).collect();
    for c in &chunks {
        if c.last != last {
            return Err(Error::FlirChunks {
                reason: format!(
                    "chunk at byte {} says the last index is {}, the chunk at byte {} says {}",
                    c.offset, c.last, first.offset, last
                ),
            });
        }
        let Some(slot) = ordered.get_mut(c.index) else {
            return Err(Error::FlirChunks {
                reason: format!(
                    "chunk index {} at byte {} exceeds the last index {}",
                    c.index, c.offset, last
                ),
            });
        };
        if let Some(prev) = slot {
            return Err(Error::FlirChunks {
                reason: format!(
                    "chunk {} of {} appears twice, at bytes {} and {}",
                    c.index, total, prev.offset, c.offset
                ),
            });
        }
        *slot = Some(c);
    }
    let mut fff = Vec::with_capacity(chunks.iter().map(|c| c.data.len()).sum());
    for (i, slot) in ordered.iter().enumerate() {
        let Some(c) = slot else {
            return Err(Error::FlirChunks {
                reason: format!("chunk {i} of {total} is missing ({} chunk(s) present)", chunks.len()),
            });
        };
        fff.extend_from_slice(c.data);
    }
    Ok(Some(fff))
}

/// Decodes a baseline/progressive JPEG to 8-bit RGB.
///
/// The third-party decoder is run under `catch_unwind` so that a decoder bug on hostile input
/// surfaces as an [`Error::JpegImage`] rather than taking down the caller.
pub(crate) fn decode_rgb(bytes: &[u8], context: &str) -> Result<RgbImage> {
    let err = |message: String| Error::JpegImage { context: context.to_owned(), message };
    let decoded = std::panic::catch_unwind(|| {
        let mut dec = jpeg_decoder::Decoder::new(bytes);
        dec.set_max_decoding_buffer_size(MAX_VISIBLE_PIXELS.saturating_mul(4));
        let pixels = dec.decode().map_err(|e| e.to_string())?;
        let info = dec.info().ok_or_else(|| "decoder returned no image info".to_owned())?;
        Ok::<_, String>((pixels, info))
    })
    .map_err(|_| err("the JPEG decoder panicked on this input".into()))?
    .map_err(err)?;
    let (pixels, info) = decoded;
    let (w, h) = (usize::from(info.width), usize::from(info.height));
    let n =
        w.checked_mul(h).filter(|&n| n > 0 && n <= MAX_VISIBLE_PIXELS).ok_or_else(|| Error::Dimensions {
            context: context.to_owned(),
            width: w,
            height: h,
            reason: "zero or more than 64 Mpx".into(),
        })?;
    let rgb: Vec<[u8; 3]> = match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => pixels.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect(),
        jpeg_decoder::PixelFormat::L8 => pixels.iter().map(|&g| [g, g, g]).collect(),
        jpeg_decoder::PixelFormat::L16 => pixels.chunks_exact(2).map(|c| [c[0], c[0], c[0]]).collect(),
        jpeg_decoder::PixelFormat::CMYK32 => pixels
            .chunks_exact(4)
            .map(|c| {
                let k = u16::from(c[3]);
                let f = |v: u8| u8::try_from(u16::from(v) * k / 255).unwrap_or(u8::MAX);
                [f(c[0]), f(c[1]), f(c[2])]
            })
            .collect(),
    };
    if rgb.len() != n {
        return Err(err(format!("decoder produced {} pixels for a {w}x{h} image", rgb.len())));
    }
    Ok(RgbImage { width: w, height: h, pixels: rgb })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(marker: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![0xFF, marker];
        v.extend_from_slice(&u16::try_from(payload.len() + 2).unwrap().to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    fn flir_chunk(index: u8, last: u8, data: &[u8]) -> Vec<u8> {
        let mut p = b"FLIR\0\x01".to_vec();
        p.push(index);
        p.push(last);
        p.extend_from_slice(data);
        seg(0xE1, &p)
    }

    #[test]
    fn joins_chunks_in_index_order_not_file_order() {
        let mut file = vec![0xFF, 0xD8];
        file.extend(flir_chunk(1, 1, b"world"));
        file.extend(flir_chunk(0, 1, b"hello "));
        file.extend(seg(0xDA, &[0; 4]));
        let layout = walk(&file).unwrap();
        assert_eq!(join_flir_chunks(&layout).unwrap().unwrap(), b"hello world");
    }

    #[test]
    fn missing_chunk_is_named() {
        let mut file = vec![0xFF, 0xD8];
        file.extend(flir_chunk(0, 2, b"a"));
        file.extend(flir_chunk(2, 2, b"c"));
        let layout = walk(&file).unwrap();
        let msg = join_flir_chunks(&layout).unwrap_err().to_string();
        assert!(msg.contains("chunk 1 of 3 is missing"), "{msg}");
    }

    #[test]
    fn truncated_flir_chunk_reports_index_offset_and_sizes() {
        let mut file = vec![0xFF, 0xD8];
        file.extend(flir_chunk(0, 2, &[7; 100]));
        let at = file.len();
        file.extend(flir_chunk(1, 2, &[7; 100]));
        file.truncate(at + 50);
        let msg = walk(&file).unwrap_err().to_string();
        assert_eq!(
            msg,
            format!("truncated FLIR APP1 chunk 1 of 3 at byte {at}: segment claims 110 bytes, 48 remain")
        );
    }
}

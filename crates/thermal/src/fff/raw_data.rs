//! The RawData record (type 0x01): the radiometric frame as a 16-bit PNG or as bare 16-bit samples.
//!
//! PNG samples are byte-swapped exactly when the record itself is little-endian (the rule that held on
//! every sample file); bare samples are in the record's byte order.

use crate::bytes::{ByteOrder, sample_u16};
use crate::error::{Error, Result};
use crate::fff::Record;
use crate::frame::{RawFrame, checked_area};

/// Offset of the pixel data inside the RawData record.
const DATA_OFFSET: usize = 0x20;
const PNG_MAGIC: &[u8] = &[0x89, b'P', b'N', b'G'];

/// How the raw samples were stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum RawEncoding {
    /// 16-bit greyscale PNG; `byte_swapped` tells whether samples were swapped after decoding.
    Png {
        /// True when the PNG's big-endian samples were swapped (record is little-endian).
        byte_swapped: bool,
    },
    /// Bare 16-bit samples in the given order.
    Raw16(ByteOrder),
}

/// Decodes the RawData record into a frame.
pub(crate) fn read(record: &Record<'_>) -> Result<(RawFrame, RawEncoding)> {
    let b = record.bytes;
    let width = usize::from(b.u16(0x02)?);
    let height = usize::from(b.u16(0x04)?);
    let n = checked_area(width, height, &format!("RawData record {} header", record.entry.index))?;
    let data = b.data().get(DATA_OFFSET..).ok_or_else(|| {
        record.error(format!("record is {} bytes, pixel data should start at 0x20", b.len()))
    })?;
    if data.starts_with(PNG_MAGIC) {
        let swap = b.order() == ByteOrder::Little;
        let context = format!("RawData record {} at blob offset {}", record.entry.index, record.entry.offset);
        let frame = decode_png16(data, &context, if swap { ByteOrder::Little } else { ByteOrder::Big })?;
        if frame.width != width || frame.height != height {
            return Err(record.error(format!(
                "record header says {width}x{height} but its PNG is {}x{}",
                frame.width, frame.height
            )));
        }
        return Ok((frame, RawEncoding::Png { byte_swapped: swap }));
    }
    if data.starts_with(&[0xFF, 0xD8, 0xFF, 0xF7]) {
        return Err(record.error("raw data is JPEG-LS compressed (CSQ video), which is not supported"));
    }
    let needed = n * 2;
    let pixels = data.get(..needed).ok_or_else(|| {
        record.error(format!(
            "{width}x{height} 16-bit frame needs {needed} bytes after 0x20, the record holds {}",
            data.len()
        ))
    })?;
    let samples = pixels.chunks_exact(2).map(|p| sample_u16(p, b.order())).collect();
    Ok((RawFrame { width, height, data: samples }, RawEncoding::Raw16(b.order())))
}

/// Decodes a 16-bit greyscale PNG; `order` is how each sample's two bytes are to be read
/// (`Big` = as PNG stores them, `Little` = byte-swapped).
pub(crate) fn decode_png16(data: &[u8], context: &str, order: ByteOrder) -> Result<RawFrame> {
    let err = |message: String| Error::Png { context: context.to_owned(), message };
    let decoded = std::panic::catch_unwind(|| {
        let mut dec = png::Decoder::new_with_limits(
            std::io::Cursor::new(data),
            png::Limits { bytes: crate::frame::MAX_PIXELS * 2 },
        );
        dec.set_transformations(png::Transformations::IDENTITY);
        let mut reader = dec.read_info().map_err(|e| e.to_string())?;
        let info = reader.info();
        let (w, h) = (info.width, info.height);
        if info.color_type != png::ColorType::Grayscale || info.bit_depth != png::BitDepth::Sixteen {
            return Err(format!(
                "expected 16-bit greyscale, found {:?} {:?}",
                info.color_type, info.bit_depth
            ));
        }
        let size = reader.output_buffer_size().ok_or_else(|| "image too large".to_owned())?;
        let mut buf = vec![0u8; size];
        reader.next_frame(&mut buf).map_err(|e| e.to_string())?;
        Ok((w, h, buf))
    })
    .map_err(|_| err("the PNG decoder panicked on this input".into()))?
    .map_err(err)?;
    let (w, h, buf) = decoded;
    let (width, height) = (crate::fff::to_usize(w), crate::fff::to_usize(h));
    let n = checked_area(width, height, context)?;
    let samples: Vec<u16> = buf.chunks_exact(2).take(n).map(|p| sample_u16(p, order)).collect();
    if samples.len() != n {
        return Err(err(format!("decoded {} samples for a {width}x{height} image", samples.len())));
    }
    Ok(RawFrame { width, height, data: samples })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bytes::Bytes;
    use crate::fff::RecordEntry;

    pub(crate) fn encode_png16(width: u32, height: u32, samples_be: &[u16]) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut out, width, height);
            enc.set_color(png::ColorType::Grayscale);
            enc.set_depth(png::BitDepth::Sixteen);
            let mut w = enc.write_header().unwrap();
            let bytes: Vec<u8> = samples_be.iter().flat_map(|s| s.to_be_bytes()).collect();
            w.write_image_data(&bytes).unwrap();
        }
        out
    }

    fn record(bytes: &[u8], order: ByteOrder) -> Record<'_> {
        let entry =
            RecordEntry { index: 0, kind: 1, subtype: 3, version: 0, id: 0, offset: 0, length: bytes.len() };
        Record { entry, bytes: Bytes::new(bytes, 0, "RawData record", order) }
    }

    fn header(order: ByteOrder, w: u16, h: u16) -> Vec<u8> {
        let mut v = vec![0u8; DATA_OFFSET];
        let put = |v: &mut Vec<u8>, at: usize, x: u16| {
            let b = if order == ByteOrder::Little { x.to_le_bytes() } else { x.to_be_bytes() };
            v[at..at + 2].copy_from_slice(&b);
        };
        put(&mut v, 0, 2);
        put(&mut v, 2, w);
        put(&mut v, 4, h);
        v
    }

    #[test]
    fn png_samples_are_swapped_iff_record_is_little_endian() {
        // Stored PNG samples 0x3412 read as little-endian give 0x1234.
        let png = encode_png16(2, 1, &[0x3412, 0x7856]);
        let mut le = header(ByteOrder::Little, 2, 1);
        le.extend(&png);
        let (f, enc) = read(&record(&le, ByteOrder::Little)).unwrap();
        assert_eq!(f.data, vec![0x1234, 0x5678]);
        assert_eq!(enc, RawEncoding::Png { byte_swapped: true });

        let mut be = header(ByteOrder::Big, 2, 1);
        be.extend(&png);
        let (f, enc) = read(&record(&be, ByteOrder::Big)).unwrap();
        assert_eq!(f.data, vec![0x3412, 0x7856]);
        assert_eq!(enc, RawEncoding::Png { byte_swapped: false });
    }

    #[test]
    fn bare_samples_follow_record_order_and_short_data_is_an_error() {
        let mut be = header(ByteOrder::Big, 2, 1);
        be.extend([0x12, 0x34, 0x56, 0x78]);
        let (f, _) = read(&record(&be, ByteOrder::Big)).unwrap();
        assert_eq!(f.data, vec![0x1234, 0x5678]);
        be.pop();
        let msg = read(&record(&be, ByteOrder::Big)).unwrap_err().to_string();
        assert!(msg.contains("needs 4 bytes after 0x20, the record holds 3"), "{msg}");
    }
}

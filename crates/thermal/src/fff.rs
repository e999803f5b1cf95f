//! FLIR File Format (FFF) container: header, record directory and record access.
//!
//! An FFF blob is what a FLIR radiometric JPEG carries in its APP1 chunks, what a bare `.fff` file
//! holds, and what a `.seq` file repeats once per frame. This module parses the 0x40-byte header and
//! the 32-byte directory entries; the records that matter for radiometry are decoded in the
//! submodules [`raw_data`], [`camera_info`] and [`palette_info`].

pub mod camera_info;
pub mod palette_info;
pub mod raw_data;

use crate::bytes::{ByteOrder, Bytes};
use crate::error::{Error, Result};

/// Size of the FFF file header.
pub const HEADER_LEN: usize = 0x40;
/// Size of one directory entry.
pub const ENTRY_LEN: usize = 32;

/// Record type of the raw thermal frame.
pub const RECORD_RAW_DATA: u16 = 0x01;
/// Record type of the embedded visible image.
pub const RECORD_EMBEDDED_IMAGE: u16 = 0x0E;
/// Record type of the camera calibration and measurement parameters.
pub const RECORD_CAMERA_INFO: u16 = 0x20;
/// Record type of the measurement tools.
pub const RECORD_MEASUREMENT_INFO: u16 = 0x21;
/// Record type of the display palette.
pub const RECORD_PALETTE_INFO: u16 = 0x22;

/// A human-readable name for a record type, used in error messages.
pub fn record_name(kind: u16) -> String {
    let name = match kind {
        0x01 => "RawData",
        0x0E => "EmbeddedImage",
        0x20 => "CameraInfo",
        0x21 => "MeasurementInfo",
        0x22 => "PaletteInfo",
        0x23 => "TextInfo",
        0x24 => "EmbeddedAudioFile",
        0x28 => "PaintData",
        0x2A => "PiP",
        0x2B => "GPSInfo",
        0x2C => "MeterLink",
        0x2E => "ParameterInfo",
        _ => "unknown",
    };
    format!("{name} (type 0x{kind:02x})")
}

/// One non-empty entry of the FFF record directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RecordEntry {
    /// 0-based position in the directory.
    pub index: usize,
    /// Record type (see the `RECORD_*` constants).
    pub kind: u16,
    /// Record subtype (for RawData: 1 big-endian raw, 2 little-endian raw, 3 PNG).
    pub subtype: u16,
    /// Record version.
    pub version: u32,
    /// Record index field.
    pub id: u32,
    /// Offset from the start of the FFF blob.
    pub offset: usize,
    /// Length in bytes.
    pub length: usize,
}

/// A parsed FFF blob: header facts plus the record directory.
#[derive(Debug, Clone)]
pub struct Fff<'a> {
    blob: &'a [u8],
    /// Absolute offset of the blob in the caller's input (0 for joined JPEG chunks).
    base: usize,
    /// Byte order of the header and directory.
    pub header_order: ByteOrder,
    /// Creator string at 0x04.
    pub creator: String,
    /// Header version (100–199).
    pub version: u32,
    /// Offset of the directory inside the blob.
    pub directory_offset: usize,
    /// Non-empty directory entries.
    pub records: Vec<RecordEntry>,
}

/// True when `bytes` starts with an FFF/AFF magic.
pub fn has_magic(bytes: &[u8]) -> bool {
    bytes.starts_with(b"FFF\0") || bytes.starts_with(b"AFF\0")
}

impl<'a> Fff<'a> {
    /// Parses the header and directory of the FFF blob at the start of `blob`.
    ///
    /// `base` is the blob's absolute offset, used only in error messages. Trailing bytes (further
    /// SEQ frames) are allowed.
    pub fn parse(blob: &'a [u8], base: usize) -> Result<Self> {
        let header =
            Bytes::new(blob, base, "FFF header", ByteOrder::Little).sub(0, HEADER_LEN, "FFF header")?;
        let magic = header.array::<4>(0)?;
        if &magic != b"FFF\0" && &magic != b"AFF\0" {
            return Err(Error::FffHeader {
                offset: base,
                reason: format!("magic is {magic:02x?}, expected \"FFF\\0\" or \"AFF\\0\""),
            });
        }
        let creator = header.string(4, 16)?;
        let le = header.u32(0x14)?;
        let be = header.with_order(ByteOrder::Big).u32(0x14)?;
        let (order, version) = if (100..200).contains(&le) {
            (ByteOrder::Little, le)
        } else if (100..200).contains(&be) {
            (ByteOrder::Big, be)
        } else {
            return Err(Error::FffHeader {
                offset: base,
                reason: format!(
                    "version at 0x14 is {le} (little-endian) / {be} (big-endian), expected 100-199"
                ),
            });
        };
        let header = header.with_order(order);
        let directory_offset = to_usize(header.u32(0x18)?);
        let count = to_usize(header.u32(0x1C)?);
        let dir_len = count.checked_mul(ENTRY_LEN).ok_or_else(|| Error::FffHeader {
            offset: base,
            reason: format!("directory entry count {count} overflows"),
        })?;
        let whole = Bytes::new(blob, base, "FFF record directory", order);
        let dir = whole.sub(directory_offset, dir_len, "FFF record directory")?;
        let mut records = Vec::new();
        for index in 0..count {
            let at = index * ENTRY_LEN;
            let kind = dir.u16(at)?;
            if kind == 0 {
                continue;
            }
            records.push(RecordEntry {
                index,
                kind,
                subtype: dir.u16(at + 2)?,
                version: dir.u32(at + 4)?,
                id: dir.u32(at + 8)?,
                offset: to_usize(dir.u32(at + 12)?),
                length: to_usize(dir.u32(at + 16)?),
            });
        }
        Ok(Self { blob, base, header_order: order, creator, version, directory_offset, records })
    }

    /// The whole blob this FFF was parsed from (may include trailing SEQ frames).
    pub fn blob(&self) -> &'a [u8] {
        self.blob
    }

    /// Where this frame ends: the furthest byte covered by the header, directory or any record.
    pub fn frame_end(&self) -> usize {
        let dir_end = self.directory_offset.saturating_add(self.records.len().max(1) * ENTRY_LEN);
        self.records
            .iter()
            .map(|r| r.offset.saturating_add(r.length))
            .chain([HEADER_LEN, dir_end])
            .max()
            .unwrap_or(HEADER_LEN)
    }

    /// The first directory entry of a type.
    pub fn find(&self, kind: u16) -> Option<&RecordEntry> {
        self.records.iter().find(|r| r.kind == kind)
    }

    /// The bytes of a record, checked against the blob, with the record's own byte order detected.
    pub(crate) fn record(&self, entry: &RecordEntry, what: &'static str) -> Result<Record<'a>> {
        let bytes = Bytes::new(self.blob, self.base, what, ByteOrder::Little);
        let data = bytes.sub(entry.offset, entry.length, what).map_err(|_| Error::FffRecord {
            index: entry.index,
            record: record_name(entry.kind),
            offset: entry.offset,
            reason: format!(
                "record of {} bytes runs past the end of the {}-byte FFF blob",
                entry.length,
                self.blob.len()
            ),
        })?;
        let first = data.u16(0).map_err(|_| Error::FffRecord {
            index: entry.index,
            record: record_name(entry.kind),
            offset: entry.offset,
            reason: format!("record is {} bytes, too short for its 2-byte marker", entry.length),
        })?;
        let order = if first >= 0x100 { ByteOrder::Big } else { ByteOrder::Little };
        Ok(Record { entry: *entry, bytes: data.with_order(order) })
    }

    /// Absolute offset of this blob in the caller's input.
    pub fn base(&self) -> usize {
        self.base
    }
}

/// One record's bytes, in its own byte order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record<'a> {
    pub entry: RecordEntry,
    pub bytes: Bytes<'a>,
}

impl Record<'_> {
    /// An error about this record.
    pub(crate) fn error(&self, reason: impl Into<String>) -> Error {
        Error::FffRecord {
            index: self.entry.index,
            record: record_name(self.entry.kind),
            offset: self.entry.offset,
            reason: reason.into(),
        }
    }
}

/// Converts a u32 field to usize (lossless on the 32- and 64-bit targets we build for).
pub(crate) fn to_usize(v: u32) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a minimal little- or big-endian FFF blob from (type, subtype, record bytes).
    pub(crate) fn build_fff(order: ByteOrder, records: &[(u16, u16, Vec<u8>)]) -> Vec<u8> {
        let u16b = |v: u16| match order {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        };
        let u32b = |v: u32| match order {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        };
        let mut out = vec![0u8; HEADER_LEN];
        out[0..4].copy_from_slice(b"FFF\0");
        out[4..8].copy_from_slice(b"test");
        out[0x14..0x18].copy_from_slice(&u32b(101));
        out[0x18..0x1C].copy_from_slice(&u32b(HEADER_LEN as u32));
        out[0x1C..0x20].copy_from_slice(&u32b(records.len() as u32));
        let mut data_at = HEADER_LEN + records.len() * ENTRY_LEN;
        let mut dir = Vec::new();
        for (kind, subtype, bytes) in records {
            let mut e = vec![0u8; ENTRY_LEN];
            e[0..2].copy_from_slice(&u16b(*kind));
            e[2..4].copy_from_slice(&u16b(*subtype));
            e[4..8].copy_from_slice(&u32b(100));
            e[12..16].copy_from_slice(&u32b(data_at as u32));
            e[16..20].copy_from_slice(&u32b(bytes.len() as u32));
            dir.extend(e);
            data_at += bytes.len();
        }
        out.extend(dir);
        for (_, _, bytes) in records {
            out.extend_from_slice(bytes);
        }
        out
    }

    #[test]
    fn detects_header_order_and_lists_records() {
        for order in [ByteOrder::Little, ByteOrder::Big] {
            let blob = build_fff(order, &[(0x01, 2, vec![2, 0, 1, 0]), (0x20, 0, vec![2, 0])]);
            let fff = Fff::parse(&blob, 0).unwrap();
            assert_eq!(fff.header_order, order);
            assert_eq!(fff.records.len(), 2);
            assert_eq!(fff.frame_end(), blob.len());
            assert_eq!(fff.find(0x20).unwrap().length, 2);
        }
    }

    #[test]
    fn rejects_bad_version_and_out_of_range_records() {
        let mut blob = build_fff(ByteOrder::Little, &[(0x01, 2, vec![2, 0])]);
        let ok = Fff::parse(&blob, 0).unwrap();
        let mut entry = *ok.find(0x01).unwrap();
        entry.length = 1000;
        let msg = ok.record(&entry, "RawData record").unwrap_err().to_string();
        assert!(msg.starts_with("bad FFF record 0 (RawData (type 0x01)) at blob offset 96"), "{msg}");
        blob[0x14] = 7;
        let msg = Fff::parse(&blob, 10).unwrap_err().to_string();
        assert!(msg.starts_with("bad FFF header at byte 10: version"), "{msg}");
    }
}

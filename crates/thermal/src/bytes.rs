//! Checked little/big-endian reads over byte slices.
//!
//! All parsers read through [`Bytes`], which knows its absolute offset in the input and a name for
//! what it holds, so an out-of-range read becomes an [`Error::Truncated`] that says where, instead of
//! a panic.

use crate::error::{Error, Result};

/// Byte order of a binary structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ByteOrder {
    /// Least significant byte first (Intel).
    Little,
    /// Most significant byte first (Motorola).
    Big,
}

/// A named window into the input with checked accessors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bytes<'a> {
    data: &'a [u8],
    /// Absolute offset of `data[0]` in the outermost buffer the caller reports against.
    base: usize,
    what: &'static str,
    order: ByteOrder,
}

impl<'a> Bytes<'a> {
    pub(crate) fn new(data: &'a [u8], base: usize, what: &'static str, order: ByteOrder) -> Self {
        Self { data, base, what, order }
    }

    pub(crate) fn len(&self) -> usize {
        self.data.len()
    }

    pub(crate) fn data(&self) -> &'a [u8] {
        self.data
    }

    pub(crate) fn order(&self) -> ByteOrder {
        self.order
    }

    pub(crate) fn with_order(self, order: ByteOrder) -> Self {
        Self { order, ..self }
    }

    /// `len` bytes at `off`, or a truncation error naming this window.
    pub(crate) fn slice(&self, off: usize, len: usize) -> Result<&'a [u8]> {
        let end = off.checked_add(len);
        match end.and_then(|end| self.data.get(off..end)) {
            Some(s) => Ok(s),
            None => Err(Error::Truncated {
                what: self.what,
                offset: self.base.saturating_add(off),
                needed: len,
                available: self.data.len().saturating_sub(off),
            }),
        }
    }

    /// A sub-window of `len` bytes at `off`, renamed.
    pub(crate) fn sub(&self, off: usize, len: usize, what: &'static str) -> Result<Bytes<'a>> {
        let data = self.slice(off, len)?;
        Ok(Bytes { data, base: self.base.saturating_add(off), what, order: self.order })
    }

    pub(crate) fn array<const N: usize>(&self, off: usize) -> Result<[u8; N]> {
        let s = self.slice(off, N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(s);
        Ok(out)
    }

    pub(crate) fn u8(&self, off: usize) -> Result<u8> {
        Ok(self.array::<1>(off)?[0])
    }

    pub(crate) fn u16(&self, off: usize) -> Result<u16> {
        let a = self.array::<2>(off)?;
        Ok(match self.order {
            ByteOrder::Little => u16::from_le_bytes(a),
            ByteOrder::Big => u16::from_be_bytes(a),
        })
    }

    pub(crate) fn i16(&self, off: usize) -> Result<i16> {
        let a = self.array::<2>(off)?;
        Ok(match self.order {
            ByteOrder::Little => i16::from_le_bytes(a),
            ByteOrder::Big => i16::from_be_bytes(a),
        })
    }

    pub(crate) fn u32(&self, off: usize) -> Result<u32> {
        let a = self.array::<4>(off)?;
        Ok(match self.order {
            ByteOrder::Little => u32::from_le_bytes(a),
            ByteOrder::Big => u32::from_be_bytes(a),
        })
    }

    pub(crate) fn i32(&self, off: usize) -> Result<i32> {
        let a = self.array::<4>(off)?;
        Ok(match self.order {
            ByteOrder::Little => i32::from_le_bytes(a),
            ByteOrder::Big => i32::from_be_bytes(a),
        })
    }

    pub(crate) fn f32(&self, off: usize) -> Result<f32> {
        Ok(f32::from_bits(self.u32(off)?))
    }

    /// A NUL-terminated (or field-length) Latin-1/ASCII string of at most `len` bytes, trimmed.
    pub(crate) fn string(&self, off: usize, len: usize) -> Result<String> {
        let s = self.slice(off, len)?;
        let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
        let text: String = s.iter().take(end).map(|&b| char::from(b)).collect();
        Ok(text.trim().to_owned())
    }
}

/// Reads a u16 sample from a 2-byte chunk in the given order (chunks from `chunks_exact(2)`).
pub(crate) fn sample_u16(pair: &[u8], order: ByteOrder) -> u16 {
    let a = [pair.first().copied().unwrap_or(0), pair.get(1).copied().unwrap_or(0)];
    match order {
        ByteOrder::Little => u16::from_le_bytes(a),
        ByteOrder::Big => u16::from_be_bytes(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_orders_and_reports_truncation_with_absolute_offset() {
        let data = [0x12, 0x34, 0x56, 0x78, 0x9a];
        let le = Bytes::new(&data, 100, "test window", ByteOrder::Little);
        assert_eq!(le.u16(0).unwrap(), 0x3412);
        assert_eq!(le.with_order(ByteOrder::Big).u32(0).unwrap(), 0x1234_5678);
        let err = le.u32(3).unwrap_err().to_string();
        assert_eq!(err, "truncated test window at byte 103: needs 4 bytes, 2 remain");
        assert!(le.slice(usize::MAX, 2).is_err());
        assert!(le.slice(6, 0).is_err());
    }

    #[test]
    fn strings_stop_at_nul() {
        let data = b"FLIR E40\0junk";
        let b = Bytes::new(data, 0, "s", ByteOrder::Little);
        assert_eq!(b.string(0, 13).unwrap(), "FLIR E40");
    }
}

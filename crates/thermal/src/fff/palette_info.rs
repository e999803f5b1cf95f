//! The PaletteInfo record (type 0x22): the palette the camera used for its display image.
//!
//! Colours are stored as Y, Cr, Cb bytes and converted with full-range BT.601 (see
//! [`crate::palette::ycrcb_to_rgb`]).

use crate::error::Result;
use crate::fff::Record;
use crate::palette::{Palette, Rgb, ycrcb_to_rgb};

/// Offset of the colour table.
const TABLE_OFFSET: usize = 0x70;

/// Decoded PaletteInfo.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PaletteInfo {
    /// The palette, or `None` when the record stores no colours (e.g. ThermaCAM EX320).
    pub palette: Option<Palette>,
    /// Colour for values above the colour bar.
    pub above: Rgb,
    /// Colour for values below the colour bar.
    pub below: Rgb,
    /// Overflow colour.
    pub overflow: Rgb,
    /// Underflow colour.
    pub underflow: Rgb,
    /// Isotherm 1 colour.
    pub isotherm1: Rgb,
    /// Isotherm 2 colour.
    pub isotherm2: Rgb,
    /// Palette method byte.
    pub method: u8,
    /// Palette stretch byte (3 = histogram-equalised "HC" palettes).
    pub stretch: u8,
    /// Palette file name.
    pub file_name: String,
    /// Palette name.
    pub name: String,
}

/// Reads a PaletteInfo record.
pub(crate) fn read(record: &Record<'_>) -> Result<PaletteInfo> {
    let b = record.bytes;
    let n = usize::from(b.u8(0x00)?);
    let colour = |off: usize| -> Result<Rgb> {
        let [y, cr, cb] = b.array::<3>(off)?;
        Ok(ycrcb_to_rgb(y, cr, cb))
    };
    let name = b.string(0x50, 32)?;
    let file_name = b.string(0x30, 32)?;
    let palette = if n == 0 {
        None
    } else {
        let table = b.slice(TABLE_OFFSET, n * 3).map_err(|_| {
            record.error(format!(
                "palette of {n} colours needs {} bytes from 0x70, the record is {} bytes",
                n * 3,
                b.len()
            ))
        })?;
        let ycrcb: Vec<[u8; 3]> = table.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
        let label = if name.is_empty() { file_name.as_str() } else { name.as_str() };
        Some(Palette::from_ycrcb(label, &ycrcb))
    };
    Ok(PaletteInfo {
        palette,
        above: colour(0x06)?,
        below: colour(0x09)?,
        overflow: colour(0x0C)?,
        underflow: colour(0x0F)?,
        isotherm1: colour(0x12)?,
        isotherm2: colour(0x15)?,
        method: b.u8(0x1A)?,
        stretch: b.u8(0x1B)?,
        file_name,
        name,
    })
}

//! Pixel grids: the raw 16-bit sensor frame and the per-pixel value frame (°C or relative 0–1).
//!
//! Both are row-major with x = column and y = row, origin top-left, which is the coordinate system
//! of every position this crate reports.

use crate::error::{Error, Result};

/// Largest frame (in pixels) any reader accepts; bounds memory on hostile headers.
pub const MAX_PIXELS: usize = 64 * 1024 * 1024;

/// Checks a declared size is non-zero and below [`MAX_PIXELS`]; returns the pixel count.
pub(crate) fn checked_area(width: usize, height: usize, context: &str) -> Result<usize> {
    match width.checked_mul(height) {
        Some(n) if n > 0 && n <= MAX_PIXELS => Ok(n),
        _ => Err(Error::Dimensions {
            context: context.to_owned(),
            width,
            height,
            reason: format!("must be non-zero and at most {MAX_PIXELS} pixels"),
        }),
    }
}

/// A raw sensor frame of 16-bit counts, row-major.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RawFrame {
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// `width * height` samples, row-major.
    pub data: Vec<u16>,
}

impl RawFrame {
    /// The sample at column `x`, row `y`, if inside the frame.
    pub fn get(&self, x: usize, y: usize) -> Option<u16> {
        if x >= self.width {
            return None;
        }
        self.data.get(y.checked_mul(self.width)?.checked_add(x)?).copied()
    }

    /// Smallest and largest sample, or `None` for an empty frame.
    pub fn min_max(&self) -> Option<(u16, u16)> {
        let min = self.data.iter().copied().min()?;
        let max = self.data.iter().copied().max()?;
        Some((min, max))
    }
}

/// A frame of per-pixel values: °C for absolute radiometry, 0–1 for relative analyses.
///
/// `NaN` marks pixels without a value (formula out of range, overlay text, colours off the palette).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Frame {
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// `width * height` values, row-major; `NaN` = no value.
    pub values: Vec<f64>,
}

impl Frame {
    /// Builds a frame, checking that `values` has `width * height` entries.
    pub fn new(width: usize, height: usize, values: Vec<f64>) -> Result<Self> {
        let n = checked_area(width, height, "value frame")?;
        if values.len() != n {
            return Err(Error::Dimensions {
                context: "value frame".into(),
                width,
                height,
                reason: format!("{} values supplied", values.len()),
            });
        }
        Ok(Self { width, height, values })
    }

    /// The value at column `x`, row `y`, if inside the frame.
    pub fn get(&self, x: usize, y: usize) -> Option<f64> {
        if x >= self.width {
            return None;
        }
        self.values.get(y.checked_mul(self.width)?.checked_add(x)?).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_is_bounds_checked() {
        let f = Frame::new(2, 2, vec![1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(f.get(1, 1), Some(4.0));
        assert_eq!(f.get(2, 0), None);
        assert_eq!(f.get(0, usize::MAX), None);
        assert!(Frame::new(2, 2, vec![1.0]).is_err());
        assert!(checked_area(0, 5, "x").is_err());
        assert!(checked_area(usize::MAX, 2, "x").is_err());
    }
}

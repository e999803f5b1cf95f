//! Hotspot detection: connected regions warmer than a reference by a chosen margin.
//!
//! Works on any [`Frame`]: °C for absolute images, 0–1 for relative ones (the margin is then in
//! relative units). The reference is the frame median by default, or the mean of a reference region
//! (the "similar component under similar load" of a NETA-style ΔT comparison), or a fixed value.

use crate::error::{Error, Result};
use crate::frame::Frame;
use crate::stats::median_of;

/// An axis-aligned rectangle in frame pixels (x = column, y = row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rect {
    /// Left column.
    pub x: usize,
    /// Top row.
    pub y: usize,
    /// Width in pixels (≥ 1).
    pub width: usize,
    /// Height in pixels (≥ 1).
    pub height: usize,
}

/// What hotspots are measured against.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Reference {
    /// The median of all valid pixels.
    Median,
    /// The mean of the valid pixels inside a rectangle.
    Region(Rect),
    /// A fixed value in the frame's unit (e.g. ambient air temperature).
    Value(f64),
}

/// Settings for [`detect`].
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HotspotConfig {
    /// Baseline the margin is added to.
    pub reference: Reference,
    /// Margin above the reference: pixels strictly above `reference + delta` are hot.
    pub delta: f64,
    /// Regions smaller than this are dropped (noise, single hot pixels).
    pub min_area_px: usize,
    /// Use 8-connectivity (diagonal neighbours join a region) instead of 4.
    pub eight_connected: bool,
    /// Keep at most this many regions (the hottest).
    pub max_regions: usize,
}

/// Default margin for absolute frames, °C (NETA "probable deficiency" begins at 4 °C vs similar).
pub const DEFAULT_DELTA_C: f64 = 5.0;
/// Default margin for relative (0–1) frames.
pub const DEFAULT_DELTA_RELATIVE: f64 = 0.25;

impl Default for HotspotConfig {
    fn default() -> Self {
        Self {
            reference: Reference::Median,
            delta: DEFAULT_DELTA_C,
            min_area_px: 1,
            eight_connected: true,
            max_regions: 32,
        }
    }
}

impl HotspotConfig {
    /// Defaults suited to relative (0–1) frames.
    pub fn relative() -> Self {
        Self { delta: DEFAULT_DELTA_RELATIVE, ..Self::default() }
    }
}

/// One hot region.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Hotspot {
    /// Bounding box.
    pub bbox: Rect,
    /// Centroid (x, y), pixel centres at integer coordinates.
    pub centroid: (f64, f64),
    /// Largest value in the region (°C for absolute frames, 0–1 for relative).
    pub max: f64,
    /// First pixel (row-major) holding `max`.
    pub max_xy: (usize, usize),
    /// Mean value over the region.
    pub mean: f64,
    /// Pixels in the region.
    pub area_px: usize,
    /// `max` minus the reference value.
    pub delta_max: f64,
}

/// Result of [`detect`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HotspotReport {
    /// The reference value used.
    pub reference_value: f64,
    /// The threshold (`reference_value + delta`).
    pub threshold: f64,
    /// Regions, hottest first (ties: larger area first).
    pub hotspots: Vec<Hotspot>,
}

/// Mean of the finite values inside `rect`.
pub fn region_mean(frame: &Frame, rect: Rect) -> Result<f64> {
    let region_err = || Error::Region {
        x: rect.x,
        y: rect.y,
        width: rect.width,
        height: rect.height,
        frame_width: frame.width,
        frame_height: frame.height,
    };
    let x_end = rect.x.checked_add(rect.width).filter(|&e| e <= frame.width && rect.width > 0);
    let y_end = rect.y.checked_add(rect.height).filter(|&e| e <= frame.height && rect.height > 0);
    let (Some(x_end), Some(y_end)) = (x_end, y_end) else { return Err(region_err()) };
    let (mut sum, mut n) = (0.0, 0usize);
    for y in rect.y..y_end {
        for x in rect.x..x_end {
            if let Some(v) = frame.get(x, y).filter(|v| v.is_finite()) {
                sum += v;
                n += 1;
            }
        }
    }
    if n == 0 {
        return Err(Error::NoValidPixels { width: rect.width, height: rect.height });
    }
    Ok(sum / n as f64)
}

/// Finds connected regions above `reference + delta`.
pub fn detect(frame: &Frame, config: &HotspotConfig) -> Result<HotspotReport> {
    if !config.delta.is_finite() {
        return Err(Error::InvalidOption {
            field: "delta",
            reason: format!("{} is not finite", config.delta),
        });
    }
    let reference_value = match config.reference {
        Reference::Median => {
            let mut v: Vec<f64> = frame.values.iter().copied().filter(|v| v.is_finite()).collect();
            if v.is_empty() {
                return Err(Error::NoValidPixels { width: frame.width, height: frame.height });
            }
            median_of(&mut v)
        }
        Reference::Region(rect) => region_mean(frame, rect)?,
        Reference::Value(v) if v.is_finite() => v,
        Reference::Value(v) => {
            return Err(Error::InvalidOption { field: "reference", reason: format!("{v} is not finite") });
        }
    };
    let threshold = reference_value + config.delta;
    let (w, h) = (frame.width, frame.height);
    let hot: Vec<bool> = frame.values.iter().map(|&v| v.is_finite() && v > threshold).collect();
    let mut seen = vec![false; hot.len()];
    let mut hotspots = Vec::new();
    let mut stack = Vec::new();
    for start in 0..hot.len() {
        if !hot.get(start).copied().unwrap_or(false) || seen.get(start).copied().unwrap_or(true) {
            continue;
        }
        let mut acc = Accumulator::new();
        if let Some(s) = seen.get_mut(start) {
            *s = true;
        }
        stack.push(start);
        while let Some(i) = stack.pop() {
            let (x, y) = (i % w, i / w);
            acc.add(x, y, i, frame.values.get(i).copied().unwrap_or(f64::NAN));
            for &(dx, dy) in neighbours(config.eight_connected) {
                let (Some(nx), Some(ny)) = (x.checked_add_signed(dx), y.checked_add_signed(dy)) else {
                    continue;
                };
                if nx >= w || ny >= h {
                    continue;
                }
                let j = ny * w + nx;
                if hot.get(j).copied().unwrap_or(false) && !seen.get(j).copied().unwrap_or(true) {
                    if let Some(s) = seen.get_mut(j) {
                        *s = true;
                    }
                    stack.push(j);
                }
            }
        }
        if acc.n >= config.min_area_px.max(1) {
            hotspots.push(acc.finish(w, reference_value));
        }
    }
    hotspots.sort_by(|a, b| b.max.total_cmp(&a.max).then(b.area_px.cmp(&a.area_px)));
    hotspots.truncate(config.max_regions);
    Ok(HotspotReport { reference_value, threshold, hotspots })
}

fn neighbours(eight: bool) -> &'static [(isize, isize)] {
    const FOUR: [(isize, isize); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];
    const EIGHT: [(isize, isize); 8] = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)];
    if eight { &EIGHT } else { &FOUR }
}

struct Accumulator {
    n: usize,
    sum: f64,
    sx: f64,
    sy: f64,
    max: f64,
    max_i: usize,
    x0: usize,
    y0: usize,
    x1: usize,
    y1: usize,
}

impl Accumulator {
    fn new() -> Self {
        Self {
            n: 0,
            sum: 0.0,
            sx: 0.0,
            sy: 0.0,
            max: f64::NEG_INFINITY,
            max_i: usize::MAX,
            x0: usize::MAX,
            y0: usize::MAX,
            x1: 0,
            y1: 0,
        }
    }

    fn add(&mut self, x: usize, y: usize, i: usize, v: f64) {
        self.n += 1;
        self.sum += v;
        self.sx += x as f64;
        self.sy += y as f64;
        // Pixels are visited in stack order, so break ties on the row-major index explicitly.
        if v > self.max || (v == self.max && i < self.max_i) {
            self.max = v;
            self.max_i = i;
        }
        self.x0 = self.x0.min(x);
        self.y0 = self.y0.min(y);
        self.x1 = self.x1.max(x);
        self.y1 = self.y1.max(y);
    }

    fn finish(&self, w: usize, reference: f64) -> Hotspot {
        let n = self.n as f64;
        Hotspot {
            bbox: Rect {
                x: self.x0,
                y: self.y0,
                width: self.x1 - self.x0 + 1,
                height: self.y1 - self.y0 + 1,
            },
            centroid: (self.sx / n, self.sy / n),
            max: self.max,
            max_xy: (self.max_i % w.max(1), self.max_i / w.max(1)),
            mean: self.sum / n,
            area_px: self.n,
            delta_max: self.max - reference,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> Frame {
        // 6x4, background 20, a 2x2 blob at 40 and a single pixel at 50 (diagonal to nothing).
        #[rustfmt::skip]
        let v = vec![
            20.0, 20.0, 20.0, 20.0, 20.0, 50.0,
            20.0, 40.0, 41.0, 20.0, 20.0, 20.0,
            20.0, 40.0, 40.0, 20.0, 20.0, 20.0,
            20.0, 20.0, 20.0, 20.0, f64::NAN, 20.0,
        ];
        Frame::new(6, 4, v).unwrap()
    }

    #[test]
    fn finds_regions_sorted_by_max_with_geometry() {
        let r = detect(&frame(), &HotspotConfig::default()).unwrap();
        assert_eq!(r.reference_value, 20.0);
        assert_eq!(r.hotspots.len(), 2);
        let top = &r.hotspots[0];
        assert_eq!((top.max, top.area_px, top.max_xy), (50.0, 1, (5, 0)));
        let blob = &r.hotspots[1];
        assert_eq!(blob.bbox, Rect { x: 1, y: 1, width: 2, height: 2 });
        assert_eq!(blob.centroid, (1.5, 1.5));
        assert_eq!(blob.max_xy, (2, 1));
        assert!((blob.mean - 40.25).abs() < 1e-12);
        assert_eq!(blob.delta_max, 21.0);
    }

    #[test]
    fn min_area_and_region_reference() {
        let cfg = HotspotConfig { min_area_px: 2, ..HotspotConfig::default() };
        assert_eq!(detect(&frame(), &cfg).unwrap().hotspots.len(), 1);
        let rect = Rect { x: 1, y: 1, width: 2, height: 2 };
        assert!((region_mean(&frame(), rect).unwrap() - 40.25).abs() < 1e-12);
        let cfg =
            HotspotConfig { reference: Reference::Region(rect), delta: 1.0, ..HotspotConfig::default() };
        let r = detect(&frame(), &cfg).unwrap();
        assert_eq!(r.hotspots.len(), 1);
        assert_eq!(r.hotspots[0].max, 50.0);
    }

    #[test]
    fn out_of_frame_region_is_an_error() {
        let msg = region_mean(&frame(), Rect { x: 5, y: 0, width: 2, height: 1 }).unwrap_err().to_string();
        assert_eq!(msg, "region x=5 y=0 w=2 h=1 is outside the 6x4 frame or empty");
        assert!(region_mean(&frame(), Rect { x: 0, y: 0, width: 0, height: 1 }).is_err());
    }

    #[test]
    fn four_connectivity_splits_diagonals() {
        let f = Frame::new(2, 2, vec![9.0, 0.0, 0.0, 9.0]).unwrap();
        let cfg = HotspotConfig { reference: Reference::Value(0.0), delta: 1.0, ..HotspotConfig::default() };
        assert_eq!(detect(&f, &cfg).unwrap().hotspots.len(), 1);
        let cfg = HotspotConfig { eight_connected: false, ..cfg };
        assert_eq!(detect(&f, &cfg).unwrap().hotspots.len(), 2);
    }
}

//! Frame statistics: min, max, mean, median and where the extremes are.
//!
//! Positions are in the frame's own coordinates (the raw sensor frame for absolute radiometry);
//! ties go to the first pixel in row-major order. `NaN` pixels are skipped and counted.

use crate::error::{Error, Result};
use crate::frame::Frame;

/// Summary of the finite values of a frame.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Stats {
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (mean of the two middle values for an even count).
    pub median: f64,
    /// (x, y) of the first pixel (row-major) holding `max`.
    pub hottest_xy: (usize, usize),
    /// (x, y) of the first pixel (row-major) holding `min`.
    pub coldest_xy: (usize, usize),
    /// Number of pixels holding exactly `max`.
    pub hottest_count: usize,
    /// Finite pixels.
    pub valid_px: usize,
    /// `NaN` (or infinite) pixels.
    pub invalid_px: usize,
}

/// Computes [`Stats`] over the finite values of `frame`.
pub fn compute(frame: &Frame) -> Result<Stats> {
    let mut min = f64::INFINITY;
    let mut max = f64::NEG_INFINITY;
    let (mut min_i, mut max_i) = (0usize, 0usize);
    let mut sum = 0.0f64;
    let mut valid = Vec::with_capacity(frame.values.len());
    for (i, &v) in frame.values.iter().enumerate() {
        if !v.is_finite() {
            continue;
        }
        if v > max {
            max = v;
            max_i = i;
        }
        if v < min {
            min = v;
            min_i = i;
        }
        sum += v;
        valid.push(v);
    }
    if valid.is_empty() {
        return Err(Error::NoValidPixels { width: frame.width, height: frame.height });
    }
    let n = valid.len();
    let hottest_count = valid.iter().filter(|&&v| v == max).count();
    let mean = sum / n as f64;
    let median = median_of(&mut valid);
    let w = frame.width.max(1);
    Ok(Stats {
        min,
        max,
        mean,
        median,
        hottest_xy: (max_i % w, max_i / w),
        coldest_xy: (min_i % w, min_i / w),
        hottest_count,
        valid_px: n,
        invalid_px: frame.values.len() - n,
    })
}

/// Median of finite values (reorders `values`); `NaN` for an empty slice.
pub(crate) fn median_of(values: &mut [f64]) -> f64 {
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    let mid = n / 2;
    let (lower, upper, _) = values.select_nth_unstable_by(mid, f64::total_cmp);
    let upper = *upper;
    if n % 2 == 1 {
        upper
    } else {
        let lower_max = lower.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lower_max + upper) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_go_to_first_pixel_in_row_major_order_and_nan_is_skipped() {
        let f = Frame::new(3, 2, vec![1.0, 5.0, f64::NAN, 0.5, 5.0, 0.5]).unwrap();
        let s = compute(&f).unwrap();
        assert_eq!(s.hottest_xy, (1, 0));
        assert_eq!(s.coldest_xy, (0, 1));
        assert_eq!(s.hottest_count, 2);
        assert_eq!(s.invalid_px, 1);
        assert_eq!(s.median, 1.0);
        assert!((s.mean - 12.0 / 5.0).abs() < 1e-12);
    }

    #[test]
    fn even_median_and_all_nan() {
        assert_eq!(median_of(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        let f = Frame::new(1, 1, vec![f64::NAN]).unwrap();
        assert!(compute(&f).is_err());
    }
}

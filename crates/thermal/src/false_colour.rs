//! Relative analysis of false-colour images: map each pixel back onto a palette curve.
//!
//! Used when a file carries no radiometric data we can convert to °C (DJI R-JPEGs, screenshots,
//! exported PNGs). Each pixel's nearest palette colour gives a position 0 (cold end) … 1 (hot end).
//! Pixels far from the curve (markers, MSX edges, JPEG fringes) and thin near-white shapes (overlay
//! text, crosshairs) are masked as `NaN`. The result is *relative*: the colour-bar limits, the
//! vendor's exact palette and any histogram stretch are unknown, so it locates hotspots but does not
//! measure temperatures.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::frame::{Frame, checked_area};
use crate::palette::{Palette, PaletteKind, Rgb};

/// An 8-bit RGB image, row-major.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RgbImage {
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// `width * height` pixels.
    pub pixels: Vec<Rgb>,
}

impl RgbImage {
    /// Builds an image, checking the pixel count.
    pub fn new(width: usize, height: usize, pixels: Vec<Rgb>) -> Result<Self> {
        let n = checked_area(width, height, "RGB image")?;
        if pixels.len() != n {
            return Err(Error::Dimensions {
                context: "RGB image".into(),
                width,
                height,
                reason: format!("{} pixels supplied", pixels.len()),
            });
        }
        Ok(Self { width, height, pixels })
    }
}

/// Settings for [`invert`].
#[derive(Debug, Clone, PartialEq)]
pub struct InversionConfig {
    /// Largest RGB distance from the palette curve a pixel may have and still be mapped.
    pub max_distance: f64,
    /// Mask thin near-white shapes (overlay text, spot markers) and an on-image colour bar.
    pub mask_overlays: bool,
    /// Fail unless at least this fraction of pixels maps onto the chosen palette.
    pub min_coverage: f64,
    /// Candidate palettes; the one that fits the most pixels is used.
    pub palettes: Vec<Palette>,
}

impl Default for InversionConfig {
    fn default() -> Self {
        Self { max_distance: 48.0, mask_overlays: true, min_coverage: 0.3, palettes: Palette::builtins() }
    }
}

/// How well one candidate palette fits the image.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PaletteFit {
    /// Palette name.
    pub name: String,
    /// Palette family.
    pub kind: PaletteKind,
    /// Fraction of sampled (unmasked) pixels within `max_distance` of the curve.
    pub on_curve_fraction: f64,
    /// Mean distance of sampled pixels to the curve.
    pub mean_distance: f64,
}

/// The relative frame and what it was built from.
#[derive(Debug, Clone, PartialEq)]
pub struct Inversion {
    /// Relative values 0–1 at the image's resolution; `NaN` where masked.
    pub frame: Frame,
    /// The palette used.
    pub palette: Palette,
    /// Fraction of all pixels that received a value.
    pub coverage: f64,
    /// Pixels masked as overlay (text, markers).
    pub overlay_px: usize,
    /// Pixels masked as an on-image colour bar (a vertical strip of constant rows spanning the palette).
    pub colour_bar_px: usize,
    /// Pixels rejected for lying too far from the curve.
    pub off_palette_px: usize,
    /// Fit of every candidate, best first.
    pub fits: Vec<PaletteFit>,
}

/// Most pixels sampled when choosing a palette.
const SELECTION_SAMPLES: usize = 8_000;

/// Inverts a false-colour image to a relative 0–1 frame.
pub fn invert(image: &RgbImage, config: &InversionConfig) -> Result<Inversion> {
    let (w, h) = (image.width, image.height);
    let fail = |reason: String| Error::FalseColour { width: w, height: h, reason };
    if !(config.max_distance.is_finite() && config.max_distance >= 0.0) {
        return Err(Error::InvalidOption {
            field: "max_distance",
            reason: format!("{} must be finite and ≥ 0", config.max_distance),
        });
    }
    let palettes: Vec<&Palette> = config.palettes.iter().filter(|p| p.colours.len() >= 2).collect();
    if palettes.is_empty() {
        return Err(fail("no candidate palette with at least 2 colours".into()));
    }
    let overlay = if config.mask_overlays { overlay_mask(image) } else { vec![false; image.pixels.len()] };
    let overlay_px = overlay.iter().filter(|&&m| m).count();

    // Choose the palette on a sample of unmasked pixels.
    let stride = (image.pixels.len() / SELECTION_SAMPLES).max(1);
    let max_d2 = config.max_distance * config.max_distance;
    let mut fits: Vec<(PaletteFit, usize)> = Vec::new();
    for (pi, palette) in palettes.iter().enumerate() {
        let mut lut = Nearest::new(palette);
        let (mut on, mut total, mut dist) = (0usize, 0usize, 0.0f64);
        for (i, &px) in image.pixels.iter().enumerate().step_by(stride) {
            if overlay.get(i).copied().unwrap_or(true) {
                continue;
            }
            let (_, d2) = lut.lookup(px);
            total += 1;
            dist += d2.sqrt();
            if d2 <= max_d2 {
                on += 1;
            }
        }
        let denom = total.max(1) as f64;
        fits.push((
            PaletteFit {
                name: palette.name.clone(),
                kind: palette.kind,
                on_curve_fraction: on as f64 / denom,
                mean_distance: dist / denom,
            },
            pi,
        ));
    }
    fits.sort_by(|(a, _), (b, _)| {
        b.on_curve_fraction.total_cmp(&a.on_curve_fraction).then(a.mean_distance.total_cmp(&b.mean_distance))
    });
    let Some(&(_, best)) = fits.first() else { return Err(fail("no palette candidates".into())) };
    let Some(palette) = palettes.get(best).copied() else { return Err(fail("no palette candidates".into())) };

    // Map every pixel.
    let last = (palette.colours.len() - 1) as f64;
    let mut lut = Nearest::new(palette);
    let mut off_palette_px = 0usize;
    let values: Vec<f64> = image
        .pixels
        .iter()
        .zip(&overlay)
        .map(|(&px, &masked)| {
            if masked {
                return f64::NAN;
            }
            let (idx, d2) = lut.lookup(px);
            if d2 > max_d2 {
                off_palette_px += 1;
                return f64::NAN;
            }
            f64::from(idx) / last
        })
        .collect();
    let mut values = values;
    let colour_bar_px = if config.mask_overlays { mask_colour_bar(&mut values, w, h) } else { 0 };
    let mapped = values.iter().filter(|v| v.is_finite()).count();
    let coverage = mapped as f64 / values.len().max(1) as f64;
    if coverage < config.min_coverage {
        return Err(fail(format!(
            "only {:.0}% of pixels lie within {} of the best palette ({}), need {:.0}%",
            coverage * 100.0,
            config.max_distance,
            palette.name,
            config.min_coverage * 100.0
        )));
    }
    Ok(Inversion {
        frame: Frame::new(w, h, values)?,
        palette: palette.clone(),
        coverage,
        overlay_px,
        colour_bar_px,
        off_palette_px,
        fits: fits.into_iter().map(|(f, _)| f).collect(),
    })
}

/// Nearest palette entry with a per-colour memo (JPEG images repeat colours heavily).
///
/// Palettes are smooth curves, so the search is coarse-to-fine: every [`COARSE_STEP`]th entry first,
/// then every entry around the two best coarse hits (two, because a curve may pass near itself).
struct Nearest<'a> {
    palette: &'a Palette,
    memo: HashMap<Rgb, (u16, f64)>,
}

/// Stride of the coarse pass.
const COARSE_STEP: usize = 8;

fn dist2(a: Rgb, b: Rgb) -> i32 {
    let d = |x: u8, y: u8| i32::from(x) - i32::from(y);
    let (r, g, b2) = (d(a[0], b[0]), d(a[1], b[1]), d(a[2], b[2]));
    r * r + g * g + b2 * b2
}

impl<'a> Nearest<'a> {
    fn new(palette: &'a Palette) -> Self {
        Self { palette, memo: HashMap::new() }
    }

    /// (index, squared distance) of the nearest entry.
    fn lookup(&mut self, px: Rgb) -> (u16, f64) {
        let colours = &self.palette.colours;
        *self.memo.entry(px).or_insert_with(|| {
            let n = colours.len();
            // Two best coarse candidates (index, distance).
            let mut top = [(0usize, i32::MAX); 2];
            let coarse = (0..n).step_by(COARSE_STEP).chain(std::iter::once(n.saturating_sub(1)));
            for i in coarse {
                let Some(&c) = colours.get(i) else { continue };
                let d = dist2(px, c);
                if d < top[0].1 {
                    top[1] = top[0];
                    top[0] = (i, d);
                } else if d < top[1].1 {
                    top[1] = (i, d);
                }
            }
            let mut best = (0usize, i32::MAX);
            for &(centre, d) in &top {
                if d == i32::MAX {
                    continue;
                }
                let lo = centre.saturating_sub(COARSE_STEP);
                let hi = (centre + COARSE_STEP + 1).min(n);
                for (i, &c) in colours.iter().enumerate().take(hi).skip(lo) {
                    let d = dist2(px, c);
                    if d < best.1 || (d == best.1 && i < best.0) {
                        best = (i, d);
                    }
                }
            }
            (u16::try_from(best.0).unwrap_or(u16::MAX), f64::from(best.1))
        })
    }
}

/// Width of the horizontal window a colour-bar row must be constant over.
const BAR_WIDTH: usize = 6;
/// Largest difference (relative units) still counted as "the same colour" within a bar row.
const BAR_ROW_TOLERANCE: f64 = 0.04;

/// Finds and masks (sets to `NaN`) colour bars: vertical runs, at least a quarter of the image high,
/// of horizontally constant rows whose values change monotonically over at least 60 % of the scale.
/// Returns the number of pixels masked. Real scenes rarely have such a ramp; display images of most
/// cameras do, and its hot end would otherwise be the "hottest pixel".
fn mask_colour_bar(values: &mut [f64], w: usize, h: usize) -> usize {
    let at = |v: &[f64], x: usize, y: usize| v.get(y * w + x).copied().unwrap_or(f64::NAN);
    let min_run = (h / 4).max(20);
    if w < BAR_WIDTH || h < min_run {
        return 0;
    }
    let flat = |v: &[f64], x: usize, y: usize| -> bool {
        let c = at(v, x, y);
        c.is_finite()
            && (1..BAR_WIDTH).all(|d| {
                let o = at(v, x + d, y);
                o.is_finite() && (o - c).abs() <= BAR_ROW_TOLERANCE
            })
    };
    let mut bars: Vec<(usize, usize, usize)> = Vec::new(); // (x, y0, y1 exclusive)
    for x in 0..=(w - BAR_WIDTH) {
        let mut y = 0;
        while y < h {
            if !flat(values, x, y) {
                y += 1;
                continue;
            }
            let y0 = y;
            while y < h && flat(values, x, y) {
                y += 1;
            }
            if y - y0 < min_run {
                continue;
            }
            let run: Vec<f64> = (y0..y).map(|yy| at(values, x, yy)).collect();
            let lo = run.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = run.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let dir = run.last().copied().unwrap_or(0.0) - run.first().copied().unwrap_or(0.0);
            let steps = run.windows(2).filter(|p| p.len() == 2).count().max(1);
            let consistent = run
                .windows(2)
                .filter(|p| match p {
                    [a, b] => (b - a).abs() <= 0.02 || (b - a).signum() == dir.signum(),
                    _ => true,
                })
                .count();
            if hi - lo >= 0.6 && dir.abs() >= 0.5 && consistent as f64 >= 0.9 * steps as f64 {
                bars.push((x, y0, y));
            }
        }
    }
    let mut masked = 0;
    for (x, y0, y1) in bars {
        for y in y0..y1 {
            for xx in x..(x + BAR_WIDTH).min(w) {
                if let Some(v) = values.get_mut(y * w + xx).filter(|v| v.is_finite()) {
                    *v = f64::NAN;
                    masked += 1;
                }
            }
        }
    }
    masked
}

fn near_white(px: Rgb) -> bool {
    let min = px.iter().copied().min().unwrap_or(0);
    let max = px.iter().copied().max().unwrap_or(0);
    min >= 215 && max - min <= 40
}

/// Thin near-white shapes: near-white pixels whose 5×5 neighbourhood is less than 60 % near-white,
/// grown by one pixel to take the anti-aliased fringe. Solid white areas (saturated hot plateaus) stay.
fn overlay_mask(image: &RgbImage) -> Vec<bool> {
    let (w, h) = (image.width, image.height);
    let white: Vec<bool> = image.pixels.iter().map(|&p| near_white(p)).collect();
    // Integral image with a zero row and column.
    let mut integral = vec![0u32; (w + 1) * (h + 1)];
    for y in 0..h {
        let mut row = 0u32;
        for x in 0..w {
            row += u32::from(white.get(y * w + x).copied().unwrap_or(false));
            let above = integral.get(y * (w + 1) + x + 1).copied().unwrap_or(0);
            if let Some(cell) = integral.get_mut((y + 1) * (w + 1) + x + 1) {
                *cell = above + row;
            }
        }
    }
    let sum = |x0: usize, y0: usize, x1: usize, y1: usize| -> u32 {
        // Inclusive-exclusive box [x0, x1) × [y0, y1).
        let at = |x: usize, y: usize| integral.get(y * (w + 1) + x).copied().unwrap_or(0);
        (at(x1, y1) + at(x0, y0)).saturating_sub(at(x0, y1) + at(x1, y0))
    };
    let mut thin = vec![false; w * h];
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            if !white.get(i).copied().unwrap_or(false) {
                continue;
            }
            let (x0, y0) = (x.saturating_sub(2), y.saturating_sub(2));
            let (x1, y1) = ((x + 3).min(w), (y + 3).min(h));
            let area = ((x1 - x0) * (y1 - y0)) as f64;
            if let (true, Some(t)) = (f64::from(sum(x0, y0, x1, y1)) < 0.6 * area, thin.get_mut(i)) {
                *t = true;
            }
        }
    }
    let mut grown = thin.clone();
    for y in 0..h {
        for x in 0..w {
            if !thin.get(y * w + x).copied().unwrap_or(false) {
                continue;
            }
            for ny in y.saturating_sub(1)..(y + 2).min(h) {
                for nx in x.saturating_sub(1)..(x + 2).min(w) {
                    if let Some(g) = grown.get_mut(ny * w + nx) {
                        *g = true;
                    }
                }
            }
        }
    }
    grown
}

/// Decodes a PNG into 8-bit RGB (alpha dropped, grey expanded, 16-bit stripped).
pub(crate) fn decode_png_rgb(data: &[u8], context: &str) -> Result<RgbImage> {
    let err = |message: String| Error::Png { context: context.to_owned(), message };
    let decoded = std::panic::catch_unwind(|| {
        let mut dec = png::Decoder::new_with_limits(
            std::io::Cursor::new(data),
            png::Limits { bytes: crate::frame::MAX_PIXELS * 4 },
        );
        dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = dec.read_info().map_err(|e| e.to_string())?;
        let size = reader.output_buffer_size().ok_or_else(|| "image too large".to_owned())?;
        let mut buf = vec![0u8; size];
        let out = reader.next_frame(&mut buf).map_err(|e| e.to_string())?;
        buf.truncate(out.buffer_size());
        Ok((out.width, out.height, out.color_type, buf))
    })
    .map_err(|_| err("the PNG decoder panicked on this input".into()))?
    .map_err(err)?;
    let (w, h, colour, buf) = decoded;
    let (width, height) = (crate::fff::to_usize(w), crate::fff::to_usize(h));
    let pixels: Vec<Rgb> = match colour {
        png::ColorType::Rgb => buf.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect(),
        png::ColorType::Rgba => buf.chunks_exact(4).map(|c| [c[0], c[1], c[2]]).collect(),
        png::ColorType::Grayscale => buf.iter().map(|&g| [g, g, g]).collect(),
        png::ColorType::GrayscaleAlpha => buf.chunks_exact(2).map(|c| [c[0], c[0], c[0]]).collect(),
        png::ColorType::Indexed => return Err(err("palette PNG was not expanded".into())),
    };
    RgbImage::new(width, height, pixels)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synthetic iron image: a horizontal ramp with white text-like strokes.
    fn ramp(palette: &Palette, w: usize, h: usize) -> RgbImage {
        let n = palette.colours.len() - 1;
        let mut px = Vec::with_capacity(w * h);
        for _y in 0..h {
            for x in 0..w {
                px.push(palette.colours[x * n / (w - 1)]);
            }
        }
        RgbImage::new(w, h, px).unwrap()
    }

    #[test]
    fn picks_the_right_palette_and_recovers_the_ramp() {
        for palette in Palette::builtins() {
            let img = ramp(&palette, 64, 40);
            let inv = invert(&img, &InversionConfig { mask_overlays: false, ..Default::default() }).unwrap();
            assert_eq!(inv.palette.kind, palette.kind);
            for x in [0usize, 10, 32, 63] {
                let v = inv.frame.get(x, 5).unwrap();
                assert!((v - x as f64 / 63.0).abs() < 0.02, "{} x={x} v={v}", palette.name);
            }
        }
    }

    #[test]
    fn thin_white_text_is_masked_but_white_blobs_stay() {
        let mut img = ramp(&Palette::iron(), 64, 40);
        // A 1-px vertical stroke of white on the cold side.
        for y in 5..30 {
            img.pixels[y * 64 + 10] = [255, 255, 255];
        }
        // A solid 12x12 white block.
        for y in 20..32 {
            for x in 40..52 {
                img.pixels[y * 64 + x] = [255, 255, 255];
            }
        }
        let inv = invert(&img, &InversionConfig::default()).unwrap();
        assert!(inv.frame.get(10, 15).unwrap().is_nan());
        assert!(inv.frame.get(46, 26).unwrap() > 0.95);
        assert!(inv.overlay_px > 0);
    }

    #[test]
    fn colour_bar_strip_is_masked() {
        // Noisy scene on the left, a 10-px vertical bar (hot at top) on the right.
        let palette = Palette::iron();
        let (w, h) = (80, 60);
        let mut px = Vec::with_capacity(w * h);
        for y in 0..h {
            for x in 0..w {
                let idx = if x >= 70 { 255 - y * 255 / (h - 1) } else { (x * 7 + y * 13) % 150 };
                px.push(palette.colours[idx]);
            }
        }
        let img = RgbImage::new(w, h, px).unwrap();
        let inv = invert(&img, &InversionConfig::default()).unwrap();
        assert!(inv.colour_bar_px >= 10 * 50, "{}", inv.colour_bar_px);
        assert!(inv.frame.get(75, 0).unwrap().is_nan());
        assert!(inv.frame.get(10, 10).unwrap().is_finite());
    }

    #[test]
    fn off_palette_image_is_rejected() {
        let img = RgbImage::new(8, 8, vec![[0, 255, 0]; 64]).unwrap();
        let cfg = InversionConfig { palettes: vec![Palette::grey()], ..Default::default() };
        let msg = invert(&img, &cfg).unwrap_err().to_string();
        assert!(msg.starts_with("cannot invert false-colour image (8x8): only 0% of pixels"), "{msg}");
    }
}

//! Colour palettes: the camera's embedded palette (YCrCb → RGB) and generic built-in curves
//! (iron, rainbow, white-hot grey) used to invert false-colour images.
//!
//! A palette is an ordered list of RGB colours, index 0 at the cold end. Built-ins are piecewise-linear
//! curves through a handful of stops; they approximate the vendors' tables, which differ between
//! models and firmware, so anything inverted with them is reported as relative.

/// An 8-bit RGB colour.
pub type Rgb = [u8; 3];

/// Which palette family a palette belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum PaletteKind {
    /// Black → purple → red → orange → yellow → white ("ironbow", "iron red").
    Iron,
    /// Blue → cyan → green → yellow → red (→ white).
    Rainbow,
    /// White-hot greyscale.
    Grey,
    /// A palette read from the file (FLIR PaletteInfo) or supplied by the caller.
    Custom,
}

/// An ordered palette, cold end first.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Palette {
    /// Family.
    pub kind: PaletteKind,
    /// Name, e.g. "iron" or the name stored in the file.
    pub name: String,
    /// Colours, index 0 = coldest. Never empty for built-ins.
    pub colours: Vec<Rgb>,
}

/// Stops of the generic iron curve (position 0–1, colour): the common "ironbow" shape.
const IRON_STOPS: &[(f64, Rgb)] = &[
    (0.000, [5, 10, 30]),
    (0.083, [40, 15, 115]),
    (0.167, [95, 10, 155]),
    (0.250, [140, 15, 160]),
    (0.333, [177, 33, 144]),
    (0.417, [203, 56, 110]),
    (0.500, [222, 86, 70]),
    (0.583, [236, 118, 34]),
    (0.667, [242, 148, 12]),
    (0.750, [244, 180, 12]),
    (0.833, [241, 206, 42]),
    (0.917, [234, 227, 113]),
    (1.000, [232, 238, 235]),
];

/// Stops of the generic rainbow curve: dark blue → blue → green → yellow → red → pink → white.
const RAINBOW_STOPS: &[(f64, Rgb)] = &[
    (0.000, [15, 15, 80]),
    (0.167, [15, 80, 170]),
    (0.250, [15, 110, 210]),
    (0.333, [25, 140, 150]),
    (0.417, [110, 180, 30]),
    (0.500, [190, 200, 15]),
    (0.583, [225, 190, 20]),
    (0.667, [235, 150, 35]),
    (0.750, [235, 55, 60]),
    (0.833, [230, 55, 95]),
    (0.917, [235, 140, 130]),
    (1.000, [238, 218, 195]),
];

const GREY_STOPS: &[(f64, Rgb)] = &[(0.0, [0, 0, 0]), (1.0, [255, 255, 255])];

/// Number of entries the built-ins are sampled to.
const BUILTIN_LEN: usize = 256;

impl Palette {
    /// The generic iron (ironbow) curve.
    pub fn iron() -> Self {
        Self::from_stops(PaletteKind::Iron, "iron", IRON_STOPS, BUILTIN_LEN)
    }

    /// The generic rainbow curve.
    pub fn rainbow() -> Self {
        Self::from_stops(PaletteKind::Rainbow, "rainbow", RAINBOW_STOPS, BUILTIN_LEN)
    }

    /// White-hot greyscale.
    pub fn grey() -> Self {
        Self::from_stops(PaletteKind::Grey, "grey (white hot)", GREY_STOPS, BUILTIN_LEN)
    }

    /// All built-in palettes, in the order they are tried.
    pub fn builtins() -> Vec<Self> {
        vec![Self::iron(), Self::rainbow(), Self::grey()]
    }

    /// Samples a piecewise-linear curve through `stops` (positions ascending in 0–1) to `n` colours.
    pub fn from_stops(kind: PaletteKind, name: &str, stops: &[(f64, Rgb)], n: usize) -> Self {
        let n = n.max(2);
        let mut colours = Vec::with_capacity(n);
        for i in 0..n {
            let t = i as f64 / (n - 1) as f64;
            colours.push(interpolate(stops, t));
        }
        Self { kind, name: name.to_owned(), colours }
    }

    /// Builds a palette from Y, Cr, Cb triples (FLIR PaletteInfo order) with full-range BT.601.
    pub fn from_ycrcb(name: &str, ycrcb: &[[u8; 3]]) -> Self {
        Self {
            kind: PaletteKind::Custom,
            name: name.to_owned(),
            colours: ycrcb.iter().map(|&[y, cr, cb]| ycrcb_to_rgb(y, cr, cb)).collect(),
        }
    }
}

fn interpolate(stops: &[(f64, Rgb)], t: f64) -> Rgb {
    let mut prev = match stops.first() {
        Some(s) => *s,
        None => return [0, 0, 0],
    };
    for &(pos, colour) in stops {
        if t <= pos {
            let span = pos - prev.0;
            let f = if span > 0.0 { (t - prev.0) / span } else { 1.0 };
            let mix = |a: u8, b: u8| channel(f64::from(a) + (f64::from(b) - f64::from(a)) * f);
            return [mix(prev.1[0], colour[0]), mix(prev.1[1], colour[1]), mix(prev.1[2], colour[2])];
        }
        prev = (pos, colour);
    }
    prev.1
}

/// Rounds and clamps a channel value to 0–255.
fn channel(v: f64) -> u8 {
    // The clamp makes the cast exact.
    v.round().clamp(0.0, 255.0) as u8
}

/// Full-range BT.601 YCrCb → RGB, as FLIR palettes need.
pub fn ycrcb_to_rgb(y: u8, cr: u8, cb: u8) -> Rgb {
    let (y, cr, cb) = (f64::from(y), f64::from(cr) - 128.0, f64::from(cb) - 128.0);
    [channel(y + 1.402 * cr), channel(y - 0.344136 * cb - 0.714136 * cr), channel(y + 1.772 * cb)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ycrcb_neutral_and_primaries() {
        assert_eq!(ycrcb_to_rgb(128, 128, 128), [128, 128, 128]);
        assert_eq!(ycrcb_to_rgb(255, 128, 128), [255, 255, 255]);
        // Pure red in full-range BT.601: Y 76, Cb 85, Cr 255.
        let [r, g, b] = ycrcb_to_rgb(76, 255, 85);
        assert!(r >= 253 && g <= 2 && b <= 2, "{r} {g} {b}");
    }

    #[test]
    fn builtins_run_cold_to_hot() {
        for p in Palette::builtins() {
            assert_eq!(p.colours.len(), BUILTIN_LEN);
            let lum = |c: Rgb| u32::from(c[0]) + u32::from(c[1]) + u32::from(c[2]);
            assert!(lum(p.colours[0]) < 120, "{}", p.name);
            assert!(lum(*p.colours.last().unwrap()) > 600, "{}", p.name);
        }
        assert_eq!(Palette::grey().colours[255], [255, 255, 255]);
    }
}

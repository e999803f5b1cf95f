//! Relative analysis of display images: FLIR files with their radiometric chunks stripped are plain
//! false-colour JPEGs whose truth we know.

use switchboard_thermal::{
    DecodeOptions, FrameSource, InversionConfig, Palette, PaletteKind, Radiometry, RelativeMethod,
    SourceFormat, decode,
};

use crate::common::samples;

/// Removes every APP1 "FLIR" segment, leaving an ordinary JPEG.
pub fn strip_flir(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes[..2].to_vec();
    let mut pos = 2;
    while pos + 4 <= bytes.len() {
        let marker = bytes[pos + 1];
        let len = usize::from(u16::from_be_bytes([bytes[pos + 2], bytes[pos + 3]]));
        let seg = &bytes[pos..pos + 2 + len];
        if marker == 0xDA {
            out.extend_from_slice(&bytes[pos..]);
            return out;
        }
        if !(marker == 0xE1 && seg[4..].starts_with(b"FLIR\0")) {
            out.extend_from_slice(seg);
        }
        pos += 2 + len;
    }
    out
}

/// Pearson correlation of two equally long series.
fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

#[test]
fn explore() {
    for s in samples() {
        if !s.name.ends_with(".jpg") {
            continue;
        }
        let truth = decode(&s.bytes, &DecodeOptions::default()).unwrap();
        let plain = strip_flir(&s.bytes);
        for (label, opts) in [
            ("builtin", DecodeOptions::default()),
            (
                "embedded",
                DecodeOptions {
                    inversion: InversionConfig {
                        palettes: truth
                            .palette_info
                            .as_ref()
                            .and_then(|p| p.palette.clone())
                            .into_iter()
                            .collect(),
                        ..InversionConfig::default()
                    },
                    ..DecodeOptions::default()
                },
            ),
        ] {
            let img = match decode(&plain, &opts) {
                Ok(i) => i,
                Err(e) => {
                    println!("{} {label}: {e}", s.name);
                    continue;
                }
            };
            let (dw, dh) = (img.frame.width, img.frame.height);
            let (rw, rh) = (truth.frame.width, truth.frame.height);
            let mut a = Vec::new();
            let mut b = Vec::new();
            if dw % rw == 0 && dh % rh == 0 && dw / rw == dh / rh {
                let k = dw / rw;
                for y in 0..dh {
                    for x in 0..dw {
                        let v = img.frame.get(x, y).unwrap();
                        if v.is_finite() {
                            a.push(v);
                            b.push(truth.frame.get(x / k, y / k).unwrap());
                        }
                    }
                }
            }
            let inv = img.inversion.as_ref().unwrap();
            println!(
                "{} {label}: {}x{} fits {:?} cov {:.3} overlay {} hottest {:?} truth {:?} corr {:.3}",
                s.name,
                dw,
                dh,
                inv.fits
                    .iter()
                    .map(|f| (
                        f.name.as_str(),
                        (f.on_curve_fraction * 1000.0).round() / 1000.0,
                        f.mean_distance.round()
                    ))
                    .collect::<Vec<_>>(),
                inv.coverage,
                inv.overlay_px,
                img.stats.hottest_xy,
                truth.stats.hottest_xy,
                if a.is_empty() { f64::NAN } else { correlation(&a, &b) }
            );
        }
    }
    let _ = (
        FrameSource::VisibleImage,
        PaletteKind::Iron,
        Palette::iron(),
        RelativeMethod::RawCounts,
        SourceFormat::Jpeg,
    );
    let _ = |r: Radiometry| r;
}

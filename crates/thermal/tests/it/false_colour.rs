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

/// (file prefix, expected palette family, minimum correlation with the true temperatures when the
/// display is an integer upscale of the raw frame; `None` where it is rotated, cropped or zoomed).
const CASES: &[(&str, PaletteKind, Option<f64>)] = &[
    ("rt_flir_example", PaletteKind::Iron, Some(0.9)),
    ("rt_zenmuse_xtr", PaletteKind::Grey, Some(0.99)),
    ("tp_FLIR_E40", PaletteKind::Iron, Some(0.9)),
    ("tp_FLIR_T640", PaletteKind::Iron, None),
    ("wm01_", PaletteKind::Rainbow, Some(0.7)),
    ("wm04_", PaletteKind::Iron, None),
    ("wm10_", PaletteKind::Iron, Some(0.9)),
];

#[test]
fn stripped_flir_display_images_invert_to_a_labelled_relative_scale() {
    for s in samples() {
        let Some(&(_, kind, min_corr)) = CASES.iter().find(|(p, _, _)| s.name.starts_with(p)) else {
            continue;
        };
        let truth = decode(&s.bytes, &DecodeOptions::default()).expect("radiometric decode");
        let plain = strip_flir(&s.bytes);
        let img = decode(&plain, &DecodeOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        assert_eq!(img.format, SourceFormat::Jpeg, "{}", s.name);
        assert!(img.camera.is_none() && img.colour_bar_c().is_none());
        match &img.radiometry {
            Radiometry::Relative { method, frame_source, palette, .. } => {
                assert_eq!(*method, RelativeMethod::PaletteInversion);
                assert_eq!(*frame_source, FrameSource::VisibleImage);
                assert!(palette.is_some());
            }
            other => panic!("{}: expected relative, got {other:?}", s.name),
        }
        let inv = img.inversion.as_ref().expect("inversion summary");
        assert_eq!(inv.fits[0].kind, kind, "{}: fits {:?}", s.name, inv.fits);
        assert!(img.stats.min >= 0.0 && img.stats.max <= 1.0);

        let (dw, dh) = (img.frame.width, img.frame.height);
        let (rw, rh) = (truth.frame.width, truth.frame.height);
        let mut corr = f64::NAN;
        if dw % rw == 0 && dh % rh == 0 && dw / rw == dh / rh {
            let k = dw / rw;
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for y in 0..dh {
                for x in 0..dw {
                    let v = img.frame.get(x, y).expect("in frame");
                    if v.is_finite() {
                        a.push(v);
                        b.push(truth.frame.get(x / k, y / k).expect("in raw frame"));
                    }
                }
            }
            corr = correlation(&a, &b);
        }
        println!(
            "{}: palette {} ({:.3} on curve), coverage {:.3}, overlay {} px, colour bar {} px, corr {corr:.3}",
            s.name,
            inv.fits[0].name,
            inv.fits[0].on_curve_fraction,
            inv.coverage,
            inv.overlay_px,
            inv.colour_bar_px
        );
        if let Some(min) = min_corr {
            assert!(corr >= min, "{}: correlation {corr:.3} < {min}", s.name);
        }
    }
}

#[test]
fn embedded_palette_can_be_supplied() {
    let s = crate::common::sample("wm01_");
    let truth = decode(&s.bytes, &DecodeOptions::default()).expect("radiometric decode");
    let embedded: Palette = truth.palette_info.and_then(|p| p.palette).expect("embedded palette");
    assert_eq!(embedded.colours.len(), 224);
    let opts = DecodeOptions {
        inversion: InversionConfig { palettes: vec![embedded], ..InversionConfig::default() },
        ..DecodeOptions::default()
    };
    let img = decode(&strip_flir(&s.bytes), &opts).expect("inversion");
    let inv = img.inversion.expect("summary");
    assert_eq!(inv.fits.len(), 1);
    assert_eq!(inv.fits[0].kind, PaletteKind::Custom);
    assert!(inv.coverage > 0.9);
}

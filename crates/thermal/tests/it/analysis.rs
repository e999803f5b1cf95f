//! Analysis on real images: hotspots, reference regions and user overrides.

use switchboard_thermal::{DecodeOptions, HotspotConfig, Overrides, Rect, Reference, decode};

use crate::common::sample;

#[test]
fn t640_hotspot_is_the_hot_fuse_and_sorted_first() {
    let s = sample("tp_FLIR_T640");
    let img = decode(&s.bytes, &DecodeOptions::default()).expect("decode");
    let cfg = HotspotConfig { delta: 20.0, min_area_px: 4, ..HotspotConfig::default() };
    let report = img.hotspots(&cfg).expect("hotspots");
    assert!((report.reference_value - img.stats.median).abs() < 1e-9);
    assert!(!report.hotspots.is_empty());
    let top = &report.hotspots[0];
    assert_eq!(top.max, img.stats.max);
    assert_eq!(top.max_xy, img.stats.hottest_xy);
    assert!(top.area_px >= 4 && top.mean <= top.max && top.mean > report.threshold);
    let b = top.bbox;
    assert!(b.x <= top.max_xy.0 && top.max_xy.0 < b.x + b.width);
    assert!(b.y <= top.max_xy.1 && top.max_xy.1 < b.y + b.height);
    assert!(report.hotspots.windows(2).all(|w| w[0].max >= w[1].max));

    // Against a reference region: the bottom-right 20x20 corner.
    let rect = Rect { x: 600, y: 440, width: 20, height: 20 };
    let reference = img.region_mean(rect).expect("region mean");
    let cfg = HotspotConfig { reference: Reference::Region(rect), delta: 15.0, ..cfg };
    let report = img.hotspots(&cfg).expect("hotspots");
    assert_eq!(report.reference_value, reference);
    assert!((report.hotspots[0].delta_max - (img.stats.max - reference)).abs() < 1e-9);
}

#[test]
fn overrides_change_temperatures_in_the_expected_direction() {
    let s = sample("wm01_");
    let base = decode(&s.bytes, &DecodeOptions::default()).expect("decode");
    let cam = base.camera.as_ref().expect("camera");

    // Overriding with the stored values changes nothing.
    let same = Overrides {
        emissivity: Some(cam.conditions.emissivity),
        distance_m: Some(cam.conditions.distance_m),
        reflected_c: Some(cam.conditions.reflected_c),
        atmospheric_c: Some(cam.conditions.atmospheric_c),
        relative_humidity: Some(cam.conditions.relative_humidity),
    };
    let img =
        decode(&s.bytes, &DecodeOptions { overrides: same, ..DecodeOptions::default() }).expect("decode");
    assert_eq!(img.stats, base.stats);

    // A lower emissivity means a warm object must be hotter to give the same signal.
    let low_e = Overrides { emissivity: Some(0.5), ..Overrides::default() };
    let img =
        decode(&s.bytes, &DecodeOptions { overrides: low_e, ..DecodeOptions::default() }).expect("decode");
    assert!(img.stats.max > base.stats.max + 10.0, "{} vs {}", img.stats.max, base.stats.max);
    assert_eq!(img.stats.hottest_xy, base.stats.hottest_xy);
    assert_eq!(img.model().expect("model").conditions.emissivity, 0.5);

    // More distance → lower transmission → slightly hotter objects.
    let far = Overrides { distance_m: Some(50.0), ..Overrides::default() };
    let img =
        decode(&s.bytes, &DecodeOptions { overrides: far, ..DecodeOptions::default() }).expect("decode");
    assert!(img.model().expect("model").tau < base.model().expect("model").tau);
    assert!(img.stats.max > base.stats.max);

    // Out-of-range overrides are rejected by name.
    let bad = Overrides { distance_m: Some(-1.0), ..Overrides::default() };
    let err = decode(&s.bytes, &DecodeOptions { overrides: bad, ..DecodeOptions::default() }).unwrap_err();
    assert!(err.to_string().starts_with("invalid option `distance_m`"), "{err}");
}

#[test]
fn extreme_emissivity_gives_nan_not_a_panic() {
    // At a tiny emissivity cold pixels fall below the reflected term: ln argument ≤ 0 → NaN.
    let s = sample("wm04_");
    let opts = DecodeOptions {
        overrides: Overrides { emissivity: Some(0.01), reflected_c: Some(14.0), ..Overrides::default() },
        ..DecodeOptions::default()
    };
    match decode(&s.bytes, &opts) {
        Ok(img) => assert!(img.stats.invalid_px > 0, "expected NaN pixels"),
        Err(e) => assert!(e.to_string().starts_with("no valid pixels"), "{e}"),
    }
}

//! Every sample image against its ground-truth JSON.

use switchboard_thermal::{
    DecodeOptions, DjiSource, FrameSource, Radiometry, RelativeMethod, SourceFormat, decode,
};

use crate::common::{f, samples, xy};

/// Tolerance on min/max/mean, °C (the acceptance bar).
const TOL_C: f64 = 0.05;
/// Tolerance on colour-bar limits, which the JSON gives to 0.01 °C.
const TOL_BAR_C: f64 = 0.006;

#[test]
fn flir_samples_match_ground_truth() {
    let mut failures = Vec::new();
    let mut checked = 0;
    println!("{:<32} {:>9} {:>9} {:>9} {:>9}  hottest", "image", "err_min", "err_max", "err_mean", "err_bar");
    for s in samples() {
        let t = &s.truth;
        if t["format"].as_str().unwrap_or("").starts_with("DJI R-JPEG") {
            continue;
        }
        checked += 1;
        let img = match decode(&s.bytes, &DecodeOptions::default()) {
            Ok(img) => img,
            Err(e) => {
                failures.push(format!("{}: decode failed: {e}", s.name));
                continue;
            }
        };
        let mut fail = |msg: String| failures.push(format!("{}: {msg}", s.name));
        if !img.is_absolute() {
            fail(format!("expected absolute radiometry, got {:?}", img.radiometry));
        }
        let expected_format = if s.name.ends_with(".fff") {
            matches!(img.format, SourceFormat::Fff)
        } else {
            matches!(img.format, SourceFormat::FlirJpeg { .. })
        };
        if !expected_format {
            fail(format!("unexpected format {:?}", img.format));
        }
        let raw = img.raw.as_ref().expect("raw frame");
        let (w, h) =
            (t["raw"]["width"].as_u64().unwrap() as usize, t["raw"]["height"].as_u64().unwrap() as usize);
        if (raw.width, raw.height) != (w, h) {
            fail(format!("raw size {}x{} != {w}x{h}", raw.width, raw.height));
        }
        let (rmin, rmax) = raw.min_max().unwrap();
        let rmean = raw.data.iter().map(|&v| f64::from(v)).sum::<f64>() / raw.data.len() as f64;
        if f64::from(rmin) != f(&t["raw"]["min"])
            || f64::from(rmax) != f(&t["raw"]["max"])
            || (rmean - f(&t["raw"]["mean"])).abs() > 0.001
        {
            fail(format!("raw min/max/mean {rmin}/{rmax}/{rmean:.3} differ from {}", t["raw"]));
        }
        let tc = &t["temperature_c"];
        let errs = [
            (img.stats.min - f(&tc["min"])).abs(),
            (img.stats.max - f(&tc["max"])).abs(),
            (img.stats.mean - f(&tc["mean"])).abs(),
        ];
        for (name, e) in ["min", "max", "mean"].iter().zip(errs) {
            if e.is_nan() || e > TOL_C {
                fail(format!("{name} off by {e:.4} °C"));
            }
        }
        if img.stats.hottest_xy != xy(&tc["hottest_xy"]) {
            fail(format!("hottest at {:?}, truth {:?}", img.stats.hottest_xy, xy(&tc["hottest_xy"])));
        }
        if img.stats.coldest_xy != xy(&tc["coldest_xy"]) {
            fail(format!("coldest at {:?}, truth {:?}", img.stats.coldest_xy, xy(&tc["coldest_xy"])));
        }
        if img.stats.hottest_count as u64 != tc["hottest_pixel_count_at_max"].as_u64().unwrap() {
            fail(format!("{} pixels at max", img.stats.hottest_count));
        }
        if img.stats.invalid_px != 0 {
            fail(format!("{} NaN pixels", img.stats.invalid_px));
        }
        let model = img.model().expect("absolute model");
        if (model.tau - f(&t["atmospheric_transmission_tau"])).abs() > 1e-6 {
            fail(format!("tau {} != {}", model.tau, t["atmospheric_transmission_tau"]));
        }
        let cam = img.camera.as_ref().expect("camera info");
        let p = &t["params"];
        for (name, ours) in [
            ("Emissivity", cam.conditions.emissivity),
            ("ObjectDistance", cam.conditions.distance_m),
            ("PlanckR1", cam.planck.r1),
            ("PlanckB", cam.planck.b),
            ("PlanckF", cam.planck.f),
            ("PlanckO", cam.planck.o),
            ("PlanckR2", cam.planck.r2),
            ("RelativeHumidity", cam.conditions.relative_humidity),
            ("AtmosphericTransX", cam.transmission.x),
            ("IRWindowTransmission", cam.ir_window_transmission),
            ("RawValueMedian", f64::from(cam.raw_value_median.unwrap_or(0))),
            ("RawValueRange", f64::from(cam.raw_value_range.unwrap_or(0))),
        ] {
            if (ours - f(&p[name])).abs() > 1e-6 * f(&p[name]).abs().max(1.0) {
                fail(format!("{name} {ours} != {}", p[name]));
            }
        }
        for (name, ours) in [
            ("ReflectedApparentTemperature", cam.conditions.reflected_c),
            ("AtmosphericTemperature", cam.conditions.atmospheric_c),
            ("IRWindowTemperature", cam.ir_window_c),
        ] {
            if (ours - f(&p[name])).abs() > 1e-4 {
                fail(format!("{name} {ours} != {}", p[name]));
            }
        }
        let mut bar_err = f64::NAN;
        if let Some(bar) = t["display_colour_bar_c"].as_array() {
            match img.colour_bar_c() {
                Some((lo, hi)) => {
                    bar_err = (lo - f(&bar[0])).abs().max((hi - f(&bar[1])).abs());
                    if bar_err.is_nan() || bar_err > TOL_BAR_C {
                        fail(format!("colour bar {lo:.3}..{hi:.3} vs {bar:?}"));
                    }
                }
                None => fail("no colour bar".into()),
            }
        }
        // The JSON's model may come from EXIF when CameraInfo leaves it blank (XT-R).
        if let Some(model_name) =
            t["camera_model"].as_str().filter(|m| !cam.camera_model.is_empty() && cam.camera_model != *m)
        {
            fail(format!("camera model {:?} != {model_name:?}", cam.camera_model));
        }
        println!(
            "{:<32} {:>9.5} {:>9.5} {:>9.5} {:>9.5}  {:?}",
            s.name, errs[0], errs[1], errs[2], bar_err, img.stats.hottest_xy
        );
    }
    assert!(checked >= 9, "only {checked} FLIR samples found");
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn dji_sample_is_detected_and_analysed_relatively() {
    let mut seen = 0;
    for s in samples() {
        let t = &s.truth;
        if !t["format"].as_str().unwrap_or("").starts_with("DJI R-JPEG") {
            continue;
        }
        seen += 1;
        let (dw, dh) = (
            t["display_image"]["width"].as_u64().unwrap() as usize,
            t["display_image"]["height"].as_u64().unwrap() as usize,
        );
        let tc = &t["temperature_c"];

        // Default: sensor counts, rescaled; exact extremes.
        let img = decode(&s.bytes, &DecodeOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        assert_eq!(img.format, SourceFormat::DjiRjpeg);
        assert!(!img.is_absolute());
        assert!(img.colour_bar_c().is_none());
        match &img.radiometry {
            Radiometry::Relative { method, frame_source, reason, .. } => {
                assert_eq!(*method, RelativeMethod::RawCounts);
                assert_eq!(*frame_source, FrameSource::RawSensor);
                assert!(reason.contains("DJI"), "{reason}");
            }
            other => panic!("{}: expected relative, got {other:?}", s.name),
        }
        assert_eq!((img.frame.width, img.frame.height), (dw, dh));
        assert_eq!((img.stats.min, img.stats.max), (0.0, 1.0));
        assert_eq!(img.stats.hottest_xy, xy(&tc["hottest_xy"]), "{}", s.name);
        assert_eq!(img.stats.coldest_xy, xy(&tc["coldest_xy"]), "{}", s.name);
        assert_eq!(img.stats.hottest_count as u64, tc["hottest_pixel_count_at_max"].as_u64().unwrap());
        let dji = img.dji.as_ref().expect("dji info");
        let params = dji.params.expect("APP4 params");
        let mp = &t["measurement_params"];
        assert!((params.distance_m - f(&mp["distance"])).abs() < 1e-4);
        assert!((params.emissivity - f(&mp["emissivity"])).abs() < 1e-4);
        assert!((params.relative_humidity * 100.0 - f(&mp["humidity"])).abs() < 1e-3);
        assert!((params.reflected_c - f(&mp["reflection"])).abs() < 1e-4);
        assert!((params.ambient_c - f(&mp["ambient_temp"])).abs() < 1e-4);

        // Visible image: palette inversion at the JPEG's resolution.
        let opts = DecodeOptions { dji_source: DjiSource::VisibleImage, ..DecodeOptions::default() };
        let vis = decode(&s.bytes, &opts).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        assert_eq!(vis.format, SourceFormat::DjiRjpeg);
        match &vis.radiometry {
            Radiometry::Relative { method, frame_source, palette, .. } => {
                assert_eq!(*method, RelativeMethod::PaletteInversion);
                assert_eq!(*frame_source, FrameSource::VisibleImage);
                assert!(palette.is_some());
            }
            other => panic!("{}: expected relative, got {other:?}", s.name),
        }
        assert_eq!((vis.frame.width, vis.frame.height), (dw, dh));
        let inv = vis.inversion.as_ref().expect("inversion summary");
        println!(
            "{}: palette {:?}, coverage {:.3}, hottest {:?} (truth {:?}), value at truth hottest {:?}",
            s.name,
            inv.fits.first().map(|f| &f.name),
            inv.coverage,
            vis.stats.hottest_xy,
            xy(&tc["hottest_xy"]),
            vis.value_at(xy(&tc["hottest_xy"]).0, xy(&tc["hottest_xy"]).1)
        );
    }
    assert_eq!(seen, 1, "expected exactly one DJI sample");
}

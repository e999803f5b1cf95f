//! SEQ files: concatenated FFF frames, with the frame picked by the caller.

use switchboard_thermal::{DecodeOptions, Error, SourceFormat, decode};

use crate::common::sample;

#[test]
fn concatenated_fff_frames_decode_per_index() {
    let s = sample("flirpy_");
    let single = decode(&s.bytes, &DecodeOptions::default()).unwrap();
    assert_eq!(single.format, SourceFormat::Fff);

    let mut seq = s.bytes.clone();
    seq.extend_from_slice(&s.bytes);
    seq.extend_from_slice(&s.bytes);
    for frame in 0..3 {
        let img = decode(&seq, &DecodeOptions { frame_index: frame, ..DecodeOptions::default() }).unwrap();
        assert_eq!(img.format, SourceFormat::Seq { frame, frames: 3 });
        assert_eq!(img.stats, single.stats);
    }
    let err = decode(&seq, &DecodeOptions { frame_index: 3, ..DecodeOptions::default() }).unwrap_err();
    assert!(matches!(err, Error::FrameIndex { requested: 3, available: 3 }), "{err}");
    assert_eq!(err.to_string(), "SEQ frame 3 requested but the file holds 3 frame(s)");
}

#[test]
fn frame_index_on_a_single_image_is_rejected() {
    let s = sample("tp_FLIR_E40");
    let err = decode(&s.bytes, &DecodeOptions { frame_index: 1, ..DecodeOptions::default() }).unwrap_err();
    assert!(matches!(err, Error::FrameIndex { requested: 1, available: 1 }), "{err}");
}

//! Truncated and corrupted inputs must give `Err` or `Ok`, never a panic, and errors must say where.

use std::panic::{AssertUnwindSafe, catch_unwind};

use switchboard_thermal::{DecodeOptions, DjiSource, Error, decode};

use crate::common::{sample, samples};

/// A small deterministic generator (no external crates needed).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % below.max(1)
    }
}

/// Offsets of interest: the first 4 KiB, the boundaries of the first and last few JPEG segments
/// before start-of-scan, and a deterministic spread over the first `limit` bytes.
fn interesting_offsets(bytes: &[u8], rng: &mut Lcg, spread: usize, limit: usize) -> Vec<usize> {
    let mut out: Vec<usize> = (0..4096.min(bytes.len())).step_by(257).collect();
    let mut segments = Vec::new();
    let mut pos = 2;
    while bytes.starts_with(&[0xFF, 0xD8]) && pos + 4 <= bytes.len() && bytes[pos] == 0xFF {
        let marker = bytes[pos + 1];
        let len = usize::from(u16::from_be_bytes([bytes[pos + 2], bytes[pos + 3]]));
        segments.push((pos, len));
        if marker == 0xDA {
            break;
        }
        pos += 2 + len;
    }
    let n = segments.len();
    for (i, &(pos, len)) in segments.iter().enumerate() {
        if i < 4 || i + 3 >= n {
            out.extend([pos, pos + 3, pos + 12, pos + 2 + len - 1]);
        }
    }
    out.extend((0..spread).map(|_| rng.next(limit.min(bytes.len()))));
    out.retain(|&o| o < bytes.len());
    out.sort_unstable();
    out.dedup();
    out
}

/// End of the metadata (start of the entropy-coded scan) of a JPEG; the whole length otherwise.
fn metadata_end(bytes: &[u8]) -> usize {
    let mut pos = 2;
    while bytes.starts_with(&[0xFF, 0xD8]) && pos + 4 <= bytes.len() && bytes[pos] == 0xFF {
        let len = usize::from(u16::from_be_bytes([bytes[pos + 2], bytes[pos + 3]]));
        if bytes[pos + 1] == 0xDA {
            return pos + 2 + len;
        }
        pos += 2 + len;
    }
    bytes.len()
}

fn must_not_panic(name: &str, what: &str, bytes: &[u8], opts: &DecodeOptions) -> Option<Error> {
    match catch_unwind(AssertUnwindSafe(|| decode(bytes, opts))) {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(e),
        Err(_) => panic!("{name}: decode panicked on {what}"),
    }
}

#[test]
fn truncated_and_corrupted_samples_never_panic() {
    let mut rng = Lcg(0x5eed);
    let mut errors = 0usize;
    let mut runs = 0usize;
    for s in samples() {
        let opts = DecodeOptions::default();
        let meta = metadata_end(&s.bytes);
        for cut in interesting_offsets(&s.bytes, &mut rng, 10, s.bytes.len()) {
            runs += 1;
            let err = must_not_panic(&s.name, &format!("truncation at {cut}"), &s.bytes[..cut], &opts);
            if let Some(e) = err {
                errors += 1;
                let msg = e.to_string();
                assert!(!msg.is_empty() && msg.chars().next().is_some_and(|c| !c.is_uppercase()), "{msg}");
            }
        }
        let mut corrupt = s.bytes.clone();
        // Flips in the scan data of a JPEG change nothing we read, so aim at the metadata.
        for at in interesting_offsets(&s.bytes, &mut rng, 10, meta) {
            runs += 1;
            corrupt[at] ^= 0xA5;
            if must_not_panic(&s.name, &format!("byte flip at {at}"), &corrupt, &opts).is_some() {
                errors += 1;
            }
            corrupt[at] = s.bytes[at];
        }
        // Runs of 0xFF (bogus lengths and counts) in the header area.
        for at in (0..s.bytes.len().min(2048)).step_by(521) {
            runs += 1;
            let end = (at + 8).min(corrupt.len());
            corrupt[at..end].fill(0xFF);
            let _ = must_not_panic(&s.name, &format!("0xff run at {at}"), &corrupt, &opts);
            corrupt[at..end].copy_from_slice(&s.bytes[at..end]);
        }
    }
    assert!(runs > 300, "only {runs} corrupted inputs tried");
    assert!(
        errors > 100,
        "only {errors} errors from {runs} corrupted inputs: corruption is not being detected"
    );
}

#[test]
fn dji_visible_path_survives_corruption() {
    let s = sample("dji_");
    let opts = DecodeOptions { dji_source: DjiSource::VisibleImage, ..DecodeOptions::default() };
    let mut rng = Lcg(7);
    for _ in 0..6 {
        let cut = rng.next(s.bytes.len());
        must_not_panic(&s.name, &format!("truncation at {cut}"), &s.bytes[..cut], &opts);
    }
}

#[test]
fn truncated_flir_chunk_error_names_chunk_offset_and_sizes() {
    let s = sample("tp_FLIR_T640");
    // Find the fourth FLIR APP1 segment and cut the file 1200 bytes into it.
    let mut pos = 2;
    let mut seen = 0;
    let (offset, claimed) = loop {
        let len = usize::from(u16::from_be_bytes([s.bytes[pos + 2], s.bytes[pos + 3]]));
        if s.bytes[pos + 1] == 0xE1 && s.bytes[pos + 4..].starts_with(b"FLIR\0") {
            if seen == 3 {
                break (pos, len);
            }
            seen += 1;
        }
        pos += 2 + len;
    };
    let cut = &s.bytes[..offset + 2 + 1200];
    let msg = decode(cut, &DecodeOptions::default()).unwrap_err().to_string();
    assert_eq!(
        msg,
        format!(
            "truncated FLIR APP1 chunk 3 of 23 at byte {offset}: segment claims {claimed} bytes, 1200 remain"
        )
    );
}

#[test]
fn errors_name_the_record_for_a_cut_bare_fff() {
    let s = sample("flirpy_");
    let msg = decode(&s.bytes[..s.bytes.len() / 2], &DecodeOptions::default()).unwrap_err().to_string();
    assert!(msg.contains("record") || msg.contains("truncated"), "{msg}");
    assert!(msg.contains("byte") || msg.contains("offset"), "{msg}");
    let msg = decode(&s.bytes[..40], &DecodeOptions::default()).unwrap_err().to_string();
    assert_eq!(msg, "truncated FFF header at byte 0: needs 64 bytes, 40 remain");
}

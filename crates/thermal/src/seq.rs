//! FLIR SEQ sequences: FFF blobs laid end to end, one per frame.
//!
//! Each frame ends where its last record ends; the next frame starts at the next FFF magic. A bare
//! `.fff` file is simply a sequence of one frame.

use crate::error::Result;
use crate::fff::{Fff, has_magic};

/// Byte ranges `[start, end)` of each FFF frame in `bytes`, in file order.
///
/// The first frame must parse (its error is returned); scanning stops quietly at the first later
/// position that does not hold a parseable frame, so trailing padding or a cut-off last frame does
/// not hide the frames before it.
pub fn frame_ranges(bytes: &[u8]) -> Result<Vec<(usize, usize)>> {
    let first = Fff::parse(bytes, 0)?;
    let mut ranges = vec![(0, first.frame_end().min(bytes.len()))];
    let mut pos = first.frame_end();
    while pos < bytes.len() {
        let Some(rest) = bytes.get(pos..) else { break };
        let Some(skip) = find_magic(rest) else { break };
        let start = pos + skip;
        let Some(blob) = bytes.get(start..) else { break };
        let Ok(fff) = Fff::parse(blob, start) else { break };
        let end = start.saturating_add(fff.frame_end());
        if end <= start || end > bytes.len() {
            break;
        }
        ranges.push((start, end));
        pos = end;
    }
    Ok(ranges)
}

fn find_magic(bytes: &[u8]) -> Option<usize> {
    (0..bytes.len().saturating_sub(3)).find(|&i| bytes.get(i..).is_some_and(has_magic))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytes::ByteOrder;
    use crate::fff::tests::build_fff;

    #[test]
    fn splits_concatenated_frames_and_skips_padding() {
        let a = build_fff(ByteOrder::Little, &[(0x01, 2, vec![2, 0, 1, 0])]);
        let b = build_fff(ByteOrder::Big, &[(0x20, 0, vec![0, 2])]);
        let mut seq = a.clone();
        seq.extend([0u8; 7]);
        seq.extend(&b);
        seq.extend(b"FFF\0garbage");
        let ranges = frame_ranges(&seq).unwrap();
        assert_eq!(ranges, vec![(0, a.len()), (a.len() + 7, a.len() + 7 + b.len())]);
    }
}

//! The crate's single error type.
//!
//! Every reader reports *what* is wrong and *where*: the byte offset (counted from the start of the
//! input unless a message says otherwise), the JPEG segment or FLIR chunk index, or the FFF record
//! type. Corrupt input always ends here, never in a panic.

/// Everything that can go wrong while reading or analysing a thermal image.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A fixed-size structure runs past the end of the data that should hold it.
    #[error("truncated {what} at byte {offset}: needs {needed} bytes, {available} remain")]
    Truncated {
        /// The structure being read, e.g. "FFF header" or "CameraInfo record (type 0x20)".
        what: &'static str,
        /// Absolute byte offset where the structure starts.
        offset: usize,
        /// Bytes the structure needs.
        needed: usize,
        /// Bytes actually left from `offset`.
        available: usize,
    },

    /// The bytes match none of the supported formats.
    #[error("unrecognised image format: first bytes are {magic:02x?} (expected JPEG, PNG, FFF or SEQ)")]
    UnknownFormat {
        /// Up to the first eight bytes of the input.
        magic: Vec<u8>,
    },

    /// A JPEG marker segment is malformed or runs past the end of the file.
    #[error("bad JPEG segment {index} (marker 0x{marker:02x}) at byte {offset}: {reason}")]
    JpegSegment {
        /// 0-based index of the segment in file order.
        index: usize,
        /// The marker byte after 0xFF.
        marker: u8,
        /// Absolute offset of the 0xFF byte.
        offset: usize,
        /// What is wrong with it.
        reason: String,
    },

    /// A FLIR APP1 chunk claims more bytes than the file holds.
    #[error(
        "truncated FLIR APP1 chunk {index} of {total} at byte {offset}: segment claims {claimed} bytes, {remaining} remain"
    )]
    FlirChunkTruncated {
        /// 0-based chunk index (from the chunk header when it could be read, else the count seen so far).
        index: usize,
        /// Total chunk count announced by the chunk header (last index + 1), 0 if unknown.
        total: usize,
        /// Absolute offset of the segment's 0xFF byte.
        offset: usize,
        /// Length claimed by the segment header.
        claimed: usize,
        /// Bytes left in the file after the marker.
        remaining: usize,
    },

    /// The FLIR APP1 chunks do not form a complete, consistent set.
    #[error("inconsistent FLIR APP1 chunks: {reason}")]
    FlirChunks {
        /// Which chunk is missing, duplicated or disagrees, with its byte offset.
        reason: String,
    },

    /// The FFF blob does not start with a valid header.
    #[error("bad FFF header at byte {offset}: {reason}")]
    FffHeader {
        /// Absolute offset of the FFF blob (for JPEGs: offset within the joined FLIR chunks).
        offset: usize,
        /// What is wrong.
        reason: String,
    },

    /// A record listed in the FFF directory points outside the blob or is malformed.
    #[error("bad FFF record {index} ({record}) at blob offset {offset}: {reason}")]
    FffRecord {
        /// 0-based directory entry index.
        index: usize,
        /// The record type, e.g. "RawData (type 0x01)".
        record: String,
        /// The record's offset inside the FFF blob.
        offset: usize,
        /// What is wrong.
        reason: String,
    },

    /// The FFF directory has no record of a required type.
    #[error("FFF directory at blob offset {directory_offset} has no {record} record")]
    MissingRecord {
        /// The missing record type, e.g. "RawData (type 0x01)".
        record: &'static str,
        /// Offset of the directory inside the FFF blob.
        directory_offset: usize,
    },

    /// An embedded PNG (raw thermal data or a plain false-colour image) could not be decoded.
    #[error("bad PNG in {context}: {message}")]
    Png {
        /// Where the PNG was found, e.g. "RawData record (type 0x01) at blob offset 1234".
        context: String,
        /// The decoder's message.
        message: String,
    },

    /// A visible JPEG image could not be decoded.
    #[error("bad JPEG image data in {context}: {message}")]
    JpegImage {
        /// Which image, e.g. "DJI R-JPEG visible image".
        context: String,
        /// The decoder's message.
        message: String,
    },

    /// Image dimensions are zero, too large, or disagree with the data.
    #[error("bad image size in {context}: {width}x{height} ({reason})")]
    Dimensions {
        /// Where the size came from.
        context: String,
        /// Declared width.
        width: usize,
        /// Declared height.
        height: usize,
        /// Why it is rejected.
        reason: String,
    },

    /// The requested SEQ frame does not exist.
    #[error("SEQ frame {requested} requested but the file holds {available} frame(s)")]
    FrameIndex {
        /// Requested 0-based frame index.
        requested: usize,
        /// Frames actually present.
        available: usize,
    },

    /// A DJI R-JPEG thermal segment set is incomplete or malformed.
    #[error("bad DJI R-JPEG thermal data: {reason}")]
    Dji {
        /// What is wrong, with segment indices and byte offsets.
        reason: String,
    },

    /// A false-colour image could not be mapped onto any known palette.
    #[error("cannot invert false-colour image ({width}x{height}): {reason}")]
    FalseColour {
        /// Image width.
        width: usize,
        /// Image height.
        height: usize,
        /// Why, e.g. "only 3% of pixels lie near a palette curve".
        reason: String,
    },

    /// An option or override is out of its valid range.
    #[error("invalid option `{field}`: {reason}")]
    InvalidOption {
        /// The option's field name.
        field: &'static str,
        /// What is wrong and the valid range.
        reason: String,
    },

    /// A region passed to an analysis helper lies outside the frame or is empty.
    #[error(
        "region x={x} y={y} w={width} h={height} is outside the {frame_width}x{frame_height} frame or empty"
    )]
    Region {
        /// Left column.
        x: usize,
        /// Top row.
        y: usize,
        /// Width in pixels.
        width: usize,
        /// Height in pixels.
        height: usize,
        /// Frame width.
        frame_width: usize,
        /// Frame height.
        frame_height: usize,
    },

    /// The frame holds no finite value to analyse.
    #[error("no valid pixels in the {width}x{height} frame (all NaN or masked)")]
    NoValidPixels {
        /// Frame width.
        width: usize,
        /// Frame height.
        height: usize,
    },
}

/// Shorthand for results in this crate.
pub type Result<T> = std::result::Result<T, Error>;

//! Truncated and corrupted inputs.

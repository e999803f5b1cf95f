//! SEQ handling.

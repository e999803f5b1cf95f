//! Relative analysis of display images.

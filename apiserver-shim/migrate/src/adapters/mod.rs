//! Vendor files → the neutral bundle.

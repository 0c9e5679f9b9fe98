//! Digests and attestation.

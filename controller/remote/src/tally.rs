//! What a stream of bytes sent to or read from a server amounted to: its length and SHA-256,
//! counted as it passes (an artifact is never held whole).

use sha2::{Digest, Sha256};

/// Counts and hashes bytes as they pass.
#[derive(Default)]
pub struct Tally {
    hasher: Sha256,
    bytes: i64,
}

impl Tally {
    pub fn add(&mut self, data: &[u8]) {
        self.hasher.update(data);
        self.bytes += i64::try_from(data.len()).unwrap_or(i64::MAX);
    }

    /// Bytes counted so far.
    pub fn bytes(&self) -> i64 {
        self.bytes
    }

    /// The bytes counted and their SHA-256 (lowercase hex).
    pub fn finish(self) -> (i64, String) {
        (self.bytes, hex::encode(self.hasher.finalize()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_add_up_to_the_whole() {
        let mut tally = Tally::default();
        tally.add(b"hello ");
        tally.add(b"world");
        assert_eq!(tally.bytes(), 11);
        let whole = hex::encode(Sha256::digest(b"hello world"));
        assert_eq!(tally.finish(), (11, whole));
    }
}

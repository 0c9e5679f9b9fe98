//! How a backup is sealed before it leaves the controller for its target: AES-256-GCM under
//! the organization's backup key, in frames of at most [`FRAME_PLAINTEXT`] bytes, so a dump of
//! any size streams through in bounded memory and a corrupted, cut or reordered artifact is
//! refused on the way back. No object at a target starts with `PGDMP`, `REDIS` or a tar header.
//!
//! Layout: `BERTHBK1` and an 8-byte random salt; then frames, each a 4-byte big-endian length
//! and its ciphertext (tag included). Frame `i`'s nonce is the salt and `i`; its associated
//! data says whether it is the last, so an artifact cut after any frame does not open.

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

/// What every sealed artifact starts with.
pub const MAGIC: &[u8; 8] = b"BERTHBK1";
/// Plaintext bytes per frame.
pub const FRAME_PLAINTEXT: usize = 64 * 1024;
/// Bytes of a key.
pub const KEY_LEN: usize = 32;
const SALT_LEN: usize = 8;
const HEADER_LEN: usize = MAGIC.len() + SALT_LEN;
const TAG_LEN: usize = 16;

/// Why an artifact does not open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("the backup key must be {KEY_LEN} bytes")]
    BadKey,
    #[error("the artifact is not a Berth backup (its header is wrong)")]
    NotABackup,
    #[error("frame {0} of the artifact does not open: corrupted, or sealed with another key")]
    Corrupted(u32),
    #[error("the artifact ends before its last frame: it was cut short")]
    Truncated,
    #[error("the artifact goes on after its last frame")]
    TrailingBytes,
}

fn key(bytes: &[u8]) -> Result<LessSafeKey, SealError> {
    let unbound = UnboundKey::new(&AES_256_GCM, bytes).map_err(|_| SealError::BadKey)?;
    Ok(LessSafeKey::new(unbound))
}

fn nonce(salt: &[u8; SALT_LEN], index: u32) -> Nonce {
    let mut bytes = [0u8; NONCE_LEN];
    bytes[..SALT_LEN].copy_from_slice(salt);
    bytes[SALT_LEN..].copy_from_slice(&index.to_be_bytes());
    Nonce::assume_unique_for_key(bytes)
}

/// A fresh 32-byte key.
pub fn new_key() -> [u8; KEY_LEN] {
    let mut key = [0u8; KEY_LEN];
    SystemRandom::new()
        .fill(&mut key)
        .expect("the system's random source");
    key
}

/// Seals a stream: [`Sealer::push`] what comes, [`Sealer::finish`] at its end; each returns
/// the bytes to send on.
pub struct Sealer {
    key: LessSafeKey,
    salt: [u8; SALT_LEN],
    index: u32,
    pending: Vec<u8>,
    header_sent: bool,
}

impl Sealer {
    pub fn new(key_bytes: &[u8]) -> Result<Self, SealError> {
        let mut salt = [0u8; SALT_LEN];
        SystemRandom::new()
            .fill(&mut salt)
            .map_err(|_| SealError::BadKey)?;
        Ok(Self {
            key: key(key_bytes)?,
            salt,
            index: 0,
            pending: Vec::with_capacity(FRAME_PLAINTEXT),
            header_sent: false,
        })
    }

    /// Takes `data`; returns the header and every frame now full.
    pub fn push(&mut self, mut data: &[u8]) -> Vec<u8> {
        let mut out = self.header();
        while !data.is_empty() {
            let room = FRAME_PLAINTEXT - self.pending.len();
            let (now, later) = data.split_at(room.min(data.len()));
            self.pending.extend_from_slice(now);
            data = later;
            if self.pending.len() == FRAME_PLAINTEXT {
                out.extend(self.frame(false));
            }
        }
        out
    }

    /// The last frame (whatever is pending, possibly nothing).
    pub fn finish(mut self) -> Vec<u8> {
        let mut out = self.header();
        out.extend(self.frame(true));
        out
    }

    fn header(&mut self) -> Vec<u8> {
        if self.header_sent {
            return Vec::new();
        }
        self.header_sent = true;
        [MAGIC.as_slice(), &self.salt].concat()
    }

    fn frame(&mut self, last: bool) -> Vec<u8> {
        let mut sealed = std::mem::take(&mut self.pending);
        let aad = Aad::from([u8::from(last)]);
        self.key
            .seal_in_place_append_tag(nonce(&self.salt, self.index), aad, &mut sealed)
            .expect("a frame is far below AES-GCM's limit");
        self.index += 1;
        let mut out = (sealed.len() as u32).to_be_bytes().to_vec();
        out.extend(sealed);
        out
    }
}

/// Opens a sealed stream as it arrives: [`Opener::push`] returns the plaintext opened so far,
/// [`Opener::finish`] says whether the artifact was whole.
pub struct Opener {
    key: LessSafeKey,
    salt: Option<[u8; SALT_LEN]>,
    index: u32,
    buffer: Vec<u8>,
    ended: bool,
}

impl Opener {
    pub fn new(key_bytes: &[u8]) -> Result<Self, SealError> {
        Ok(Self {
            key: key(key_bytes)?,
            salt: None,
            index: 0,
            buffer: Vec::new(),
            ended: false,
        })
    }

    pub fn push(&mut self, data: &[u8]) -> Result<Vec<u8>, SealError> {
        self.buffer.extend_from_slice(data);
        let mut plain = Vec::new();
        if self.salt.is_none() {
            if self.buffer.len() < HEADER_LEN {
                return Ok(plain);
            }
            if &self.buffer[..MAGIC.len()] != MAGIC {
                return Err(SealError::NotABackup);
            }
            let mut salt = [0u8; SALT_LEN];
            salt.copy_from_slice(&self.buffer[MAGIC.len()..HEADER_LEN]);
            self.salt = Some(salt);
            self.buffer.drain(..HEADER_LEN);
        }
        while let Some(frame) = self.next_frame()? {
            plain.extend(frame);
        }
        Ok(plain)
    }

    /// The next whole frame opened, if one is buffered.
    fn next_frame(&mut self) -> Result<Option<Vec<u8>>, SealError> {
        if self.buffer.len() < 4 {
            return Ok(None);
        }
        if self.ended {
            return Err(SealError::TrailingBytes);
        }
        let length = u32::from_be_bytes(self.buffer[..4].try_into().expect("4 bytes")) as usize;
        if !(TAG_LEN..=FRAME_PLAINTEXT + TAG_LEN).contains(&length) {
            return Err(SealError::Corrupted(self.index));
        }
        if self.buffer.len() < 4 + length {
            return Ok(None);
        }
        let mut sealed: Vec<u8> = self.buffer.drain(..4 + length).skip(4).collect();
        let salt = self.salt.expect("read with the header");
        // The last frame says so in its associated data; try as a middle frame first.
        for last in [false, true] {
            let mut attempt = sealed.clone();
            let aad = Aad::from([u8::from(last)]);
            if let Ok(plain) = self
                .key
                .open_in_place(nonce(&salt, self.index), aad, &mut attempt)
            {
                let plain = plain.to_vec();
                self.index += 1;
                self.ended = last;
                return Ok(Some(plain));
            }
        }
        sealed.clear();
        Err(SealError::Corrupted(self.index))
    }

    pub fn finish(self) -> Result<(), SealError> {
        match (self.ended, self.buffer.is_empty()) {
            (true, true) => Ok(()),
            (true, false) => Err(SealError::TrailingBytes),
            (false, _) if self.salt.is_none() && !self.buffer.is_empty() => {
                Err(SealError::NotABackup)
            }
            (false, _) => Err(SealError::Truncated),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seal(key: &[u8], plain: &[u8], pieces: usize) -> Vec<u8> {
        let mut sealer = Sealer::new(key).unwrap();
        let mut out = Vec::new();
        for chunk in plain.chunks(pieces.max(1)) {
            out.extend(sealer.push(chunk));
        }
        out.extend(sealer.finish());
        out
    }

    fn open(key: &[u8], sealed: &[u8], pieces: usize) -> Result<Vec<u8>, SealError> {
        let mut opener = Opener::new(key)?;
        let mut out = Vec::new();
        for chunk in sealed.chunks(pieces.max(1)) {
            out.extend(opener.push(chunk)?);
        }
        opener.finish()?;
        Ok(out)
    }

    fn dump(len: usize) -> Vec<u8> {
        let mut plain = b"PGDMP".to_vec();
        plain.extend((0..len).map(|i| (i * 7 % 251) as u8));
        plain
    }

    #[test]
    fn what_is_sealed_opens_to_the_same_bytes_whatever_the_pieces() {
        let key = new_key();
        for (len, pieces) in [
            (0, 1),
            (10, 3),
            (FRAME_PLAINTEXT * 3 + 17, 32_768),
            (FRAME_PLAINTEXT, 1000),
        ] {
            let plain = dump(len);
            let sealed = seal(&key, &plain, pieces);
            assert!(sealed.starts_with(MAGIC));
            assert!(
                !sealed.windows(5).any(|w| w == b"PGDMP"),
                "no plaintext header"
            );
            assert_eq!(open(&key, &sealed, 4093).unwrap(), plain);
        }
    }

    #[test]
    fn a_changed_cut_or_extended_artifact_or_another_key_is_refused() {
        let key = new_key();
        let sealed = seal(&key, &dump(FRAME_PLAINTEXT * 2), 50_000);
        let mut flipped = sealed.clone();
        flipped[HEADER_LEN + 4 + FRAME_PLAINTEXT + 100] ^= 1;
        assert_eq!(open(&key, &flipped, 9000), Err(SealError::Corrupted(1)));
        let frame = 4 + FRAME_PLAINTEXT + TAG_LEN;
        let cut = &sealed[..HEADER_LEN + frame];
        assert_eq!(open(&key, cut, 9000), Err(SealError::Truncated));
        let mut longer = sealed.clone();
        longer.extend_from_slice(&sealed[HEADER_LEN..HEADER_LEN + frame]);
        assert_eq!(open(&key, &longer, 9000), Err(SealError::TrailingBytes));
        assert_eq!(
            open(&new_key(), &sealed, 9000),
            Err(SealError::Corrupted(0))
        );
        assert_eq!(
            open(&key, b"PGDMP-plain-dump", 9),
            Err(SealError::NotABackup)
        );
        assert_eq!(Sealer::new(&[0u8; 7]).err(), Some(SealError::BadKey));
    }
}

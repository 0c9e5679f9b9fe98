//! Platform migration (spec §4.9) without I/O. [`adapters`] turn the files people export from
//! Railway, Heroku or Docker Compose into the neutral bundle; [`plan`] turns a bundle into a
//! deterministic plan of ordinary Berth operations with its digest. The shim and the CLI both
//! use them, so a plan made offline and one made over REST are the same.

#![forbid(unsafe_code)]

pub mod adapters;
pub mod plan;

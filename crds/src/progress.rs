//! Deployment progress events (spec §6): wire types defined once in `berth-vocabulary`, shared
//! by the controller, which records them, the REST shim and the CLI.

pub use berth_vocabulary::progress::*;

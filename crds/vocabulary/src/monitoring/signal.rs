//! The groups of `resourceMetrics` that queries and threshold rules name.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The groups of `resourceMetrics`: what a query's `signals` and a rule's `signal` name
/// (Appaloft's closed set; the spec shows `cpu`).
#[derive(
    Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash,
)]
#[serde(rename_all = "kebab-case")]
pub enum Signal {
    Cpu,
    Memory,
    Disk,
    Inode,
    Docker,
    Network,
}

impl Signal {
    pub const ALL: [Signal; 6] = [
        Self::Cpu,
        Self::Memory,
        Self::Disk,
        Self::Inode,
        Self::Docker,
        Self::Network,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::Memory => "memory",
            Self::Disk => "disk",
            Self::Inode => "inode",
            Self::Docker => "docker",
            Self::Network => "network",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == value)
    }
}

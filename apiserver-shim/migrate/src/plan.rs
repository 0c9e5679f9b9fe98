//! Bundle → plan.

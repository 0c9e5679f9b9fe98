//! REST shim: not built yet (issue 3).

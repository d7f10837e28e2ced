//! The SQLite backend (the embedded default). Not yet written.

//! The SQLite backend: the conformance suite, and what only SQLite promises.

conformance_tests!(corral_store::testing::sqlite);

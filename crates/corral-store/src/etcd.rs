//! The etcd backend. Not yet written.

//! The cluster controller.

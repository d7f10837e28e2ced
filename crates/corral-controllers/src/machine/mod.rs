//! The machine controller.

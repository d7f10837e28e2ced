//! The machine deployment controller.

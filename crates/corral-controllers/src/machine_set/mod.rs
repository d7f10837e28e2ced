//! The machine set controller.

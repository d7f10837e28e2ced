//! The machine set controller.

pub mod deletion_order;

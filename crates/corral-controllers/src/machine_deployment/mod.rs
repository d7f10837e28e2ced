//! The machine deployment controller.

pub mod int_or_percent;
pub mod rollout_planner;

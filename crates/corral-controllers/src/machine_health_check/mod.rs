//! The machine health check controller.

pub mod remediation_allowed;
pub mod target_health;

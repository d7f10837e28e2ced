//! The machine health check controller.

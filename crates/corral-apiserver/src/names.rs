//! Syntax checks for Kubernetes names, label keys and label values: apimachinery's
//! `util/validation`, shared with the kinds' admission rules (`corral_admission::names`).

pub use corral_admission::names::*;

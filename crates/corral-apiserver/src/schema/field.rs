//! Field errors: apimachinery's `field` package, shared with the kinds' admission rules
//! (`corral_admission::field`), and their place in a `Status`.

pub use corral_admission::field::*;

use crate::error::Cause;

/// The cause of an `Invalid` status for one field error.
pub fn to_cause(error: &FieldError) -> Cause {
    Cause {
        reason: error.type_.reason().to_string(),
        message: error.body(),
        field: error.field.clone(),
    }
}

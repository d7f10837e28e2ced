//! Label and field selectors: apimachinery's `labels` and `fields`, shared with the kinds'
//! admission rules (`corral_admission::selector`).

pub use corral_admission::selector::*;

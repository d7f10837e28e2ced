//! Names and label values controllers make up (the MachineSet's, the MachineDeployment's, the
//! KubeadmControlPlane's): Machine names from `spec.machineNaming.template` (upstream
//! `internal/topology/names/names.go`, `MachineSetMachineNameGenerator`), the five random
//! characters they end in (apimachinery's `util/rand.String`), label values that must fit a
//! label (upstream `util/labels/format.MustFormatValue`) and the hash of a Machine template.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

pub use corral_api::labels::{base64url_no_pad, fnv32a, format_label_value, is_valid_label_value};

pub use corral_api::naming::RANDOM_LENGTH;

/// apimachinery's alphabet for random names: no vowels, so that no word is spelled by
/// accident, and no characters easily confused (0, 1, 3).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The template upstream uses when `spec.machineNaming.template` is unset.
pub const DEFAULT_MACHINE_NAMING_TEMPLATE: &str = "{{ .machineSet.name }}-{{ .random }}";

/// Five random characters from apimachinery's alphabet.
///
/// The randomness comes from the standard library's per-process hash keys mixed with a
/// counter: names need to be unlikely to collide, not unpredictable.
pub fn random_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let mut bits = hasher.finish();
    let mut suffix = String::with_capacity(RANDOM_LENGTH);
    for _ in 0..RANDOM_LENGTH {
        suffix.push(ALPHABET[(bits % ALPHABET.len() as u64) as usize] as char);
        bits /= ALPHABET.len() as u64;
    }
    suffix
}

/// Why a Machine name could not be made from a naming template.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NamingError {
    /// The template does not use `{{ .random }}`, so names would repeat.
    #[error("cannot generate Machine name: {{{{ .random }}}} is missing in machineNaming.template")]
    MissingRandom,
    /// The template uses something other than `.cluster.name`, `.machineSet.name` and
    /// `.random`, or is not a template.
    #[error("cannot generate Machine name from template {template:?}: {reason}")]
    Render {
        /// The template.
        template: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// A Machine name from `template` (upstream's default when `None`): `{{ .cluster.name }}`,
/// `{{ .machineSet.name }}` and `{{ .random }}` are replaced, and a name longer than 63
/// characters is cut to 58 and given five more random characters, as upstream does.
pub fn machine_name(
    template: Option<&str>,
    cluster: &str,
    machine_set: &str,
    random: &mut dyn FnMut() -> String,
) -> Result<String, NamingError> {
    let template = template.unwrap_or(DEFAULT_MACHINE_NAMING_TEMPLATE);
    if !template.contains("{{ .random }}") {
        return Err(NamingError::MissingRandom);
    }
    // One random value per name, however often `.random` appears, as Go's template data holds
    // one.
    let random_value = random();
    corral_api::naming::render_name(
        template,
        &[
            (".cluster.name", cluster),
            (".machineSet.name", machine_set),
            (".random", &random_value),
        ],
        random,
    )
    .map_err(|reason| NamingError::Render {
        template: template.to_owned(),
        reason,
    })
}

#[cfg(test)]
mod tests;

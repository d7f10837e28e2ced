//! Field managers (`metadata.managedFields[].manager`) whose entries Corral reads back, so the
//! controller that writes under the name and the caches that keep its entries agree on it.

/// The MachineSet controller's, for the labels and annotations it propagates to its Machines
/// (upstream `machineSetManagerName`). The Machine cache keeps this manager's entries when it
/// drops every other's, so that the MachineSet can tell what it propagated.
pub const MACHINE_SET: &str = "capi-machineset";

//! corral-cli against a real Corral API server in-process (`corral-testenv`): leader election,
//! init, generate, describe and the day-two verbs.

mod admission;
mod init;
mod leader;
mod mover;

//! cuzk's engine: everything but transport and command line.
pub mod backend;
pub mod synth;

//! The daemon's library half: its configuration file (and who may connect) and the conversion
//! of wire requests,
//! shared by the `cuzk-daemon` binary, the fuzz targets (fuzz/) and the tests.
pub mod allow;
pub mod config;
pub mod wire;

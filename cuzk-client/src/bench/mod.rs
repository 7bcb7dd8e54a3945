//! `cuzk-client bench`: proof sweeps at several concurrency levels.
//!
//! [`stats`] turns what the sweep saw into the report; the driver that submits proofs over
//! gRPC lives beside it once the client's RPC layer exists.

pub mod stats;

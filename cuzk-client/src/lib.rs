//! cuzk's client library: gRPC helpers, a daemon spawner, the bench sweep and the
//! waterfall. No engine logic: proving happens in the daemon.
pub mod bench;
pub mod demo;
pub mod filecoin_cmds;
pub mod load;
pub mod rpc;
pub mod spawn;
pub mod waterfall;

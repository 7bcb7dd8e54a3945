//! The `cuzk.v1` wire types and gRPC client/server stubs.
#![allow(clippy::all)]

pub mod v1 {
    tonic::include_proto!("cuzk.v1");
}

pub use v1::*;

/// The encoded `FileDescriptorSet` of cuzk/v1/proving.proto (and its imports), for gRPC
/// reflection: tools such as grpcurl discover the API from the daemon itself.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/cuzk_v1_descriptor.bin"));

/// The largest message either side accepts: Curio sends up to 256 MiB (a 32 GiB PoRep C1
/// output is about 50 MB of JSON), and a little headroom for the envelope.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024 + 1024 * 1024;

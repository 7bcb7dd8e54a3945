// Compile the proto with protox (pure Rust), so no system protoc is needed.
use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "cuzk/v1/proving.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["."])?;
    // The encoded descriptor set is what gRPC reflection serves (see FILE_DESCRIPTOR_SET).
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("cuzk_v1_descriptor.bin"),
        descriptors.encode_to_vec(),
    )?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}

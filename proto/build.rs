// Compile the proto with protox (pure Rust), so no system protoc is needed.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "cuzk/v1/proving.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["."])?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}

//! The gRPC services the daemon serves on every listener: cuzk.v1 behind the bearer-token
//! check, and, open to all, gRPC health (load balancers probe it without credentials) and
//! reflection (it describes only the public wire contract, so grpcurl works unconfigured).

use cuzk_core::Engine;
use cuzk_proto::v1::proving_engine_server::ProvingEngineServer;
use cuzk_proto::{FILE_DESCRIPTOR_SET, MAX_MESSAGE_BYTES};
use tonic::service::interceptor::InterceptedService;
use tonic::service::Routes;

use crate::auth::BearerAuth;
use crate::service::ProvingService;

/// `health`: routes already holding the health service (its type is opaque to name here).
pub fn grpc_routes(engine: &Engine, auth: BearerAuth, health: Routes) -> anyhow::Result<Routes> {
    let proving = ProvingEngineServer::new(ProvingService::new(engine.clone()))
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let proving = InterceptedService::new(proving, move |req| auth.check(req));
    // Both reflection versions: grpcurl and older tools still ask v1alpha.
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;
    Ok(health
        .add_service(proving)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha))
}

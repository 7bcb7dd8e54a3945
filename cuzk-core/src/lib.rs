//! cuzk's engine: everything but transport and command line.
//!
//! The way of a job: `job` (what it is) -> `engine` (admission; `jobs` the table and request
//! ids) -> `gate` (priority order, each partition's room reserved before synthesis: `budget`,
//! its bytes from `footprint`) -> `pipeline` (its stages in order: `synth` circuit -> a/b/c + assignments; `gpu` device
//! and `prove` H polynomial and MSMs through a `backend`; `finalize` assemble, self-verify)
//! -> results in `record`, awaited through `engine`. A job whose parameter set is not
//! resident waits for it in `loading`, off the synthesis workers.
pub mod atomic_file;
pub mod backend;
pub mod between;
pub mod budget;
pub mod config;
pub mod engine;
pub mod finalize;
pub mod footprint;
pub mod gate;
pub mod gpu;
pub mod host_release;
pub mod hugevec;
pub mod job;
pub mod jobs;
pub mod journal;
pub mod key;
pub mod kinds;
pub mod limbs;
pub mod loading;
pub mod matrices;
pub mod matrix_synth;
pub mod metrics;
pub mod native_witness;
pub mod packed;
pub mod paramgen;
pub mod pinned_pool;
pub mod pipeline;
pub mod pools;
pub mod prove;
pub mod queue;
pub mod record;
pub mod rss;
pub mod set_loads;
pub mod shared;
pub mod srs;
pub mod synth;
pub mod test_hooks;
pub mod timeline;
pub mod witness;
pub mod work;

pub use config::EngineConfig;
pub use engine::Engine;
pub use job::{Error, JobId, JobState, Priority, ProofKind, Result, SubmitRequest};

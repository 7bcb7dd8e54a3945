//! The fuzz targets' bodies, one function per parser of client data. Kept out of the
//! `fuzz_targets/` binaries so that `cuzk-daemon/tests/fuzz_corpus.rs` replays the corpus
//! through exactly these functions on stable Rust (it includes `targets.rs` by path).
pub mod targets;

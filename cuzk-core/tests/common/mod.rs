//! Shared by the 2 KiB Filecoin tests (filecoin, synth_matrices, cuda_filecoin): where their
//! parameters live and the cache that loads them. Each test binary uses what it needs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cuzk_core::kinds::params;
use cuzk_core::srs::SrsCache;
use cuzk_core::ProofKind;

pub const SIZE: u64 = 2048;

pub const KINDS: [ProofKind; 4] = [
    ProofKind::PorepSealCommit,
    ProofKind::WinningPost,
    ProofKind::WindowPostPartition,
    ProofKind::SnapDealsUpdate,
];

/// A fixed directory outside the clone (`$CUZK_TEST_PARAMS`, else `$CUZK_PARAM_CACHE`, else
/// `~/.cache/cuzk/params`), so that a second run skips generation.
pub fn param_dir() -> PathBuf {
    if let Some(d) =
        std::env::var_os("CUZK_TEST_PARAMS").or_else(|| std::env::var_os("CUZK_PARAM_CACHE"))
    {
        return PathBuf::from(d);
    }
    match std::env::var_os("HOME") {
        Some(home) => Path::new(&home).join(".cache/cuzk/params"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/cuzk-test-params"),
    }
}

/// The 2 KiB parameters of every kind, generated (or found) once per process, and the cache
/// that loads them.
pub fn srs() -> &'static SrsCache {
    static SRS: OnceLock<SrsCache> = OnceLock::new();
    SRS.get_or_init(|| {
        let dir = param_dir();
        params::generate(SIZE, &KINDS, &dir, &mut |p| {
            eprintln!("params: {} {:?} {}", p.srs_id, p.state, p.path.display())
        })
        .expect("generating 2 KiB parameters");
        SrsCache::new(dir)
    })
}

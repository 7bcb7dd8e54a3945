//! Files written whole or not at all: written under a temporary name, then renamed into
//! place, so that a reader never sees half a file.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A name to write `path` under before renaming it into place, unique to this writer: the
/// process id and a count, since two threads of one process may write the same file at once
/// (two engines in one test binary generating the same parameter set did, and the second
/// rename found its file gone).
pub fn temporary_path(path: &Path) -> PathBuf {
    static WRITERS: AtomicU64 = AtomicU64::new(0);
    let n = WRITERS.fetch_add(1, Ordering::Relaxed);
    path.with_extension(format!("tmp.{}.{n}", std::process::id()))
}

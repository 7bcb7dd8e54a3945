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

/// The writer's process id in a name [`temporary_path`] made (`<stem>.tmp.<pid>.<n>`).
fn writer_pid(name: &str) -> Option<u32> {
    let mut parts = name.rsplit('.');
    let n = parts.next()?;
    let pid = parts.next()?;
    (parts.next()? == "tmp" && n.parse::<u64>().is_ok())
        .then(|| pid.parse().ok())
        .flatten()
}

/// Removes the temporary files in `dir` whose writer is gone: a process killed while it
/// wrote a parameter set (a 2^27 set is ~47 GB) never reaches the rename or its cleanup, and
/// its file would hold the disk for good. A writer counts as gone when it is not this process
/// and /proc has no entry for it; where /proc cannot be read nothing is removed. Returns the
/// files removed and their bytes.
pub fn remove_orphans(dir: &Path) -> (Vec<PathBuf>, u64) {
    let mut removed = (Vec::new(), 0);
    if !Path::new("/proc/self").exists() {
        return removed;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return removed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(writer_pid) else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let bytes = entry.metadata().map_or(0, |m| m.len());
        if std::fs::remove_file(entry.path()).is_ok() {
            removed.0.push(entry.path());
            removed.1 += bytes;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_writers_temporary_is_removed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let set = dir.path().join("cuzk-synthetic-2^10-v1.params");
        let mine = temporary_path(&set);
        // Above Linux's pid_max (at most 2^22): no live process has it.
        let dead = dir.path().join("cuzk-synthetic-2^10-v1.tmp.999999999.3");
        let other = dir.path().join("notes.tmp.1.txt");
        for (p, bytes) in [(&set, 5), (&mine, 7), (&dead, 11), (&other, 13)] {
            std::fs::write(p, vec![0u8; bytes]).unwrap();
        }
        let (gone, bytes) = remove_orphans(dir.path());
        assert_eq!(gone, vec![dead.clone()]);
        assert_eq!(bytes, 11);
        assert!(set.exists() && mine.exists() && other.exists() && !dead.exists());
        assert_eq!(writer_pid("a.tmp.42.0"), Some(42));
        assert_eq!(writer_pid("a.tmp.x.0"), None);
        assert_eq!(writer_pid("a.params"), None);
    }
}

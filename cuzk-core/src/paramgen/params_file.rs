//! Writing a parameter file as it is made: bellperson's layout (`Parameters::write`: the
//! verifying key, then h, l, a, b_g1, b_g2, each a big-endian u32 length and uncompressed
//! points), written by a thread of its own so that the disk works while the next chunk of
//! points is computed. The file has a temporary name until it is whole and synced, then is
//! renamed into place: a reader never sees half a file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use blstrs::{G1Affine, G2Affine};
use rayon::prelude::*;

use crate::job::{Error, Result};

/// Buffers queued for the writer beyond the one it writes: enough to cover a slow write of
/// one chunk while the next is made, little enough to bound memory (a G2 chunk of 2^22
/// points is 800 MB).
const QUEUED: usize = 1;

/// A point as the file holds it.
pub trait Uncompressed: Copy + Send + Sync {
    const BYTES: usize;
    fn put(&self, out: &mut [u8]);
}

impl Uncompressed for G1Affine {
    const BYTES: usize = 96;
    fn put(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_uncompressed());
    }
}

impl Uncompressed for G2Affine {
    const BYTES: usize = 192;
    fn put(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_uncompressed());
    }
}

/// The points' uncompressed encodings, one after the other (in parallel).
pub fn encode<P: Uncompressed>(points: &[P]) -> Vec<u8> {
    let mut bytes = vec![0u8; points.len() * P::BYTES];
    bytes
        .par_chunks_mut(P::BYTES)
        .zip(points.par_iter())
        .for_each(|(out, p)| p.put(out));
    bytes
}

/// What the writer thread did.
struct Written {
    file: File,
    bytes: u64,
    busy: Duration,
}

/// A parameter file being written.
pub struct ParamsFile {
    path: PathBuf,
    tmp: PathBuf,
    tx: Option<SyncSender<Vec<u8>>>,
    writer: Option<JoinHandle<std::io::Result<Written>>>,
}

impl ParamsFile {
    pub fn create(path: &Path) -> Result<Self> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::Params(format!(
                "creating {} for {}: {e}",
                dir.display(),
                path.display()
            ))
        })?;
        let tmp = crate::atomic_file::temporary_path(path);
        let file = File::create(&tmp)
            .map_err(|e| Error::Params(format!("creating {}: {e}", tmp.display())))?;
        let (tx, rx) = sync_channel::<Vec<u8>>(QUEUED);
        let writer = std::thread::Builder::new()
            .name("paramgen-write".into())
            .spawn(move || {
                let mut w = BufWriter::with_capacity(1 << 22, file);
                let (mut bytes, mut busy) = (0u64, Duration::ZERO);
                for buf in rx {
                    let t = Instant::now();
                    w.write_all(&buf)?;
                    busy += t.elapsed();
                    bytes += buf.len() as u64;
                }
                let t = Instant::now();
                let file = w.into_inner().map_err(|e| e.into_error())?;
                file.sync_all()?;
                busy += t.elapsed();
                Ok(Written { file, bytes, busy })
            })
            .map_err(|e| {
                Error::Params(format!("writing {}: no writer thread: {e}", tmp.display()))
            })?;
        Ok(ParamsFile {
            path: path.to_path_buf(),
            tmp,
            tx: Some(tx),
            writer: Some(writer),
        })
    }

    /// Queue bytes for the file (blocks while the writer is behind).
    pub fn send(&mut self, bytes: Vec<u8>) -> Result<()> {
        let tx = self.tx.as_ref().expect("sending after finish");
        if tx.send(bytes).is_err() {
            // The writer stopped on an error: collect it.
            return Err(self.join().err().unwrap_or_else(|| {
                Error::Params(format!("writing {}: writer stopped", self.tmp.display()))
            }));
        }
        Ok(())
    }

    /// A query's length as the file gives it.
    pub fn send_len(&mut self, query: &str, len: usize) -> Result<()> {
        let len = u32::try_from(len).map_err(|_| {
            Error::Params(format!(
                "writing {}: the {query} query has {len} points, more than the format's u32",
                self.path.display()
            ))
        })?;
        self.send(len.to_be_bytes().to_vec())
    }

    fn join(&mut self) -> Result<Written> {
        self.tx = None;
        let writer = self.writer.take().expect("joined twice");
        let io = |e: std::io::Error| Error::Params(format!("writing {}: {e}", self.tmp.display()));
        match writer.join() {
            Ok(r) => r.map_err(io),
            Err(_) => Err(Error::Params(format!(
                "writing {}: the writer thread panicked",
                self.tmp.display()
            ))),
        }
    }

    /// Wait for the writer, sync, and rename into place. Returns the bytes written and the
    /// time the writer spent writing and syncing.
    pub fn finish(mut self) -> Result<(u64, Duration)> {
        let written = self.join()?;
        let t = Instant::now();
        std::fs::rename(&self.tmp, &self.path).map_err(|e| {
            Error::Params(format!(
                "renaming {} to {}: {e}",
                self.tmp.display(),
                self.path.display()
            ))
        })?;
        // The rename is durable once the directory is synced (best effort: not every
        // filesystem lets a directory be opened for it).
        if let Some(dir) = self.path.parent() {
            if let Ok(d) = File::open(if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            }) {
                let _ = d.sync_all();
            }
        }
        drop(written.file);
        Ok((written.bytes, written.busy + t.elapsed()))
    }
}

impl Drop for ParamsFile {
    /// An unfinished file (an error on the way) is removed.
    fn drop(&mut self) {
        if self.writer.is_some() {
            let _ = self.join();
        }
        if self.tmp.exists() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::prime::PrimeCurveAffine;

    #[test]
    fn a_finished_file_is_renamed_and_an_abandoned_one_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.params");
        let mut f = ParamsFile::create(&path).unwrap();
        f.send_len("h", 1).unwrap();
        f.send(encode(&[G1Affine::generator()])).unwrap();
        let (bytes, _) = f.finish().unwrap();
        assert_eq!(bytes, 100);
        assert_eq!(std::fs::read(&path).unwrap().len(), 100);

        let other = dir.path().join("y.params");
        let mut f = ParamsFile::create(&other).unwrap();
        f.send(encode(&[G2Affine::generator()])).unwrap();
        drop(f);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "only the finished file remains");
    }
}

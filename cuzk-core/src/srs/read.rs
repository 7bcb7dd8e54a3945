//! Reading a parameter file in bellperson's format, in parallel.
//!
//! The format (bellperson's `Parameters::write`): the verifying key (alpha_g1, beta_g1,
//! beta_g2, gamma_g2, delta_g1, delta_g2, then a big-endian u32 count and the ic points);
//! then h, l, a, b_g1 and b_g2, each a big-endian u32 count and that many uncompressed
//! points (96 bytes in G1, 192 in G2). Every section's offset follows from the counts before
//! it, so the sections' points can be parsed by all cores at once.
//!
//! Why: bellperson's reader parses one point after another, ~230 MB/s; a 32 GiB PoRep set
//! (~47 GB) took minutes. Parsing a point (big-endian bytes to Montgomery form, the curve
//! equation) is pure CPU work, so it scales with the cores.
//!
//! Points are read with positioned reads (`pread`) rather than through a memory map: a file
//! truncated under a map would kill the daemon with SIGBUS, where a read returns an error.
//! The trust is that of bellperson's `read(.., false)`: points are checked to be on the
//! curve and not at infinity, not to be in the subgroup (our own files, or files checked by
//! their digest); the verifying key is checked fully, as bellperson does.

use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;

const G1_BYTES: usize = 96;
const G2_BYTES: usize = 192;
/// alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2: the key before its ic count.
const VK_FIXED_BYTES: usize = 3 * G1_BYTES + 3 * G2_BYTES;
/// Points parsed per task: ~0.75 MiB (G1) to 1.5 MiB (G2) read at once, enough to keep a
/// read's cost small against the parsing, small enough to spread over every core.
const POINTS_PER_TASK: usize = 8192;

/// Why a parameter file could not be read; every case names the file, and the section
/// where it went wrong.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("parameter file {path} cannot be opened: {source}")]
    Open { path: PathBuf, source: io::Error },
    #[error("parameter file {path}: reading {section}: {source}")]
    Io {
        path: PathBuf,
        section: &'static str,
        source: io::Error,
    },
    #[error(
        "parameter file {path} is truncated in {section}: it needs {need} bytes from offset \
         {offset}, the file has {have} bytes"
    )]
    Truncated {
        path: PathBuf,
        section: &'static str,
        offset: u64,
        need: u64,
        have: u64,
    },
    #[error("parameter file {path} has {extra} bytes after its last section (b_g2)")]
    Trailing { path: PathBuf, extra: u64 },
    #[error("parameter file {path}: {section} point {index} (offset {offset}) is {reason}")]
    BadPoint {
        path: PathBuf,
        section: &'static str,
        index: usize,
        offset: u64,
        reason: &'static str,
    },
    #[error("parameter file {path}: verifying key: {source}")]
    VerifyingKey { path: PathBuf, source: io::Error },
}

/// A point type of the file: its size and how it is parsed.
trait FilePoint: Copy + Send + Sync {
    const BYTES: usize;
    /// None where the bytes are no point of the curve, or the point at infinity (which no
    /// proving key holds; bellperson refuses it too).
    fn parse(bytes: &[u8]) -> Option<Self>;
}

impl FilePoint for G1Affine {
    const BYTES: usize = G1_BYTES;
    fn parse(bytes: &[u8]) -> Option<Self> {
        let repr: &[u8; G1_BYTES] = bytes.try_into().ok()?;
        let p: Option<G1Affine> = G1Affine::from_uncompressed_unchecked(repr).into();
        p.filter(|p| !bool::from(p.is_identity()))
    }
}

impl FilePoint for G2Affine {
    const BYTES: usize = G2_BYTES;
    fn parse(bytes: &[u8]) -> Option<Self> {
        let repr: &[u8; G2_BYTES] = bytes.try_into().ok()?;
        let p: Option<G2Affine> = G2Affine::from_uncompressed_unchecked(repr).into();
        p.filter(|p| !bool::from(p.is_identity()))
    }
}

/// The file being read: its handle, name (for errors) and length.
struct ParamFile {
    file: File,
    path: PathBuf,
    len: u64,
}

impl ParamFile {
    fn truncated(&self, section: &'static str, offset: u64, need: u64) -> ReadError {
        ReadError::Truncated {
            path: self.path.clone(),
            section,
            offset,
            need,
            have: self.len,
        }
    }

    /// `buf.len()` bytes at `offset`, or an error naming `section`.
    fn read_at(&self, section: &'static str, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let need = buf.len() as u64;
        if offset.checked_add(need).is_none_or(|end| end > self.len) {
            return Err(self.truncated(section, offset, need));
        }
        self.file
            .read_exact_at(buf, offset)
            .map_err(|source| match source.kind() {
                // Shorter than when we looked: truncated while we read.
                io::ErrorKind::UnexpectedEof => self.truncated(section, offset, need),
                _ => ReadError::Io {
                    path: self.path.clone(),
                    section,
                    source,
                },
            })
    }

    fn count_at(&self, section: &'static str, offset: u64) -> Result<usize, ReadError> {
        let mut b = [0u8; 4];
        self.read_at(section, offset, &mut b)?;
        Ok(u32::from_be_bytes(b) as usize)
    }

    /// The section at `offset` (its count, then its points), parsed by every core; returns
    /// the points and the offset after the section.
    fn section<P: FilePoint>(
        &self,
        section: &'static str,
        offset: u64,
    ) -> Result<(Vec<P>, u64), ReadError> {
        let count = self.count_at(section, offset)?;
        let start = offset + 4;
        let bytes = (count as u64) * P::BYTES as u64;
        if start + bytes > self.len {
            return Err(self.truncated(section, start, bytes));
        }
        let mut points: Vec<P> = Vec::with_capacity(count);
        // Filled in place: at 47 GB, a zero-filled vector first (or per-task vectors joined
        // after) would cost a pass over the memory on one core, seconds.
        points.spare_capacity_mut()[..count]
            .par_chunks_mut(POINTS_PER_TASK)
            .enumerate()
            .try_for_each_init(Vec::new, |buf: &mut Vec<u8>, (task, out)| {
                let first = task * POINTS_PER_TASK;
                buf.resize(out.len() * P::BYTES, 0);
                let at = start + (first * P::BYTES) as u64;
                self.read_at(section, at, buf)?;
                for (i, (slot, raw)) in out.iter_mut().zip(buf.chunks_exact(P::BYTES)).enumerate() {
                    let offset = at + (i * P::BYTES) as u64;
                    let point = P::parse(raw)
                        .ok_or_else(|| self.bad_point(section, raw, first + i, offset))?;
                    *slot = MaybeUninit::new(point);
                }
                Ok::<_, ReadError>(())
            })?;
        // SAFETY: every one of the `count` slots was written above (the chunks cover them
        // all, and an error returns before this line); the points are plain data.
        unsafe { points.set_len(count) };
        Ok((points, start + bytes))
    }

    fn bad_point(&self, section: &'static str, raw: &[u8], index: usize, offset: u64) -> ReadError {
        // The infinity flag (bit 6 of the first byte) set: a valid encoding, not a key point.
        let reason = if raw[0] & 0x40 != 0 {
            "the point at infinity"
        } else {
            "not a point of the curve"
        };
        ReadError::BadPoint {
            path: self.path.clone(),
            section,
            index,
            offset,
            reason,
        }
    }

    /// The verifying key at the start of the file, parsed by bellperson (a few points, all
    /// checked); returns it and the offset after it.
    fn verifying_key(&self) -> Result<(VerifyingKey<Bls12>, u64), ReadError> {
        let ic = self.count_at("vk", VK_FIXED_BYTES as u64)?;
        let mut raw = vec![0u8; VK_FIXED_BYTES + 4 + ic * G1_BYTES];
        self.read_at("vk", 0, &mut raw)?;
        let vk = VerifyingKey::read(&raw[..]).map_err(|source| ReadError::VerifyingKey {
            path: self.path.clone(),
            source,
        })?;
        Ok((vk, raw.len() as u64))
    }
}

/// Read the parameter file at `path`: the same `Parameters` as bellperson's
/// `Parameters::read(file, false)`, parsed on every core of the current rayon pool. A file
/// that ends early, runs on after its last section, or holds a bad point is refused.
pub fn read_parameter_file(path: &Path) -> Result<Parameters<Bls12>, ReadError> {
    let file = File::open(path).map_err(|source| ReadError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let len = file
        .metadata()
        .map_err(|source| ReadError::Open {
            path: path.to_path_buf(),
            source,
        })?
        .len();
    let f = ParamFile {
        file,
        path: path.to_path_buf(),
        len,
    };
    let (vk, at) = f.verifying_key()?;
    let (h, at) = f.section::<G1Affine>("h", at)?;
    let (l, at) = f.section::<G1Affine>("l", at)?;
    let (a, at) = f.section::<G1Affine>("a", at)?;
    let (b_g1, at) = f.section::<G1Affine>("b_g1", at)?;
    let (b_g2, at) = f.section::<G2Affine>("b_g2", at)?;
    if at != len {
        return Err(ReadError::Trailing {
            path: f.path,
            extra: len - at,
        });
    }
    Ok(Parameters {
        vk,
        h: Arc::new(h),
        l: Arc::new(l),
        a: Arc::new(a),
        b_g1: Arc::new(b_g1),
        b_g2: Arc::new(b_g2),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    /// bellperson's own reader, the reference.
    fn bellperson_read(path: &Path) -> Parameters<Bls12> {
        let file = File::open(path).unwrap();
        Parameters::read(BufReader::new(file), false).unwrap()
    }

    /// The error reading `path` (Parameters is not Debug, so no unwrap_err).
    fn refused(path: &Path) -> ReadError {
        match read_parameter_file(path) {
            Ok(_) => panic!("{} was read", path.display()),
            Err(e) => e,
        }
    }

    /// A small synthetic set (2^6 constraints), written once per test binary.
    fn synthetic_file() -> PathBuf {
        static FILE: std::sync::OnceLock<(tempfile::TempDir, PathBuf)> = std::sync::OnceLock::new();
        FILE.get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("synthetic-2^6.params");
            crate::paramgen::generate_synthetic(
                crate::kinds::SyntheticShape::Uniform,
                6,
                &path,
                crate::paramgen::Engine::Cpu,
            )
            .unwrap();
            (dir, path)
        })
        .1
        .clone()
    }

    /// A copy of the synthetic file, changed by `edit`.
    fn edited(edit: impl FnOnce(&mut Vec<u8>)) -> (tempfile::TempDir, PathBuf) {
        let mut bytes = std::fs::read(synthetic_file()).unwrap();
        edit(&mut bytes);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("edited.params");
        std::fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    /// Where section `n` (0 = h ... 4 = b_g2) starts: its count's offset.
    fn section_offset(bytes: &[u8], n: usize) -> usize {
        let count = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let mut at = VK_FIXED_BYTES;
        at += 4 + count(at) * G1_BYTES;
        for s in 0..n {
            let size = if s == 4 { G2_BYTES } else { G1_BYTES };
            at += 4 + count(at) * size;
        }
        at
    }

    #[test]
    fn equals_bellperson_on_a_synthetic_set() {
        let path = synthetic_file();
        let ours = read_parameter_file(&path).unwrap();
        assert!(!ours.h.is_empty() && !ours.b_g2.is_empty());
        assert!(ours == bellperson_read(&path));
    }

    #[test]
    fn equals_bellperson_on_a_2k_filecoin_file() {
        let dir = match std::env::var_os("HOME") {
            Some(home) => Path::new(&home).join(".cache/cuzk/params"),
            None => return eprintln!("skipped: no HOME, so no ~/.cache/cuzk/params"),
        };
        // The smallest v28 file there (a 2 KiB PoSt set, ~11 MB), for a quick test.
        let smallest = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                name.starts_with("v28-") && name.ends_with(".params")
            })
            .min_by_key(|p| p.metadata().map_or(u64::MAX, |m| m.len()));
        let Some(path) = smallest else {
            return eprintln!(
                "skipped: no Filecoin parameter file in {} (the 2 KiB tests generate them)",
                dir.display()
            );
        };
        let ours = read_parameter_file(&path).unwrap();
        assert!(ours == bellperson_read(&path), "{}", path.display());
    }

    #[test]
    fn truncated_files_name_the_section() {
        let bytes = std::fs::read(synthetic_file()).unwrap();
        let in_l = section_offset(&bytes, 1) + 4 + G1_BYTES + 10;
        let in_b_g2 = bytes.len() - 1;
        for (cut, section) in [(100, "vk"), (in_l, "l"), (in_b_g2, "b_g2")] {
            let (_d, path) = edited(|b| b.truncate(cut));
            let e = refused(&path);
            match &e {
                ReadError::Truncated { section: s, .. } => assert_eq!(*s, section, "{e}"),
                other => panic!("cut at {cut}: {other}"),
            }
            let msg = e.to_string();
            assert!(
                msg.contains("edited.params") && msg.contains(section),
                "{msg}"
            );
        }
        // A count larger than the file holds.
        let at = section_offset(&bytes, 2);
        let (_d, path) = edited(|b| b[at..at + 4].copy_from_slice(&u32::MAX.to_be_bytes()));
        let e = refused(&path);
        assert!(
            matches!(e, ReadError::Truncated { section: "a", .. }),
            "{e}"
        );
    }

    #[test]
    fn over_long_and_corrupt_files_are_refused() {
        let (_d, path) = edited(|b| b.extend_from_slice(&[0; 7]));
        let e = refused(&path);
        assert!(matches!(e, ReadError::Trailing { extra: 7, .. }), "{e}");

        let bytes = std::fs::read(synthetic_file()).unwrap();
        // The third point of b_g1, its y coordinate changed: off the curve.
        let at = section_offset(&bytes, 3) + 4 + 2 * G1_BYTES + G1_BYTES - 1;
        let (_d, path) = edited(|b| b[at] ^= 1);
        let e = refused(&path);
        match &e {
            ReadError::BadPoint {
                section,
                index,
                reason,
                ..
            } => assert_eq!(
                (*section, *index, *reason),
                ("b_g1", 2, "not a point of the curve")
            ),
            other => panic!("{other}"),
        }
        assert!(e.to_string().contains("b_g1 point 2"), "{e}");

        // The first point of h at infinity (the flag bit, coordinates zero).
        let at = section_offset(&bytes, 0) + 4;
        let (_d, path) = edited(|b| {
            b[at..at + G1_BYTES].fill(0);
            b[at] = 0x40;
        });
        let e = refused(&path);
        assert!(
            matches!(
                e,
                ReadError::BadPoint {
                    section: "h",
                    index: 0,
                    reason: "the point at infinity",
                    ..
                }
            ),
            "{e}"
        );

        // The verifying key is checked fully, as bellperson checks it.
        let (_d, path) = edited(|b| b[G1_BYTES - 1] ^= 1);
        let e = refused(&path);
        assert!(matches!(e, ReadError::VerifyingKey { .. }), "{e}");

        let missing = Path::new("/nonexistent/cuzk.params");
        let e = refused(missing);
        assert!(e.to_string().contains("/nonexistent/cuzk.params"), "{e}");
    }
}

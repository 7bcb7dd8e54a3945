//! Synthesis through recorded constraint matrices: the witness alone, then a, b, c as
//! sparse matrix-vector products (`crate::matrices`), with today's full synthesis as the
//! fallback whenever the fast path cannot vouch for its result. The result is always what
//! `synth::synthesize_partition` gives, field for field.

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bellpepper_core::{Circuit, SynthesisError};
use blstrs::Scalar;
use rayon::prelude::*;

use crate::matrices::{evaluate, record_matrices, Matrices, MatrixCache, RecordError, Recorded};
use crate::synth::{synthesize_partition, Synthesized};
use crate::witness::{synthesize_witness, WitnessCs};

/// Which synthesis the proof kinds run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SynthesisPath {
    /// Every partition through `synthesize_partition` (linear combinations built and
    /// evaluated in the enforce closures), as bellperson does.
    Full,
    /// The witness alone (`crate::witness`), then a, b, c from the matrices recorded once per
    /// circuit shape (`crate::matrices`). Same a, b, c, assignments and densities.
    Matrices,
}

impl std::str::FromStr for SynthesisPath {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "full" => Ok(SynthesisPath::Full),
            "matrices" => Ok(SynthesisPath::Matrices),
            other => Err(format!("unknown synthesis path {other:?} (matrices|full)")),
        }
    }
}

/// How one synthesis worker synthesizes (the engine's configuration, per worker thread, so
/// that engines with different settings can share a process).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SynthesisOptions {
    /// None: the process's path (`synthesis_path`).
    pub path: Option<SynthesisPath>,
    /// Leave a, b, c of a witness-only synthesis to the device step
    /// (`Synthesized::deferred`): set where the partition is proven on a backend that
    /// evaluates the matrices itself (`Backend::evaluates_matrices`).
    pub defer_abc: bool,
}

thread_local! {
    static OPTIONS: Cell<Option<SynthesisOptions>> = const { Cell::new(None) };
}

/// Run `f` (a partition's synthesis) with `options` on this thread; restored afterwards,
/// also when `f` panics.
pub fn with_options<T>(options: SynthesisOptions, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<SynthesisOptions>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OPTIONS.with(|o| o.set(self.0));
        }
    }
    let _restore = Restore(OPTIONS.with(|o| o.replace(Some(options))));
    f()
}

fn options() -> SynthesisOptions {
    OPTIONS.with(Cell::get).unwrap_or_default()
}

/// Whether this thread's synthesis leaves a, b, c to the device step (circuits with a
/// synthesis of their own, like the PoRep-shaped kind, ask this).
pub fn defers_abc() -> bool {
    options().defer_abc
}

const PATH_UNSET: u8 = 0;
const PATH_FULL: u8 = 1;
const PATH_MATRICES: u8 = 2;
static PATH: AtomicU8 = AtomicU8::new(PATH_UNSET);

/// Partitions the matrices path handed to full synthesis since the process started (other
/// than of shapes too large to record): non-zero means a circuit and its matrices
/// disagreed, or a witness was invalid.
pub fn matrices_fallbacks() -> usize {
    matrix_cache().fallbacks()
}

/// The path in use: this thread's `with_options`, else `set_synthesis_path`'s, else
/// `CUZK_SYNTHESIS` (`full` or `matrices`), else matrices (identical results, tested for
/// every kind; `full` is the way back).
pub fn synthesis_path() -> SynthesisPath {
    if let Some(path) = options().path {
        return path;
    }
    let mut p = PATH.load(Ordering::Relaxed);
    if p == PATH_UNSET {
        p = match std::env::var("CUZK_SYNTHESIS").as_deref() {
            Ok("full") => PATH_FULL,
            _ => PATH_MATRICES,
        };
        PATH.store(p, Ordering::Relaxed);
    }
    if p == PATH_FULL {
        SynthesisPath::Full
    } else {
        SynthesisPath::Matrices
    }
}

pub fn set_synthesis_path(path: SynthesisPath) {
    let p = match path {
        SynthesisPath::Full => PATH_FULL,
        SynthesisPath::Matrices => PATH_MATRICES,
    };
    PATH.store(p, Ordering::Relaxed);
}

/// Where the time of the last matrices-path synthesis on this thread went (the benchmark
/// and the tests read it; a worker's TIMELINE could).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathTimings {
    /// Witness synthesis (with recording, the recording run).
    pub witness: Duration,
    /// a, b, c from the matrices.
    pub evaluate: Duration,
    /// Whether this synthesis recorded the matrices.
    pub recorded: bool,
    /// Witness parts synthesized in parallel (1: the circuit as one).
    pub parts: usize,
}

thread_local! {
    static LAST: Cell<Option<PathTimings>> = const { Cell::new(None) };
}

/// This thread's last matrices-path synthesis, if it did not fall back.
pub fn last_timings() -> Option<PathTimings> {
    LAST.with(Cell::get)
}

/// The process's matrices: in memory, and in `$CUZK_MATRIX_DIR` when set.
pub fn matrix_cache() -> &'static MatrixCache {
    static CACHE: OnceLock<MatrixCache> = OnceLock::new();
    CACHE.get_or_init(|| match std::env::var_os("CUZK_MATRIX_DIR") {
        Some(dir) if !dir.is_empty() => MatrixCache::with_dir(dir),
        _ => MatrixCache::new(),
    })
}

/// Synthesize one partition of circuit shape `key` on the process's path and cache.
/// `build` makes the circuit; it is called again only when the fast path falls back.
pub fn synthesize_shaped<C, E>(
    key: &str,
    build: impl Fn() -> Result<C, E>,
) -> Result<Synthesized, E>
where
    C: Circuit<Scalar>,
    E: From<SynthesisError>,
{
    match synthesis_path() {
        SynthesisPath::Full => Ok(synthesize_partition(build()?)?),
        SynthesisPath::Matrices => synthesize_cached(matrix_cache(), key, build),
    }
}

/// `synthesize_shaped` for a circuit that `synthesize_split` can synthesize in `parts`.
pub fn synthesize_shaped_split<C, E>(
    key: &str,
    build: impl Fn() -> Result<C, E>,
    parts: usize,
    witness_part: impl Fn(usize, WitnessCs) -> PieceResult<E> + Sync,
) -> Result<Synthesized, E>
where
    C: Circuit<Scalar>,
    E: From<SynthesisError> + Send,
{
    match synthesis_path() {
        SynthesisPath::Full => Ok(synthesize_partition(build()?)?),
        SynthesisPath::Matrices => {
            synthesize_split(matrix_cache(), key, build, parts, witness_part)
        }
    }
}

/// The matrices path: witness only when `cache` holds the shape's matrices, a recording run
/// when nobody has them yet, and today's full synthesis whenever the fast path cannot vouch
/// for its result (another worker is recording, the witness does not fit or does not
/// satisfy the matrices), so the outcome is always what `synthesize_partition` gives.
pub fn synthesize_cached<C, E>(
    cache: &MatrixCache,
    key: &str,
    build: impl Fn() -> Result<C, E>,
) -> Result<Synthesized, E>
where
    C: Circuit<Scalar>,
    E: From<SynthesisError>,
{
    LAST.with(|l| l.set(None));
    let t = Instant::now();
    let fast = match cache.lookup(key) {
        Recorded::Ready(m) => {
            let cs = WitnessCs::with_capacity(m.num_inputs, m.num_aux);
            match synthesize_witness(build()?, cs) {
                Ok(w) => from_witness(&m, w, t, false, 1),
                Err(e) => Err(format!("witness synthesis: {e}")),
            }
        }
        Recorded::Record(ticket) => match record_matrices(key, build()?) {
            Ok((m, w)) => from_witness(&ticket.insert(m), w, t, true, 1),
            Err(RecordError::TooLarge) => {
                ticket.unusable();
                Err("too large to record".to_string())
            }
            Err(e) => Err(format!("recording: {e}")),
        },
        Recorded::Unavailable => return Ok(synthesize_partition(build()?)?),
    };
    fast.or_else(|why| fall_back(cache, key, &why, &build))
}

fn fall_back<C, E>(
    cache: &MatrixCache,
    key: &str,
    why: &str,
    build: &impl Fn() -> Result<C, E>,
) -> Result<Synthesized, E>
where
    C: Circuit<Scalar>,
    E: From<SynthesisError>,
{
    cache.count_fallback();
    LAST.with(|l| l.set(None));
    tracing::warn!("{key}: matrices path not used ({why}); synthesizing in full");
    Ok(synthesize_partition(build()?)?)
}

/// The matrices path for a circuit made of a shared prefix followed by independent sections
/// (a PoRep partition: the commitments, then one section per challenge), with the witness
/// synthesized in `parts` pieces in parallel. `witness_part(j, cs)` writes into `cs` the
/// witness of the prefix and the j-th run of sections, in order (a circuit of the same kind
/// holding just those, or a native generator of its witness); each piece's prefix is
/// dropped but the first's. The prefix's length follows from the counts (each piece holds it
/// once, the whole circuit once), every piece's prefix must equal the first's, and the
/// joined witness must satisfy the matrices, else the whole circuit is synthesized as one.
/// Without recorded matrices this records them from `build()`, as `synthesize_cached`.
pub fn synthesize_split<C, E>(
    cache: &MatrixCache,
    key: &str,
    build: impl Fn() -> Result<C, E>,
    parts: usize,
    witness_part: impl Fn(usize, WitnessCs) -> PieceResult<E> + Sync,
) -> Result<Synthesized, E>
where
    C: Circuit<Scalar>,
    E: From<SynthesisError> + Send,
{
    let m = match cache.get(key) {
        Some(m) if parts > 0 => m,
        _ => return synthesize_cached(cache, key, build),
    };
    LAST.with(|l| l.set(None));
    let t = Instant::now();
    let packed = options().defer_abc;
    let pieces: Vec<Result<WitnessCs, SynthesisError>> = (0..parts)
        .into_par_iter()
        .map(|j| {
            // Each piece gets room for the whole assignment: only what it writes is ever
            // touched, and the first piece, which the others join, never reallocates. For a
            // device that unpacks it, the aux is written packed (this thread's option: the
            // pieces run on the pool's).
            let cs = if packed {
                WitnessCs::packed(m.num_inputs, m.num_aux)
            } else {
                WitnessCs::with_capacity(m.num_inputs, m.num_aux)
            };
            witness_part(j, cs)
        })
        .collect::<Result<_, E>>()?;
    let joined = pieces
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("witness synthesis: {e}"))
        .and_then(|p| join_pieces(&m, p));
    match joined.and_then(|w| from_witness(&m, w, t, false, parts)) {
        Ok(s) => Ok(s),
        Err(why) => fall_back(cache, key, &why, &build),
    }
}

/// A piece of a split witness: the outer error is the caller's (building the piece), the
/// inner one synthesis's.
pub type PieceResult<E> = Result<Result<WitnessCs, SynthesisError>, E>;

/// One witness from pieces that each repeat the prefix; see `synthesize_split`.
fn join_pieces(m: &Matrices, mut pieces: Vec<WitnessCs>) -> Result<WitnessCs, String> {
    let k = pieces.len();
    if k == 1 {
        return Ok(pieces.remove(0));
    }
    // Input 0 (the constant one) is in every piece; the circuit's own inputs and the prefix
    // are what the pieces repeat.
    let sum = |f: &dyn Fn(&WitnessCs) -> usize| pieces.iter().map(f).sum::<usize>();
    let prefix = |total_pieces: usize, whole: usize| -> Result<usize, String> {
        let extra = total_pieces
            .checked_sub(whole)
            .filter(|e| e % (k - 1) == 0)
            .ok_or_else(|| format!("pieces hold {total_pieces}, the circuit {whole}"))?;
        Ok(extra / (k - 1))
    };
    let circuit_rows = m.num_constraints() - m.num_inputs;
    let p_in = prefix(sum(&|w| w.input.len() - 1), m.num_inputs - 1)?;
    let p_aux = prefix(sum(&|w| w.aux_len()), m.num_aux)?;
    let p_rows = prefix(sum(&|w| w.constraints), circuit_rows)?;
    let mut pieces = pieces.into_iter();
    let mut whole = pieces.next().expect("at least two pieces");
    whole.input.reserve(m.num_inputs - whole.input.len());
    whole.aux.reserve(m.num_aux - whole.aux.len());
    for w in pieces {
        let (pi, pa) = (1 + p_in, p_aux);
        if w.input.len() < pi
            || w.aux_len() < pa
            || w.input[..pi] != whole.input[..pi]
            || (0..pa).any(|i| w.aux_at(i) != whole.aux_at(i))
        {
            return Err("the pieces' prefixes differ".into());
        }
        whole.input.extend_from_slice(&w.input[pi..]);
        match (&mut whole.packed, &w.packed) {
            (Some(p), Some(o)) => p.extend_from(o, pa),
            (None, None) => whole.aux.extend_from_slice(&w.aux[pa..]),
            _ => return Err("packed and plain pieces".into()),
        }
        whole.constraints += w.constraints - p_rows;
    }
    Ok(whole)
}

/// a, b, c of a witness from the matrices, with the densities recorded with them; left to
/// the device step when this thread's options say so (never for a recording run, whose
/// matrices are checked here against the witness they were recorded with).
fn from_witness(
    m: &Arc<Matrices>,
    mut w: WitnessCs,
    start: Instant,
    recorded: bool,
    parts: usize,
) -> Result<Synthesized, String> {
    let witness = start.elapsed();
    if w.input.len() != m.num_inputs
        || w.aux_len() != m.num_aux
        || w.constraints + w.input.len() != m.num_constraints()
    {
        return Err(format!(
            "the circuit has {} inputs, {} aux, {} constraints; the matrices {}, {}, {}",
            w.input.len(),
            w.aux_len(),
            w.constraints + w.input.len(),
            m.num_inputs,
            m.num_aux,
            m.num_constraints()
        ));
    }
    if options().defer_abc && !recorded {
        LAST.with(|l| {
            l.set(Some(PathTimings {
                witness,
                evaluate: Duration::ZERO,
                recorded,
                parts,
            }))
        });
        let mut s = Synthesized::witness_only(m.clone(), Vec::new(), Vec::new());
        s.input = w.input;
        match w.packed {
            Some(p) => s.packed_aux = Some(p),
            None => s.aux = w.aux,
        }
        return Ok(s);
    }
    let input = std::mem::take(&mut w.input);
    let aux = w.into_plain_aux();
    let e = evaluate(m, &input, &aux);
    if e.unsatisfied != 0 {
        return Err(format!(
            "{} of {} constraints unsatisfied",
            e.unsatisfied,
            m.num_constraints()
        ));
    }
    LAST.with(|l| {
        l.set(Some(PathTimings {
            witness,
            evaluate: start.elapsed() - witness,
            recorded,
            parts,
        }))
    });
    Ok(Synthesized {
        a: e.a,
        b: e.b,
        c: e.c,
        input,
        aux,
        a_aux_density: m.a_aux_density.clone(),
        b_input_density: m.b_input_density.clone(),
        b_aux_density: m.b_aux_density.clone(),
        deferred: None,
        packed_aux: None,
    })
}

#[cfg(test)]
mod tests {
    use bellpepper_core::ConstraintSystem;
    use ff::Field;

    use super::*;
    use crate::kinds::synthetic::SyntheticCircuit;

    /// A prefix (an input x and x^2) then independent sections, each proving
    /// (x + s)^2 = y_s for its seed s and making y_s an input: the shape synthesize_split
    /// is for.
    #[derive(Clone)]
    struct Sections {
        x: u64,
        seeds: Vec<u64>,
    }

    impl Circuit<Scalar> for Sections {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let x = Scalar::from(self.x);
            let xv = cs.alloc_input(|| "x", || Ok(x))?;
            let sq = cs.alloc(|| "x^2", || Ok(x.square()))?;
            cs.enforce(|| "sq", |l| l + xv, |l| l + xv, |l| l + sq);
            for s in self.seeds {
                let v = x + Scalar::from(s);
                let t = cs.alloc(|| "t", || Ok(v))?;
                cs.enforce(
                    || "t",
                    |l| l + xv + (Scalar::from(s), CS::one()),
                    |l| l + CS::one(),
                    |l| l + t,
                );
                let y = cs.alloc_input(|| "y", || Ok(v.square()))?;
                cs.enforce(|| "y", |l| l + t, |l| l + t, |l| l + y);
            }
            Ok(())
        }
    }

    fn whole() -> Sections {
        Sections {
            x: 5,
            seeds: (1..=7).collect(),
        }
    }

    fn part(j: usize, parts: usize) -> Sections {
        let seeds = whole().seeds;
        let n = seeds.len();
        Sections {
            x: 5,
            seeds: seeds[j * n / parts..(j + 1) * n / parts].to_vec(),
        }
    }

    type R<C> = Result<C, SynthesisError>;

    #[test]
    fn split_witness_equals_full_synthesis() {
        let cache = MatrixCache::new();
        let full = synthesize_partition(whole()).unwrap();
        // The first call records; the split applies from the second on.
        let recorded = synthesize_split(
            &cache,
            "s",
            || R::Ok(whole()),
            3,
            |j, cs| Ok(synthesize_witness(part(j, 3), cs)),
        );
        assert_eq!(full.first_difference(&recorded.unwrap()), None);
        for (parts, defer_abc) in [
            (1, false),
            (2, false),
            (3, false),
            (7, false),
            (1, true),
            (7, true),
        ] {
            let before = cache.fallbacks();
            let options = SynthesisOptions {
                path: None,
                defer_abc,
            };
            let mut s = with_options(options, || {
                synthesize_split(
                    &cache,
                    "s",
                    || R::Ok(whole()),
                    parts,
                    |j, cs| Ok(synthesize_witness(part(j, parts), cs)),
                )
            })
            .unwrap();
            assert_eq!(last_timings().map(|t| t.parts), Some(parts));
            // Left to the device, the witness is packed as it is written.
            assert_eq!(s.packed_aux.is_some(), defer_abc);
            s.evaluate_deferred().unwrap();
            assert_eq!(full.first_difference(&s), None, "{parts} parts");
            assert_eq!(cache.fallbacks(), before);
        }
    }

    #[test]
    fn pieces_that_do_not_fit_fall_back_to_full_synthesis() {
        let cache = MatrixCache::new();
        let full = synthesize_partition(whole()).unwrap();
        synthesize_split(
            &cache,
            "s",
            || R::Ok(whole()),
            2,
            |j, cs| Ok(synthesize_witness(part(j, 2), cs)),
        )
        .unwrap();
        // A piece with another x: same counts, but its prefix differs.
        let before = cache.fallbacks();
        let s = synthesize_split(
            &cache,
            "s",
            || R::Ok(whole()),
            2,
            |j, cs| {
                let piece = Sections {
                    x: 5 + j as u64,
                    ..part(j, 2)
                };
                Ok(synthesize_witness(piece, cs))
            },
        )
        .unwrap();
        assert_eq!(full.first_difference(&s), None);
        assert_eq!(cache.fallbacks(), before + 1);
        assert_eq!(last_timings(), None);
    }

    #[test]
    fn a_circuit_that_does_not_fit_its_matrices_falls_back() {
        let cache = MatrixCache::new();
        let key = "synthetic-2^6";
        let a = synthesize_cached(&cache, key, || R::Ok(SyntheticCircuit::new(6, 1))).unwrap();
        assert!(last_timings().unwrap().recorded);
        let b = synthesize_cached(&cache, key, || R::Ok(SyntheticCircuit::new(6, 2))).unwrap();
        assert!(!last_timings().unwrap().recorded);
        assert_eq!(
            b.first_difference(&synthesize_partition(SyntheticCircuit::new(6, 2)).unwrap()),
            None
        );
        assert_ne!(a.aux, b.aux);
        // Another size under the same key: the counts disagree, full synthesis answers.
        let before = cache.fallbacks();
        let c = synthesize_cached(&cache, key, || R::Ok(SyntheticCircuit::new(7, 2))).unwrap();
        assert_eq!(c.num_constraints(), 1 << 7);
        assert_eq!(cache.fallbacks(), before + 1);
    }

    #[test]
    fn unsatisfied_witness_falls_back_and_matches_full_synthesis() {
        // x * x = y with y wrong: full synthesis records it as it is (and the proof would
        // fail verification); the matrices path must give the very same vectors.
        #[derive(Clone)]
        struct Bad;
        impl Circuit<Scalar> for Bad {
            fn synthesize<CS: ConstraintSystem<Scalar>>(
                self,
                cs: &mut CS,
            ) -> Result<(), SynthesisError> {
                let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
                let y = cs.alloc(|| "y", || Ok(Scalar::from(10u64)))?;
                cs.enforce(|| "sq", |l| l + x, |l| l + x, |l| l + y);
                Ok(())
            }
        }
        let cache = MatrixCache::new();
        let before = cache.fallbacks();
        let s = synthesize_cached(&cache, "bad", || R::Ok(Bad)).unwrap();
        assert_eq!(
            s.first_difference(&synthesize_partition(Bad).unwrap()),
            None
        );
        assert_eq!(s.c[0], Scalar::from(10u64));
        assert_eq!(cache.fallbacks(), before + 1);
    }
}

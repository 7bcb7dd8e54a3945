//! a, b, c on the device from a circuit's recorded constraint matrices (cuzk-kernels'
//! `r1cs`, the CUDA backend's evaluation of deferred partitions) against the host's
//! evaluation (`matrices::evaluate`): the same elements, zero padding to the domain, the same
//! count of unsatisfied rows for a broken witness; and a deferred partition proven on the
//! device gives the bytes of one evaluated on the host. An aux assignment packed for the bus
//! (`Synthesized::pack_aux`) unpacks on the device to the plain vector, element for element,
//! and proves the same bytes.
//!
//! Real Filecoin partitions through the same path: cuda_filecoin. Without a GPU, driver or
//! kernels: prints "SKIP: ..." and passes (fails where CUZK_REQUIRE_GPU=1).

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::backend::cuda::{as_limbs, csr_parts, kernels, CudaBackend};
use cuzk_core::backend::{Backend, BackendError, ScalarVec};
use cuzk_core::kinds::porep_shaped::{self, PorepShaped};
use cuzk_core::kinds::synthetic::{self, SyntheticCircuit};
use cuzk_core::kinds::SyntheticShape;
use cuzk_core::matrices::{evaluate, record_matrices, Matrices};
use cuzk_core::packed::PackedScalars;
use cuzk_core::prove::{assemble, proof_bytes, prove_on_device, ProveError};
use cuzk_core::srs::SrsCache;
use cuzk_core::synth::Synthesized;
use cuzk_core::witness::{synthesize_witness, WitnessCs};
use ff::Field;
use kernels::r1cs::DeviceMatrices;
use kernels::DeviceScalars;

mod common;
use common::param_dir;

/// Every kind of term: unit and scaled, inputs and aux, zero and one values (the kernel's
/// shortcuts), a row with no terms at all, and a coefficient the recorder must drop (zero).
struct Edges {
    x: u64,
}

impl Circuit<Scalar> for Edges {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = Scalar::from(self.x);
        let xi = cs.alloc_input(|| "x", || Ok(x))?;
        let zero = cs.alloc(|| "zero", || Ok(Scalar::ZERO))?;
        let one = cs.alloc(|| "one", || Ok(Scalar::ONE))?;
        let sq = cs.alloc(|| "x^2", || Ok(x * x))?;
        let k = Scalar::from(12345u64);
        let kx = cs.alloc(|| "kx", || Ok(k * x))?;
        cs.enforce(|| "x*x", |l| l + xi, |l| l + xi, |l| l + sq);
        // (k x + 3 * one + 5 * zero) * one = kx + 3
        cs.enforce(
            || "scaled",
            |l| l + (k, xi) + (Scalar::from(3u64), one) + (Scalar::from(5u64), zero),
            |l| l + one,
            |l| l + kx + (Scalar::from(3u64), CS::one()),
        );
        cs.enforce(|| "empty", |l| l, |l| l, |l| l);
        // A zero coefficient beside a unit term.
        cs.enforce(
            || "zero coefficient",
            |l| l + (Scalar::ZERO, sq) + zero,
            |l| l + sq,
            |l| l,
        );
        Ok(())
    }
}

/// Rows of every length the kernel treats apart (a part of more than 16 terms is summed by
/// its warp, unless more than 8 lanes of the warp have one): in runs of 32 rows, all long
/// (lane by lane), a few long (the warp's), one long unit part in C, and short ones; long
/// parts in A, B and C, unit and scaled, longer than a warp and not a multiple of it; zero,
/// one and wide values; a row count that leaves the last warp part empty.
struct LongRows {
    rows: usize,
}

impl LongRows {
    const VARS: usize = 300;

    fn value(j: usize) -> Scalar {
        match j % 3 {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            _ => Scalar::from(j as u64 * 1_234_567 + 89),
        }
    }

    /// Terms of row r's A (`which` 0) or B (1); half of them unit, half scaled, so a long
    /// row (34 or more) has both parts long.
    fn terms(r: usize, which: usize) -> usize {
        let lane = r % 32;
        match (r / 32) % 4 {
            0 => 34 + (r * 7 + which) % 60,
            1 if lane < 3 + which => 34 + (r * 13 + which * 5) % 90,
            _ => (r + which) % 5,
        }
    }
}

impl Circuit<Scalar> for LongRows {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let vars = (0..Self::VARS)
            .map(|j| cs.alloc(|| format!("v{j}"), || Ok(Self::value(j))))
            .collect::<Result<Vec<_>, _>>()?;
        for r in 0..self.rows {
            // Even terms unit, odd terms scaled (coefficient t + 2), so both parts are long.
            let lc = |which: usize| {
                let mut l = bellpepper_core::LinearCombination::<Scalar>::zero();
                let mut val = Scalar::ZERO;
                for t in 0..Self::terms(r, which) {
                    let j = (r * 3 + t * (which + 1)) % Self::VARS;
                    let k = if t % 2 == 0 {
                        Scalar::ONE
                    } else {
                        Scalar::from(t as u64 + 2)
                    };
                    l = l + (k, vars[j]);
                    val += k * Self::value(j);
                }
                (l, val)
            };
            let (la, va) = lc(0);
            let (lb, vb) = lc(1);
            let prod = cs.alloc(|| format!("p{r}"), || Ok(va * vb))?;
            if (r / 32) % 4 == 2 && r % 32 == 5 {
                // C as 40 unit terms that sum to a*b: the product and 39 zeros.
                let zeros = (0..39).map(|i| vars[(3 * i) % Self::VARS]);
                cs.enforce(
                    || format!("r{r}"),
                    |_| la,
                    |_| lb,
                    |l| zeros.fold(l + prod, |l, z| l + z),
                );
            } else {
                cs.enforce(|| format!("r{r}"), |_| la, |_| lb, |l| l + prod);
            }
        }
        Ok(())
    }
}

/// The device's a, b, c (and unsatisfied count) for `input`, `aux`, into `len` elements,
/// against the host's evaluation padded to `len`: with every row by its own lane (the
/// default) and with long rows summed by their warp (`CUZK_EVAL_WARP_ROWS`: 8, the setting
/// to try, and 32, every long row of a warp).
fn check(gpu: &CudaBackend, m: &Matrices, input: &[Scalar], aux: &[Scalar], len: usize) -> u64 {
    let dev = gpu.device();
    let dm = DeviceMatrices::upload(
        dev,
        csr_parts(m),
        as_limbs(&m.coeffs),
        m.num_inputs,
        m.num_aux,
    )
    .unwrap();
    let din = DeviceScalars::upload(dev, as_limbs(input)).unwrap();
    let daux = DeviceScalars::upload(dev, as_limbs(aux)).unwrap();
    let host = evaluate(m, input, aux);
    for warp_rows in [0, 8, 32] {
        let e = dm.evaluate_with(dev, &din, &daux, len, warp_rows).unwrap();
        for (name, d, h) in [
            ("a", &e.a, &host.a),
            ("b", &e.b, &host.b),
            ("c", &e.c, &host.c),
        ] {
            let mut want = h.clone();
            want.resize(len, Scalar::ZERO);
            assert_eq!(
                d.download(dev).unwrap(),
                as_limbs(&want),
                "{}: {name} differs (warp rows {warp_rows})",
                m.key
            );
        }
        assert_eq!(
            e.unsatisfied, host.unsatisfied as u64,
            "{}: unsatisfied (warp rows {warp_rows})",
            m.key
        );
    }
    host.unsatisfied as u64
}

#[test]
fn device_abc_matches_the_host_and_counts_unsatisfied_rows() {
    let Some(gpu) = CudaBackend::new_or_skip(0) else {
        return;
    };
    let (m, w) = record_matrices("edges", Edges { x: 9 }).unwrap();
    // 1 + 4 rows (the input constraints included); padded to 8, and to exactly the rows.
    assert_eq!(m.num_constraints(), 6);
    assert_eq!(check(&gpu, &m, &w.input, &w.aux, 8), 0);
    assert_eq!(check(&gpu, &m, &w.input, &w.aux, 6), 0);
    let mut bad = w.aux.clone();
    bad[2] += Scalar::ONE; // x^2
    assert!(check(&gpu, &m, &w.input, &bad, 8) > 0);

    // The smallest synthetic circuit, one whose rows are not a power of two, larger ones.
    for log in [synthetic::MIN_LOG, 5, 10, 13] {
        let key = format!("synthetic-2^{log}");
        let (m, _) = record_matrices(&key, SyntheticCircuit::new(log, 1)).unwrap();
        // A witness other than the recording's.
        let w = synthesize_witness(SyntheticCircuit::new(log, 2), WitnessCs::with_one()).unwrap();
        let n = m.num_constraints().next_power_of_two();
        assert_eq!(check(&gpu, &m, &w.input, &w.aux, n), 0, "2^{log}");
        let mut bad = w.aux.clone();
        for v in bad.iter_mut().step_by(7) {
            *v += Scalar::ONE;
        }
        assert!(
            check(&gpu, &m, &w.input, &bad, n) > 0,
            "2^{log}: broken witness"
        );
    }
}

/// How many parts of each matrix's rows have more than 16 terms (the kernel's long parts),
/// and the most of them in any 32 consecutive rows.
fn long_parts(m: &Matrices) -> (usize, usize) {
    let parts = csr_parts(m);
    let long: Vec<bool> = (0..m.num_constraints())
        .map(|r| {
            parts.iter().any(|p| {
                p.unit_start[r + 1] - p.unit_start[r] > 16
                    || p.scaled_start[r + 1] - p.scaled_start[r] > 16
            })
        })
        .collect();
    let most = long
        .windows(32.min(long.len()))
        .map(|w| w.iter().filter(|&&l| l).count())
        .max()
        .unwrap_or(0);
    (long.iter().filter(|&&l| l).count(), most)
}

#[test]
fn long_rows_are_summed_by_the_warp_as_by_the_host() {
    // The circuit has what the test is for (checked without a GPU too): long parts, runs
    // where every row is long, and a satisfied witness.
    let (m, w) = record_matrices("long-shape", LongRows { rows: 32 * 16 }).unwrap();
    let (long, most) = long_parts(&m);
    assert!(
        long > 130 && most == 32,
        "long parts: {long}, at most {most} in 32 rows"
    );
    assert_eq!(evaluate(&m, &w.input, &w.aux).unsatisfied, 0);
    let mut bad = w.aux.clone();
    bad[2] += Scalar::ONE; // a wide value in many long parts
    assert!(evaluate(&m, &w.input, &bad).unsatisfied > 0);
    let Some(gpu) = CudaBackend::new_or_skip(0) else {
        return;
    };
    for rows in [1, 40, 32 * 16 + 11] {
        let (m, w) = record_matrices(&format!("long-{rows}"), LongRows { rows }).unwrap();
        let n = m.num_constraints().next_power_of_two();
        assert_eq!(check(&gpu, &m, &w.input, &w.aux, n), 0, "{rows} rows");
        let mut bad = w.aux.clone();
        bad[2] += Scalar::ONE;
        assert!(
            check(&gpu, &m, &w.input, &bad, n) > 0,
            "{rows} rows: broken witness"
        );
    }
}

/// The PoRep-shaped kind's matrices (built from its rows, not recorded) on the device: its/// The PoRep-shaped kind's matrices (built from its rows, not recorded) on the device: its
/// deferred partitions evaluate as on the host, and a broken bit is caught.
#[test]
fn porep_shaped_partitions_evaluate_on_the_device() {
    let Some(gpu) = CudaBackend::new_or_skip(0) else {
        return;
    };
    for log in [porep_shaped::MIN_LOG, 16] {
        let s = PorepShaped::new(log, 11).synthesize_witness().unwrap();
        let m = s.deferred.clone().unwrap();
        assert_eq!(check(&gpu, &m, &s.input, &s.aux, 1 << log), 0, "2^{log}");
        let mut bad = s.aux.clone();
        bad[8] += Scalar::ONE;
        assert!(
            check(&gpu, &m, &s.input, &bad, 1 << log) > 0,
            "2^{log}: broken"
        );
    }
}

#[test]
fn deferred_partitions_prove_on_the_device_as_on_the_host() {
    let Some(gpu) = CudaBackend::new_or_skip(0) else {
        return;
    };
    let log = 12;
    let srs = SrsCache::new(param_dir());
    let entry = srs.synthetic(log).unwrap();
    let key = format!("synthetic-2^{log}");
    let (m, _) = record_matrices(&key, SyntheticCircuit::new(log, 1)).unwrap();
    let m = std::sync::Arc::new(m);
    let w = synthesize_witness(SyntheticCircuit::new(log, 3), WitnessCs::with_one()).unwrap();
    let deferred = Synthesized::witness_only(m, w.input, w.aux);
    let mut evaluated = deferred.clone();
    evaluated.evaluate_deferred().unwrap();
    let (r, s) = (Scalar::from(77u64), Scalar::from(99u64));
    let prove = |backend: &dyn cuzk_core::backend::Backend, synth: Synthesized| {
        let (msm, t) = prove_on_device(backend, &entry.params, &entry.id, synth).unwrap();
        (
            proof_bytes(&assemble(&entry.params.vk, &msm, r, s).unwrap()),
            t.abc_in_step,
        )
    };
    let want = prove(&CpuBackend, evaluated);
    assert!(!want.1);
    assert_eq!(
        prove(&gpu, deferred.clone()),
        (want.0.clone(), true),
        "device vs host"
    );
    assert_eq!(
        prove(&CpuBackend, deferred.clone()),
        (want.0, true),
        "CPU backend, deferred"
    );

    // A witness that fails its matrices is refused on the device, not proven.
    let mut bad = deferred;
    bad.aux[3] += Scalar::ONE;
    match prove_on_device(&gpu, &entry.params, &entry.id, bad) {
        Err(ProveError::Backend(BackendError::Unsatisfied { rows, .. })) => assert!(rows > 0),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a broken witness was proven"),
    }
}

#[test]
fn packed_aux_unpacks_on_the_device_and_proves_the_same_bytes() {
    let Some(gpu) = CudaBackend::new_or_skip(0) else {
        return;
    };
    // From the heap (staged) and from a pinned buffer the device lent (DMA alone).
    let unpacks = |v: &[Scalar], what: &str| {
        let heap = PackedScalars::pack(v).unwrap_or_else(|| panic!("{what}: not packed"));
        let mut pinned = heap.clone();
        let buf = gpu
            .pinned_buffer(pinned.pinned_len())
            .expect("a pinned buffer");
        assert!(pinned.pin(buf), "{what}: pinned");
        assert!(pinned.pinned().is_some() && heap.pinned().is_none());
        assert_eq!(pinned, heap, "{what}: the same vector, pinned");
        assert_eq!(
            pinned.unpack(),
            v,
            "{what}: unpacked on the host from pinned memory"
        );
        for (p, how) in [(&heap, "staged"), (&pinned, "pinned")] {
            let ScalarVec::Device(d) = gpu.load_packed(p).unwrap() else {
                panic!("{what}: not on the device");
            };
            assert_eq!(d.len(), v.len(), "{what} {how}");
            assert_eq!(
                d.download(gpu.device()).unwrap(),
                as_limbs(v),
                "{what} {how}"
            );
        }
    };
    // Edge cases: empty, n = 1, all zeros, all ones, a length that is no multiple of 64.
    unpacks(&[], "empty");
    unpacks(&[Scalar::ONE], "one element");
    unpacks(&vec![Scalar::ZERO; 1000], "zeros");
    unpacks(&vec![Scalar::ONE; 65], "ones");
    // Wide values in every position of a word, the field's largest element among them.
    let mixed: Vec<Scalar> = (0..3 * 65536 + 77u64)
        .map(|i| match i % 11 {
            0 => Scalar::from(i + 2),
            5 if i % 3 == 0 => -Scalar::ONE,
            k if k % 2 == 0 => Scalar::ZERO,
            _ => Scalar::ONE,
        })
        .collect();
    unpacks(&mixed, "mixed");
    for log in [porep_shaped::MIN_LOG, 16] {
        let s = PorepShaped::new(log, 5).synthesize_witness().unwrap();
        unpacks(&s.aux, &format!("porep-shaped 2^{log}"));
    }

    // Words that rank past the wide values given are refused, not read past.
    let p = PackedScalars::pack(&mixed).unwrap();
    let short = kernels::msm::PackedParts {
        len: p.len(),
        words: p.words(),
        wide: &as_limbs(p.wide())[1..],
        one: as_limbs(&[Scalar::ONE])[0],
    };
    let err = kernels::msm::upload_packed(gpu.device(), short).err();
    assert!(
        err.as_ref().is_some_and(|e| e.to_string().contains("rank")),
        "{err:?}"
    );

    // A packed partition proves the bytes of the plain one, on the device and on the CPU
    // backend (which unpacks on the host).
    let log = 12;
    let srs = SrsCache::new(param_dir());
    let entry = srs.synthetic_set(SyntheticShape::Porep, log).unwrap();
    let (r, s) = (Scalar::from(5u64), Scalar::from(8u64));
    let prove = |backend: &dyn Backend, synth: Synthesized| {
        let (msm, _) = prove_on_device(backend, &entry.params, &entry.id, synth).unwrap();
        proof_bytes(&assemble(&entry.params.vk, &msm, r, s).unwrap())
    };
    let plain = PorepShaped::new(log, 7).synthesize_witness().unwrap();
    let mut packed = plain.clone();
    assert!(packed.pack_aux());
    assert!(packed.aux.is_empty());
    assert_eq!(packed.aux_len(), plain.aux.len());
    let want = prove(&gpu, plain);
    assert_eq!(prove(&gpu, packed.clone()), want, "device, packed vs plain");
    let mut pinned = packed.clone();
    let p = pinned.packed_aux.as_mut().unwrap();
    assert!(p.pin(gpu.pinned_buffer(p.pinned_len()).unwrap()));
    assert_eq!(prove(&gpu, pinned), want, "device, packed and pinned");
    assert_eq!(prove(&CpuBackend, packed), want, "CPU backend, packed");
}

/// The device's pool of pinned buffers (pinned_pool.rs): a returned buffer is lent again,
/// at most 8 exist at once, and a request none can serve is refused (the worker then packs
/// on the heap), not queued.
#[test]
fn pinned_buffers_are_reused_and_bounded() {
    let Some(gpu) = CudaBackend::new_or_skip(0) else {
        return;
    };
    let first = gpu.pinned_buffer(1000).unwrap();
    assert!(first.as_slice().len() >= 1000);
    let at = first.as_slice().as_ptr();
    drop(first);
    let again = gpu.pinned_buffer(2000).unwrap();
    assert_eq!(
        again.as_slice().as_ptr(),
        at,
        "the free buffer is lent again"
    );
    let mut lent = vec![again];
    while let Some(b) = gpu.pinned_buffer(10) {
        lent.push(b);
        assert!(lent.len() <= 8, "more than 8 pinned buffers");
    }
    assert_eq!(lent.len(), 8);
    lent.pop();
    assert!(gpu.pinned_buffer(10).is_some(), "one back, one lent");
}

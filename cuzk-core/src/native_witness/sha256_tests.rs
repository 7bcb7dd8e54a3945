//! The native SHA-256 witness against bellperson's gadget, both run into a `WitnessCs`:
//! the aux assignments, the constraint counts and the output bits must be identical, for
//! inputs of every length and every mix of constant, allocated and negated bits.

use bellpepper_core::boolean::{AllocatedBit, Boolean};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use super::sha256::sha256_witness;
use crate::witness::WitnessCs;

/// How to build one input bit: payload is the constant / the variable's value.
#[derive(Clone, Copy)]
enum S {
    C(bool),
    Is(bool),
    Not(bool),
}

fn alloc_inputs(cs: &mut WitnessCs, spec: &[S]) -> Vec<Boolean> {
    spec.iter()
        .map(|s| match *s {
            S::C(b) => Boolean::Constant(b),
            S::Is(v) => Boolean::Is(AllocatedBit::alloc(&mut *cs, Some(v)).unwrap()),
            S::Not(v) => Boolean::Not(AllocatedBit::alloc(&mut *cs, Some(v)).unwrap()),
        })
        .collect()
}

#[derive(Clone, Copy, Debug)]
enum Mode {
    AllAlloc,
    AllConst,
    Mixed,    // uniform among Constant, Is, Not
    Sparse,   // 85% constants: words with a few allocated bits
    NotHeavy, // Is / Not, no constants
    WordMix,  // per 32-bit chunk: constant, allocated or mixed
}
const MODES: [Mode; 6] = [
    Mode::AllAlloc,
    Mode::AllConst,
    Mode::Mixed,
    Mode::Sparse,
    Mode::NotHeavy,
    Mode::WordMix,
];

fn gen(rng: &mut ChaCha8Rng, len: usize, mode: Mode) -> Vec<S> {
    let mut out = Vec::with_capacity(len);
    let mut chunk_mode = Mode::Mixed;
    for i in 0..len {
        let r = rng.next_u32();
        let v = r & 1 == 1;
        let m = match mode {
            Mode::WordMix => {
                if i % 32 == 0 {
                    chunk_mode =
                        [Mode::AllConst, Mode::AllAlloc, Mode::Mixed][(r >> 8) as usize % 3];
                }
                chunk_mode
            }
            m => m,
        };
        out.push(match m {
            Mode::AllAlloc => S::Is(v),
            Mode::AllConst => S::C(v),
            Mode::Mixed => [S::C(v), S::Is(v), S::Not(v)][(r >> 1) as usize % 3],
            Mode::Sparse => match (r >> 1) % 100 {
                0..=84 => S::C(v),
                85..=94 => S::Is(v),
                _ => S::Not(v),
            },
            Mode::NotHeavy => {
                if (r >> 1) & 1 == 1 {
                    S::Not(v)
                } else {
                    S::Is(v)
                }
            }
            Mode::WordMix => unreachable!(),
        });
    }
    out
}

fn rand_alloc(rng: &mut ChaCha8Rng, out: &mut Vec<S>, n: usize) {
    out.extend((0..n).map(|_| S::Is(rng.next_u32() & 1 == 1)));
}

/// storage-proofs-porep create_label_circuit preimage: replica id (255 alloc + false),
/// layer index (32 constant bits), node (64 alloc), 160 constant false, 37 parents x (255 alloc + false).
fn label_layout(rng: &mut ChaCha8Rng) -> Vec<S> {
    let mut s = Vec::with_capacity(9984);
    rand_alloc(rng, &mut s, 255);
    s.push(S::C(false));
    let layer = rng.next_u32() % 11 + 1;
    s.extend((0..32).rev().map(|i| S::C((layer >> i) & 1 == 1)));
    rand_alloc(rng, &mut s, 64);
    s.extend((0..160).map(|_| S::C(false)));
    for _ in 0..37 {
        rand_alloc(rng, &mut s, 255);
        s.push(S::C(false));
    }
    assert_eq!(s.len(), 9984);
    s
}

/// hash2 preimage: two field elements, each 255 allocated bits + constant false.
fn hash2_layout(rng: &mut ChaCha8Rng) -> Vec<S> {
    let mut s = Vec::with_capacity(512);
    for _ in 0..2 {
        rand_alloc(rng, &mut s, 255);
        s.push(S::C(false));
    }
    s
}

fn check(spec: &[S], what: &str) {
    let mut g = WitnessCs::with_one();
    let gin = alloc_inputs(&mut g, spec);
    let gout = bellperson::gadgets::sha256::sha256(&mut g, &gin).unwrap();

    let mut n = WitnessCs::with_one();
    let nin = alloc_inputs(&mut n, spec);
    let before = n.constraints;
    let (nout, count) = sha256_witness(&mut n, &nin).unwrap();

    assert_eq!(g.aux.len(), n.aux.len(), "{what}: aux count");
    assert!(g.aux == n.aux, "{what}: aux values differ");
    assert_eq!(g.input, n.input, "{what}: inputs");
    assert_eq!(
        n.constraints, before,
        "{what}: sha256_witness must not enforce"
    );
    assert_eq!(g.constraints, before + count, "{what}: constraint count");
    assert_eq!(gout.len(), 256);
    assert_eq!(nout.len(), 256);
    for (i, (a, b)) in gout.iter().zip(nout.iter()).enumerate() {
        let ok = match (a, b) {
            (Boolean::Constant(x), Boolean::Constant(y)) => x == y,
            (Boolean::Is(x), Boolean::Is(y)) | (Boolean::Not(x), Boolean::Not(y)) => {
                x.get_value() == y.get_value() && x.get_variable() == y.get_variable()
            }
            _ => false,
        };
        assert!(ok, "{what}: output bit {i} differs");
    }
}

fn rng() -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(0x3d5962be763d318d)
}

#[test]
fn fixed_lengths_all_modes() {
    let mut rng = rng();
    let mut cases = 0;
    for len in [0, 8, 440, 448, 504, 512, 1024, 9984] {
        for mode in MODES {
            let spec = gen(&mut rng, len, mode);
            check(&spec, &format!("len {len} {mode:?}"));
            cases += 1;
        }
    }
    assert_eq!(cases, 48);
}

#[test]
fn random_lengths() {
    let mut rng = rng();
    let mut cases = 0;
    for _ in 0..60 {
        let len = 8 * (rng.next_u32() as usize % 193); // 0..=1536 bits
        let mode = MODES[rng.next_u32() as usize % MODES.len()];
        let spec = gen(&mut rng, len, mode);
        check(&spec, &format!("len {len} {mode:?}"));
        cases += 1;
    }
    assert_eq!(cases, 60);
}

#[test]
fn filecoin_layouts() {
    let mut rng = rng();
    for i in 0..4 {
        check(&label_layout(&mut rng), &format!("label #{i}"));
    }
    for i in 0..16 {
        check(&hash2_layout(&mut rng), &format!("hash2 #{i}"));
    }
}

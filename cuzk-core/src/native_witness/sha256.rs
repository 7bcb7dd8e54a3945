//! Native witness generation for bellperson 0.27's SHA-256 gadget.
//!
//! `bellperson::gadgets::sha256::sha256` allocates ~27k variables per compression
//! through `Option<bool>` closures, per-bit `Boolean` matches and `LinearCombination`
//! building in `UInt32::addmany` / `MultiEq`. For a witness-only constraint system
//! none of that is needed: every allocated value is a bit of some native u32 word.
//! This module replays the gadget's *allocation schedule* (which variables, in which
//! order, with which values) on native words, and tallies the `enforce` calls the
//! gadget would have made, without building any constraint.
//!
//! The gadget never looks at variable identities to decide anything; it only
//! branches on each bit's *variant* (`Constant(b)`, `Is`, `Not`) and value. So a
//! word is modelled as three u32 masks (value, constant-mask, Not-mask), which is
//! all that is needed to reproduce every allocation-avoiding special case.

use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::{ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::{Field, PrimeField};

/// SHA-256 round constants (FIPS 180-4, 4.2.2).
#[rustfmt::skip]
const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// SHA-256 initial hash value (FIPS 180-4, 5.3.3). The gadget uses it as constant words.
const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// A `UInt32` as the gadget sees it, bit i = 2^i (LSB first, like `UInt32::bits`).
/// `v`: the value of each bit (for `Not(x)` that is !x). `c`: bit is `Boolean::Constant`.
/// `n`: bit is `Boolean::Not` (never set where `c` is). Otherwise the bit is `Boolean::Is`.
/// The allocated variable behind a non-constant bit therefore has value `v ^ n`.
#[derive(Clone, Copy, Debug)]
struct Word {
    v: u32,
    c: u32,
    n: u32,
}

impl Word {
    const fn constant(v: u32) -> Self {
        Word {
            v,
            c: u32::MAX,
            n: 0,
        }
    }
    /// A word of freshly allocated bits (addmany results, ch/maj general case): all `Is`.
    const fn fresh(v: u32) -> Self {
        Word { v, c: 0, n: 0 }
    }
    fn rotr(self, by: u32) -> Self {
        Word {
            v: self.v.rotate_right(by),
            c: self.c.rotate_right(by),
            n: self.n.rotate_right(by),
        }
    }
    /// `UInt32::shr` fills the vacated high bits with `Constant(false)`.
    fn shr(self, by: u32) -> Self {
        Word {
            v: self.v >> by,
            c: (self.c >> by) | !(u32::MAX >> by),
            n: self.n >> by,
        }
    }
    fn get(self, i: u32) -> B {
        let v = (self.v >> i) & 1 == 1;
        if (self.c >> i) & 1 == 1 {
            B::C(v)
        } else if (self.n >> i) & 1 == 1 {
            B::Not(v)
        } else {
            B::Is(v)
        }
    }
    fn set(&mut self, i: u32, b: B) {
        let m = 1u32 << i;
        self.v &= !m;
        self.c &= !m;
        self.n &= !m;
        match b {
            B::C(v) => {
                self.c |= m;
                self.v |= (v as u32) << i;
            }
            B::Is(v) => self.v |= (v as u32) << i,
            B::Not(v) => {
                self.n |= m;
                self.v |= (v as u32) << i;
            }
        }
    }
}

/// One bit as a `Boolean` variant, carrying the *Boolean's* value (not the variable's).
/// Only used on the slow path of ch/maj, where some operand bits are constant.
#[derive(Clone, Copy)]
enum B {
    C(bool),
    Is(bool),
    Not(bool),
}

impl B {
    fn val(self) -> bool {
        match self {
            B::C(v) | B::Is(v) | B::Not(v) => v,
        }
    }
    /// `Boolean::not`: flips the variant, never allocates.
    fn not(self) -> B {
        match self {
            B::C(v) => B::C(!v),
            B::Is(v) => B::Not(!v),
            B::Not(v) => B::Is(!v),
        }
    }
}

/// Forwards allocations to the caller's CS but drops `enforce`: lets us build real
/// `AllocatedBit`s for the returned bits (their fields are private, `AllocatedBit::alloc`
/// is the only way) while keeping all constraint accounting in our own counter.
struct NoEnforce<'a, CS>(&'a mut CS);

impl<CS: ConstraintSystem<Scalar>> ConstraintSystem<Scalar> for NoEnforce<'_, CS> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.alloc(annotation, f)
    }

    fn alloc_input<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.alloc_input(annotation, f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
    }

    fn push_namespace<NR: Into<String>, N: FnOnce() -> NR>(&mut self, _: N) {}

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Allocation driver: the caller's CS, the running count of constraints the gadget
/// would have enforced, and the emulated `MultiEq` accumulator of the current compression.
struct Synth<'a, CS> {
    cs: &'a mut CS,
    constraints: usize,
    meq_bits: usize,
}

impl<CS: ConstraintSystem<Scalar>> Synth<'_, CS> {
    /// One aux variable holding 0/1. The annotation closure is never called by a witness CS.
    #[inline(always)]
    fn bit(&mut self, b: bool) -> Result<(), SynthesisError> {
        self.cs
            .alloc(|| "", || Ok(if b { Scalar::ONE } else { Scalar::ZERO }))?;
        Ok(())
    }

    /// Allocates bit i of `vals` for each set bit i of `mask`, LSB first (the gadget's
    /// per-bit loop order), each with one constraint (xor / ch). Full words take a
    /// branch-free straight loop.
    #[inline(always)]
    fn bits(&mut self, vals: u32, mask: u32) -> Result<(), SynthesisError> {
        if mask == u32::MAX {
            for i in 0..32 {
                self.bit((vals >> i) & 1 == 1)?;
            }
        } else {
            let mut m = mask;
            while m != 0 {
                let i = m.trailing_zeros();
                self.bit((vals >> i) & 1 == 1)?;
                m &= m - 1;
            }
        }
        self.constraints += mask.count_ones() as usize;
        Ok(())
    }

    /// `MultiEq::enforce_equal(num_bits, ..)`: packs equalities into one constraint until
    /// the packed width would reach `Scalar::CAPACITY` (254), then emits one and restarts.
    fn multieq(&mut self, num_bits: usize) {
        if Scalar::CAPACITY as usize <= self.meq_bits + num_bits {
            self.constraints += 1;
            self.meq_bits = 0;
        }
        self.meq_bits += num_bits;
    }

    /// `MultiEq`'s `Drop`: one last packed constraint if anything is pending.
    fn multieq_drop(&mut self) {
        if self.meq_bits > 0 {
            self.constraints += 1;
            self.meq_bits = 0;
        }
    }

    /// `UInt32::xor` = 32 x `Boolean::xor`. Per bit: a constant operand returns the other
    /// operand (negated if the constant is true) without allocating; two non-constants
    /// allocate one bit (1 constraint). Is^Is and Not^Not give `Is(x^y)`; Is^Not gives
    /// `Not(v)` with v's value `!(x^y)`. So the result's Not-mask is the xor of the
    /// operands' Not-masks and of their constant-true bits.
    fn xor(&mut self, x: Word, y: Word) -> Result<Word, SynthesisError> {
        let c = x.c & y.c;
        let v = x.v ^ y.v;
        let n = (x.n ^ y.n ^ (x.c & x.v) ^ (y.c & y.v)) & !c;
        self.bits(v ^ n, !(x.c | y.c))?;
        Ok(Word { v, c, n })
    }

    /// `Boolean::and`: constant false wins, constant true passes the other operand
    /// through, otherwise one fresh `Is` bit (and / and_not / nor, 1 constraint each).
    fn and(&mut self, x: B, y: B) -> Result<B, SynthesisError> {
        Ok(match (x, y) {
            (B::C(false), _) | (_, B::C(false)) => B::C(false),
            (B::C(true), o) | (o, B::C(true)) => o,
            _ => {
                let v = x.val() & y.val();
                self.bit(v)?;
                self.constraints += 1;
                B::Is(v)
            }
        })
    }

    /// `Boolean::sha256_ch`, special cases tested in the gadget's order. Note that
    /// a == Constant(true) with b, c non-constant is *not* special-cased: it allocates.
    fn ch_bit(&mut self, a: B, b: B, c: B) -> Result<B, SynthesisError> {
        let v = (a.val() & b.val()) ^ (!a.val() & c.val());
        match (a, b, c) {
            (B::C(_), B::C(_), B::C(_)) => Ok(B::C(v)),
            (B::C(false), _, c) => Ok(c),
            (a, B::C(false), c) => self.and(a.not(), c),
            (a, b, B::C(false)) => self.and(a, b),
            (a, b, B::C(true)) => Ok(self.and(a, b.not())?.not()),
            (a, B::C(true), c) => Ok(self.and(a.not(), c.not())?.not()),
            _ => {
                self.bit(v)?;
                self.constraints += 1;
                Ok(B::Is(v))
            }
        }
    }

    /// `Boolean::sha256_maj`, special cases in the gadget's order. The general case
    /// allocates maj first, then `b AND c` (2 variables, 2 constraints).
    fn maj_bit(&mut self, a: B, b: B, c: B) -> Result<B, SynthesisError> {
        let (x, y, z) = (a.val(), b.val(), c.val());
        let v = (x & y) ^ (x & z) ^ (y & z);
        match (a, b, c) {
            (B::C(_), B::C(_), B::C(_)) => Ok(B::C(v)),
            (B::C(false), b, c) => self.and(b, c),
            (a, B::C(false), c) => self.and(a, c),
            (a, b, B::C(false)) => self.and(a, b),
            (a, b, B::C(true)) => Ok(self.and(a.not(), b.not())?.not()),
            (a, B::C(true), c) => Ok(self.and(a.not(), c.not())?.not()),
            (B::C(true), b, c) => Ok(self.and(b.not(), c.not())?.not()),
            _ => {
                self.bit(v)?;
                self.and(b, c)?;
                self.constraints += 1;
                Ok(B::Is(v))
            }
        }
    }

    /// `UInt32::sha256_ch`. Fast path: no constant bit anywhere -> 32 fresh `Is` bits.
    fn ch(&mut self, a: Word, b: Word, c: Word) -> Result<Word, SynthesisError> {
        let v = (a.v & b.v) ^ (!a.v & c.v);
        if (a.c | b.c | c.c) == 0 {
            self.bits(v, u32::MAX)?;
            return Ok(Word::fresh(v));
        }
        let mut r = Word::fresh(0);
        for i in 0..32 {
            let bit = self.ch_bit(a.get(i), b.get(i), c.get(i))?;
            r.set(i, bit);
        }
        Ok(r)
    }

    /// `UInt32::sha256_maj`. Fast path: no constant bit -> per bit (maj, b&c) pairs.
    fn maj(&mut self, a: Word, b: Word, c: Word) -> Result<Word, SynthesisError> {
        if (a.c | b.c | c.c) == 0 {
            let v = (a.v & b.v) ^ (a.v & c.v) ^ (b.v & c.v);
            let bc = b.v & c.v;
            for i in 0..32 {
                self.bit((v >> i) & 1 == 1)?;
                self.bit((bc >> i) & 1 == 1)?;
            }
            self.constraints += 64;
            return Ok(Word::fresh(v));
        }
        let mut r = Word::fresh(0);
        for i in 0..32 {
            let bit = self.maj_bit(a.get(i), b.get(i), c.get(i))?;
            r.set(i, bit);
        }
        Ok(r)
    }

    /// `UInt32::addmany`. The result width comes from `ops.len() * u32::MAX`, *not* from
    /// the operands' actual values (constants included): 2 ops -> 33 bits, 3-4 -> 34,
    /// 5-8 -> 35, 9-10 -> 36. Each result bit is an `AllocatedBit` (booleanity
    /// constraint), carries included, then one `MultiEq::enforce_equal(width)`. Only if
    /// *every* bit of every operand is constant does it return a constant word instead.
    /// With `out`, the low 32 bits are built as real `AllocatedBit`s and appended to
    /// `out` MSB first (`into_bits_be`); carries stay plain allocations.
    fn addmany(
        &mut self,
        ops: &[Word],
        out: Option<&mut Vec<Boolean>>,
    ) -> Result<Word, SynthesisError> {
        let width = 64 - (ops.len() as u64 * u64::from(u32::MAX)).leading_zeros();
        let sum: u64 = ops.iter().map(|w| u64::from(w.v)).sum();
        let all_const = ops.iter().all(|w| w.c == u32::MAX);
        match out {
            _ if all_const => {
                if let Some(out) = out {
                    out.extend(
                        (0..32)
                            .rev()
                            .map(|i| Boolean::Constant((sum >> i) & 1 == 1)),
                    );
                }
                return Ok(Word::constant(sum as u32));
            }
            None => {
                for i in 0..width {
                    self.bit((sum >> i) & 1 == 1)?;
                }
            }
            Some(out) => {
                let start = out.len();
                for i in 0..32 {
                    let b =
                        AllocatedBit::alloc(NoEnforce(&mut *self.cs), Some((sum >> i) & 1 == 1))?;
                    out.push(Boolean::Is(b));
                }
                out[start..].reverse();
                for i in 32..width {
                    self.bit((sum >> i) & 1 == 1)?;
                }
            }
        }
        self.constraints += width as usize;
        self.multieq(width as usize);
        Ok(Word::fresh(sum as u32))
    }

    /// `sha256_compression_function`: message schedule, 64 rounds with the gadget's
    /// deferred additions, final additions. One `MultiEq` per call (flushed on return).
    fn compress(
        &mut self,
        block: &[Word],
        cur: &[Word; 8],
        mut out: Option<&mut Vec<Boolean>>,
    ) -> Result<[Word; 8], SynthesisError> {
        self.meq_bits = 0;
        let mut w = [Word::constant(0); 64];
        w[..16].copy_from_slice(block);
        for i in 16..64 {
            let x = w[i - 15];
            let s0 = self.xor(x.rotr(7), x.rotr(18))?;
            let s0 = self.xor(s0, x.shr(3))?;
            let y = w[i - 2];
            let s1 = self.xor(y.rotr(17), y.rotr(19))?;
            let s1 = self.xor(s1, y.shr(10))?;
            w[i] = self.addmany(&[w[i - 16], s0, w[i - 7], s1], None)?;
        }

        // The gadget keeps `a` and `e` as pending operand lists ("Maybe::Deferred") and
        // only materialises them (one addmany) at the start of the next round, or folds
        // the current hash word into them at the end. Round 0 uses cur[0]/cur[4] as is.
        let (mut b, mut c, mut d) = (cur[1], cur[2], cur[3]);
        let (mut f, mut g, mut h) = (cur[5], cur[6], cur[7]);
        let mut e_ops = [Word::constant(0); 7]; // temp1 (5) + d, + cur[4] at the end
        let mut a_ops = [Word::constant(0); 8]; // temp1 (5) + S0 + maj, + cur[0] at the end
        for i in 0..64 {
            let new_e = if i == 0 {
                cur[4]
            } else {
                self.addmany(&e_ops[..6], None)?
            };
            let s1 = self.xor(new_e.rotr(6), new_e.rotr(11))?;
            let s1 = self.xor(s1, new_e.rotr(25))?;
            let ch = self.ch(new_e, f, g)?;
            let new_a = if i == 0 {
                cur[0]
            } else {
                self.addmany(&a_ops[..7], None)?
            };
            let s0 = self.xor(new_a.rotr(2), new_a.rotr(13))?;
            let s0 = self.xor(s0, new_a.rotr(22))?;
            let maj = self.maj(new_a, b, c)?;

            let t1 = [h, s1, ch, Word::constant(K[i]), w[i]];
            h = g;
            g = f;
            f = new_e;
            e_ops[..5].copy_from_slice(&t1);
            e_ops[5] = d;
            d = c;
            c = b;
            b = new_a;
            a_ops[..5].copy_from_slice(&t1);
            a_ops[5] = s0;
            a_ops[6] = maj;
        }

        // Final additions in the gadget's order h0..h7; h0/h4 fold cur into the pending
        // lists (8 and 7 operands -> 35 bits), the others are 2-operand (33 bits).
        a_ops[7] = cur[0];
        e_ops[6] = cur[4];
        let h0 = self.addmany(&a_ops, out.as_deref_mut())?;
        let h1 = self.addmany(&[cur[1], b], out.as_deref_mut())?;
        let h2 = self.addmany(&[cur[2], c], out.as_deref_mut())?;
        let h3 = self.addmany(&[cur[3], d], out.as_deref_mut())?;
        let h4 = self.addmany(&e_ops, out.as_deref_mut())?;
        let h5 = self.addmany(&[cur[5], f], out.as_deref_mut())?;
        let h6 = self.addmany(&[cur[6], g], out.as_deref_mut())?;
        let h7 = self.addmany(&[cur[7], h], out)?;
        self.multieq_drop();
        Ok([h0, h1, h2, h3, h4, h5, h6, h7])
    }
}

/// Packs the message plus SHA-256 padding (constant 1 bit, constant zeros, 64-bit
/// constant big-endian bit length) into `Word`s, 32 bits each, MSB first per word
/// (`UInt32::from_bits_be`).
fn pad(input: &[Boolean]) -> Result<Vec<Word>, SynthesisError> {
    let len = input.len();
    let total = (len + 1 + 64).div_ceil(512) * 512;
    let mut words = vec![Word::constant(0); total / 32];
    for (i, bit) in input.iter().enumerate() {
        let w = &mut words[i / 32];
        let m = 1u32 << (31 - (i % 32));
        match bit {
            Boolean::Constant(b) => {
                if *b {
                    w.v |= m;
                }
            }
            Boolean::Is(x) => {
                w.c &= !m;
                if x.get_value().ok_or(SynthesisError::AssignmentMissing)? {
                    w.v |= m;
                }
            }
            Boolean::Not(x) => {
                w.c &= !m;
                w.n |= m;
                if !x.get_value().ok_or(SynthesisError::AssignmentMissing)? {
                    w.v |= m;
                }
            }
        }
    }
    words[len / 32].v |= 1u32 << (31 - (len % 32));
    let nw = words.len();
    words[nw - 2].v = ((len as u64) >> 32) as u32;
    words[nw - 1].v = len as u32;
    Ok(words)
}

/// Allocates through `cs` exactly the variables bellperson's `sha256(cs, input)` allocates —
/// same count, same order, same values — and returns the same 256 output bits (same
/// Boolean variants: allocated bits where the gadget's are allocated, constants where its
/// are constant) and the number of constraints the gadget would have enforced (it enforces
/// none itself). For witness-only constraint systems only: it does not constrain anything.
///
/// The returned count is the gadget's *total*, including the booleanity constraints of
/// the 256 returned `AllocatedBit`s (those are allocated through a wrapper that drops
/// `enforce`, so `cs` sees no `enforce` call at all). Allocated input bits must carry
/// values; otherwise `AssignmentMissing` is returned.
pub fn sha256_witness<CS: ConstraintSystem<Scalar>>(
    mut cs: CS,
    input: &[Boolean],
) -> Result<(Vec<Boolean>, usize), SynthesisError> {
    assert!(input.len().is_multiple_of(8));
    let words = pad(input)?;
    let nblocks = words.len() / 16;
    let mut s = Synth {
        cs: &mut cs,
        constraints: 0,
        meq_bits: 0,
    };
    let mut cur = IV.map(Word::constant);
    let mut out = Vec::with_capacity(256);
    for (k, block) in words.chunks_exact(16).enumerate() {
        // Only the last block's final sums are handed back, so only they need to be
        // real `AllocatedBit`s; chaining values between blocks stay native.
        let sink = if k + 1 == nblocks {
            Some(&mut out)
        } else {
            None
        };
        cur = s.compress(block, &cur, sink)?;
    }
    Ok((out, s.constraints))
}

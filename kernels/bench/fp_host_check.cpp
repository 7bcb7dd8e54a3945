// Host check of the Fp products (no GPU): field/fp.cuh compiles for the host with an emulated
// carry flag, so the even/odd FIOS product (every rows-per-iteration choice and the
// out-of-line copy) and the dedicated squaring are compared here with the CIOS product on
// random elements and edge values before any device time is spent.
//
// The Karatsuba product (mul<KARA>: mul_wide, then redc) is compared with CIOS the same way;
// mul_wide and mul_wide_school with a plain 768-bit product (64-bit accumulators), redc with
// a reference on wide values up to its bound (p R), and mul_sub_mul (a b - c d with one
// reduction) with two CIOS products' difference.
// (and the Fp / Fp2 inversions against a * a^-1 = 1; the lazy Fp2 product, a b - c d and
// the G2 XYZZ additions over them against Karatsuba over CIOS)
//   g++ -O2 -std=c++17 kernels/bench/fp_host_check.cpp -o fp_host_check && ./fp_host_check
#include <cstdio>
#include <random>
#include <vector>

#include "../cuda/field/fp.cuh"
#include "../cuda/curve/xyzz.cuh"
#include "../cuda/field/fp2.cuh"
#include "random_fp.h"

// Schoolbook 12 x 12 limbs, 64-bit accumulation: the reference for mul_wide.
static wide_t wide_ref(const uint32_t* a, const uint32_t* b) {
    wide_t w{};
    for (int i = 0; i < 12; i++) {
        uint64_t c = 0;
        for (int j = 0; j < 12; j++) {
            const uint64_t t = (uint64_t)a[i] * b[j] + w.v[i + j] + c;
            w.v[i + j] = (uint32_t)t;
            c = t >> 32;
        }
        w.v[i + 12] = (uint32_t)c;
    }
    return w;
}

static bool wide_eq(const wide_t& a, const wide_t& b) {
    for (int i = 0; i < 24; i++)
        if (a.v[i] != b.v[i]) return false;
    return true;
}

// x mod p for any 12-limb x (< 2^384 < 9p): repeated subtraction.
static fp_t mod_p(fp_t x) {
    for (;;) {
        fp_t s;
        uint64_t borrow = 0;
        for (int i = 0; i < 12; i++) {
            const uint64_t t = (uint64_t)x.v[i] - fp_t::P(i) - borrow;
            s.v[i] = (uint32_t)t;
            borrow = t >> 63;
        }
        if (borrow) return x;
        x = s;
    }
}

// t / R mod p from CIOS: t = t_hi R + t_lo, so t / R = t_hi + t_lo / R, and
// mul_cios(x, 1) = x / R for x < p.
static fp_t redc_ref(const wide_t& t) {
    fp_t lo, hi, one_int = fp_t::zero();
    for (int i = 0; i < 12; i++) {
        lo.v[i] = t.v[i];
        hi.v[i] = t.v[12 + i];
    }
    one_int.v[0] = 1;
    return fp_t::mul_cios<1>(mod_p(lo), one_int) + mod_p(hi);
}

int main() {
    std::mt19937_64 rng(1);
    auto element = [&]() { return random_fp(rng); };
    fp_t p_minus_1;
    for (int i = 0; i < 12; i++) p_minus_1.v[i] = fp_t::P(i);
    p_minus_1.v[0] -= 1;
    std::vector<fp_t> edge = {fp_t::zero(), fp_t::one(), p_minus_1, fp_t::one() + fp_t::one()};
    for (int i = 0; i < 11; i++) {
        fp_t b = fp_t::zero();
        b.v[i] = 0xffffffff;
        edge.push_back(b);
    }
    // For the Karatsuba split: halves of all ones (a0 + a1 carries out of 2^192), and the
    // largest element below p with all-ones limbs (below 2^381: all but the top limb).
    {
        fp_t lo_ones = fp_t::zero(), hi_ones = fp_t::zero(), ones = fp_t::zero();
        for (int i = 0; i < 6; i++) lo_ones.v[i] = ones.v[i] = 0xffffffff;
        for (int i = 6; i < 11; i++) hi_ones.v[i] = ones.v[i] = 0xffffffff;
        hi_ones.v[11] = ones.v[11] = 0x0fffffff;
        edge.push_back(lo_ones);
        edge.push_back(hi_ones);
        edge.push_back(fp_t::reduce_once(ones));
        edge.push_back(p_minus_1 - fp_t::one());
    }
    long checked = 0, bad = 0;
    auto check = [&](const fp_t& a, const fp_t& b) {
        const fp_t ref = fp_t::mul_cios<1>(a, b);
        const fp_t got[] = {fp_t::mul_fios<2>(a, b), fp_t::mul_fios<4>(a, b),
                            fp_t::mul_fios<6>(a, b), fp_t::mul_fios<12>(a, b),
                            fp_t::mul<fp_t::FIOS_CALL>(a, b), fp_t::mul<fp_t::KARA>(a, b),
                            fp_t::mul<fp_t::KARA_LAZY>(a, b), fp_t::mul_kara(b, a),
                            fp_t::mul<fp_t::FIOS_LAZY>(a, b),
                            fp_t::mul<fp_t::FIOS_CALL_LAZY>(a, b)};
        for (const fp_t& g : got) bad += !(g == ref);
        bad += !wide_eq(fp_t::mul_wide(a, b), wide_ref(a.v, b.v));
        bad += !wide_eq(fp_t::mul_wide_school(a, b), wide_ref(a.v, b.v));
        checked++;
        if (&a == &b || a == b) {
            bad += !(fp_t::sqr_fios(a) == ref);
            bad += !(fp_t::square<fp_t::FIOS_SQR>(a) == ref);
            bad += !(fp_t::square<fp_t::KARA>(a) == ref);
        }
    };
    // a b - c d with one reduction against the difference of two CIOS products.
    long msm_checked = 0, msm_bad = 0;
    auto check_msm = [&](const fp_t& a, const fp_t& b, const fp_t& c, const fp_t& d) {
        const fp_t ref = fp_t::mul_cios<1>(a, b) - fp_t::mul_cios<1>(c, d);
        msm_bad += !(fp_t::mul_sub_mul(a, b, c, d) == ref);
        msm_bad += !(fp_t::mul_sub_mul<fp_t::FIOS_LAZY>(a, b, c, d) == ref);
        msm_bad += !(fp_t::mul_sub_mul<fp_t::FIOS_CALL_LAZY>(a, b, c, d) == ref);
        msm_checked++;
    };
    auto check_msm_cases = [&](const fp_t& a, const fp_t& b, const fp_t& c, const fp_t& d) {
        check_msm(a, b, c, d);
        check_msm(a, b, a, b);                        // a b == c d: zero
        check_msm(a, b, b, a);                        // the same, operands swapped
        check_msm(a, fp_t::zero(), c, d);             // a b = 0: -c d
        check_msm(a, b, fp_t::zero(), d);             // c d = 0: a b
        check_msm(a, b, c, fp_t::zero());
        check_msm(fp_t::zero(), b, c, fp_t::zero());  // both zero
        check_msm(a, a, c, c);
    };
    for (const fp_t& a : edge)
        for (const fp_t& b : edge) check(a, b);
    for (const fp_t& a : edge)
        for (const fp_t& b : edge) {
            check_msm_cases(a, b, p_minus_1, b);
            check_msm_cases(a, b, b, a);
            for (const fp_t& c : edge) check_msm(a, b, c, p_minus_1);
        }
    for (int k = 0; k < 200000; k++) {
        const fp_t a = element(), b = element();
        check(a, b);
        check(a, a);
        check(a, p_minus_1);
        const fp_t c = element(), d = element();
        if (k % 8 == 0) {  // the special cases on a share of the pairs: the check's run time
            check_msm_cases(a, b, c, d);
            check_msm(a, b, p_minus_1, p_minus_1);
            check_msm(p_minus_1, p_minus_1, c, d);
        } else {
            check_msm(a, b, c, d);
        }
    }
    printf("Fp products: %ld pairs checked against CIOS, %ld mismatches\n", checked, bad);
    printf("Fp a*b - c*d (one reduction): %ld checked against CIOS, %ld mismatches\n",
           msm_checked, msm_bad);

    // redc alone on wide values up to its bound p R, and the p^2 constant.
    long redc_bad = 0, redc_checked = 0;
    fp_t p_full;
    for (int i = 0; i < 12; i++) p_full.v[i] = fp_t::P(i);
    const wide_t p2 = wide_ref(p_full.v, p_full.v);
    for (int i = 0; i < 24; i++) redc_bad += p2.v[i] != fp_t::P2(i);
    {
        // p R - 1, 2 p^2 - 1, p^2, p^2 - 1, 2^384 - 1 (low half all ones), zero.
        std::vector<wide_t> ts;
        wide_t t{};
        for (int i = 0; i < 12; i++) t.v[12 + i] = fp_t::P(i);
        for (int i = 0; i < 12; i++) t.v[i] = 0xffffffff;
        t.v[12] -= 1;
        ts.push_back(t);
        wide_t t2{};
        uint64_t c = 0;
        for (int i = 0; i < 24; i++) {
            const uint64_t s2 = 2 * (uint64_t)p2.v[i] + c;
            t2.v[i] = (uint32_t)s2;
            c = s2 >> 32;
        }
        ts.push_back(t2);
        ts.push_back(p2);
        for (size_t k = 1, n = ts.size(); k < n; k++) {  // 2 p^2 - 1, p^2 - 1
            wide_t m = ts[k];
            for (int i = 0; i < 24 && m.v[i]-- == 0; i++) {
            }
            ts.push_back(m);
        }
        wide_t low_ones{};
        for (int i = 0; i < 12; i++) low_ones.v[i] = 0xffffffff;
        ts.push_back(low_ones);
        ts.push_back(wide_t{});
        for (const wide_t& w : ts) {
            redc_bad += !(fp_t::redc(w) == redc_ref(w));
            redc_checked++;
        }
    }
    for (int k = 0; k < 100000; k++) {
        // Random values below 2 p^2 (top limb below p^2's doubled) and below p R.
        wide_t w;
        for (int i = 0; i < 24; i++) w.v[i] = (uint32_t)rng();
        w.v[23] %= 2 * fp_t::P2(23);
        redc_bad += !(fp_t::redc(w) == redc_ref(w));
        w.v[23] = (uint32_t)rng() % fp_t::P(11);
        redc_bad += !(fp_t::redc(w) == redc_ref(w));
        redc_checked += 2;
    }
    printf("Fp redc: p^2 constant and %ld wide values up to p R, %ld mismatches\n", redc_checked,
           redc_bad);
    // Fp2 with lazy reduction (G2's FIOS_CALL_LAZY): the product, a b - c d, and the XYZZ
    // additions that use them (the lazy Y3 included), against Karatsuba over CIOS (U = 1).
    // The formulas are identities of the field, so points need not lie on the curve.
    long fp2_checked = 0, fp2_bad = 0;
    {
        constexpr int LAZY = fp_t::FIOS_CALL_LAZY;
        std::vector<fp2_t> e2;
        for (const fp_t& a : edge)
            for (const fp_t& b : {fp_t::zero(), fp_t::one(), p_minus_1, a}) e2.push_back({a, b});
        auto check2 = [&](const fp2_t& a, const fp2_t& b, const fp2_t& c, const fp2_t& d) {
            fp2_bad += !(fp2_t::mul<LAZY>(a, b) == fp2_t::mul<1>(a, b));
            fp2_bad += !(fp2_t::square<LAZY>(a) == fp2_t::square<1>(a));
            const fp2_t ref = fp2_t::mul<1>(a, b) - fp2_t::mul<1>(c, d);
            fp2_bad += !(fp2_t::mul_sub_mul<LAZY>(a, b, c, d) == ref);
            fp2_bad += !(fp2_t::mul_sub_mul<LAZY>(a, b, a, b) == fp2_t::zero());
            fp2_checked++;
        };
        for (size_t i = 0; i < e2.size(); i++)
            for (size_t j = 0; j < e2.size(); j += 3)
                check2(e2[i], e2[j], e2[(i + j) % e2.size()], e2[(i * 7 + 1) % e2.size()]);
        // c1's largest wide value in a b - c d (~5 p^2): (a0 + a1)(b0 + b1) and c0 d0, c1 d1
        // near p^2, a0 b0 and a1 b1 small.
        const fp_t pm2 = p_minus_1 - fp_t::one();
        check2({fp_t::one(), pm2}, {pm2, fp_t::one()}, {p_minus_1, p_minus_1},
               {p_minus_1, p_minus_1});
        auto elem2 = [&]() { return fp2_t{element(), element()}; };
        for (int k = 0; k < 20000; k++) check2(elem2(), elem2(), elem2(), elem2());
        using pt = xyzz_t<fp2_t>;
        for (int k = 0; k < 2000; k++) {
            const pt p0{elem2(), elem2(), elem2(), elem2()}, q{elem2(), elem2(), elem2(), elem2()};
            const affine_t<fp2_t> a{elem2(), elem2()};
            pt x = p0, y = p0;
            x.add_affine<LAZY>(a, k & 1);
            y.add_affine<1>(a, k & 1);
            const pt s = pt::sum_inline<LAZY>(p0, q), r = pt::sum_inline<1>(p0, q);
            fp2_bad += !(x.X == y.X && x.Y == y.Y && x.ZZ == y.ZZ && x.ZZZ == y.ZZZ);
            fp2_bad += !(s.X == r.X && s.Y == r.Y && s.ZZ == r.ZZ && s.ZZZ == r.ZZZ);
            fp2_checked += 2;
        }
    }
    printf("Fp2 lazy (product, a b - c d, XYZZ additions): %ld checks, %ld mismatches\n",
           fp2_checked, fp2_bad);
    // Inversions (the fold kernel's): a * a^-1 = 1, and 0^-1 = 0.
    long inv_bad = !(fp_t::zero().inv() == fp_t::zero());
    for (const fp_t& a : edge)
        if (!a.is_zero()) inv_bad += !(a * a.inv() == fp_t::one());
    for (int k = 0; k < 2000; k++) {
        const fp_t a = element();
        inv_bad += !(a * a.inv() == fp_t::one());
        const fp2_t b{element(), k % 7 == 0 ? fp_t::zero() : element()};
        inv_bad += !(b * b.inv() == fp2_t::one());
    }
    printf("Fp / Fp2 inversions: %ld mismatches\n", inv_bad);
    return bad != 0 || inv_bad != 0 || msm_bad != 0 || redc_bad != 0 || fp2_bad != 0;
}

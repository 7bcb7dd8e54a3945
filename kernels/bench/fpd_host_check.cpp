// Host check of the FP64 Fp product (field/fpd.cuh), no GPU: the CPU's fma is the same IEEE
// round-to-nearest operation as the GPU's DFMA, so this run is bit for bit the device's.
// Checks, each against big-integer arithmetic and fp_t::mul_cios<1> (the reference product):
//   1. the partial-product split (the claims in fpd.cuh's header) on random and edge operands;
//   2. the constant tables (p, p', 4p, 2^400 mod p, 2^384 mod p);
//   3. products on edge values, >= 200,000 random pairs, lazy first operands (a + b, a - b,
//      limbs at +-(2^51 - 1)), values near 2^9 p, the lazy conversion; every output is
//      checked normalized and < 2p;
//   4. chains of 1000 dependent products; normalize and is_zero.
//   g++ -O2 -std=c++17 kernels/bench/fpd_host_check.cpp -o fpd_host_check && ./fpd_host_check
#include <cstdio>
#include <random>
#include <vector>

#include "../cuda/field/fpd.cuh"
#include "random_fp.h"

using namespace fpd_detail;

// ---- A small two's-complement 512-bit integer for the reference -----------------------------
struct Big {
    uint32_t w[16] = {};
};
static Big shl(const Big& a, int s) {  // a 2^s (s >= 0), bits above 2^512 dropped
    Big r;
    const int ws = s / 32, bs = s % 32;
    for (int i = 15; i >= ws; i--) {
        uint64_t v = (uint64_t)a.w[i - ws] << bs;
        if (bs && i - ws - 1 >= 0) v |= a.w[i - ws - 1] >> (32 - bs);
        r.w[i] = (uint32_t)v;
    }
    return r;
}
static Big from_i64(int64_t val) {
    Big r;
    const uint32_t ext = val < 0 ? 0xffffffffu : 0;
    r.w[0] = (uint32_t)val;
    r.w[1] = (uint32_t)((uint64_t)val >> 32);
    for (int i = 2; i < 16; i++) r.w[i] = ext;
    return r;
}
static void add_to(Big& x, const Big& y) {
    uint64_t c = 0;
    for (int i = 0; i < 16; i++) {
        c += (uint64_t)x.w[i] + y.w[i];
        x.w[i] = (uint32_t)c;
        c >>= 32;
    }
}
static void add_shifted(Big& x, int64_t val, int shift) { add_to(x, shl(from_i64(val), shift)); }
static Big neg(const Big& x) {
    Big r;
    uint64_t c = 1;
    for (int i = 0; i < 16; i++) {
        c += (uint32_t)~x.w[i];
        r.w[i] = (uint32_t)c;
        c >>= 32;
    }
    return r;
}
static Big sub(const Big& a, const Big& b) {
    Big r = a;
    add_to(r, neg(b));
    return r;
}
static int cmp(const Big& a, const Big& b) {  // signed compare
    const bool na = a.w[15] >> 31, nb = b.w[15] >> 31;
    if (na != nb) return na ? -1 : 1;
    for (int i = 15; i >= 0; i--)
        if (a.w[i] != b.w[i]) return a.w[i] < b.w[i] ? -1 : 1;
    return 0;
}
static int64_t sar_small(const Big& a, int s) {  // floor(a / 2^s), result known to fit int64
    int64_t r = 0;
    for (int b = 63; b >= 0; b--) {
        const int bit = s + b < 512 ? s + b : 511;
        r = (int64_t)(((uint64_t)r << 1) | ((a.w[bit / 32] >> (bit % 32)) & 1));
    }
    return r;
}
static Big big_fpd(const fpd_t& x) {
    Big r;
    for (int i = 0; i < fpd_t::N; i++) add_shifted(r, (int64_t)x.v[i], 50 * i);
    return r;
}
static Big big_p() {
    Big r;
    for (int i = 0; i < 12; i++) r.w[i] = fp_t::P(i);
    return r;
}
static const Big P = big_p(), P2 = shl(P, 1), P512 = shl(P, 9);
// x mod p for 0 <= x < 2^17 p, as a canonical fp_t (integer, no form change).
static Big PS[17];
static fp_t canon(Big x) {
    for (int s = 16; s >= 0; s--)
        if (cmp(x, PS[s]) >= 0) x = sub(x, PS[s]);
    fp_t r;
    for (int i = 0; i < 12; i++) r.v[i] = x.w[i];
    return r;
}
static fp_t pow2_mod_p(int k) {  // 2^k mod p as a plain integer, by doubling
    fp_t r = fp_t::zero();
    r.v[0] = 1;
    for (int i = 0; i < k; i++) r = r + r;
    return r;
}
static const fp_t K368 = pow2_mod_p(368);
// The fp_t (R = 2^384) form of the element an fpd value (R = 2^400) holds, without fpd's
// product: (V mod p) 2^368 / 2^384 = V 2^-16.
static fp_t ref_to_fp(const fpd_t& x) { return fp_t::mul_cios<1>(canon(big_fpd(x)), K368); }

static bool normalized(const fpd_t& x) {
    for (double d : x.v)
        if (!(d >= 0 && d < 0x1p50 && d == (double)(int64_t)d)) return false;
    return true;
}
static bool lazy_ok(const fpd_t& x) {  // mul's first-operand contract
    for (double d : x.v)
        if (!(d > -0x1p51 && d < 0x1p51 && d == (double)(int64_t)d)) return false;
    const Big v = big_fpd(x);
    return cmp(v, Big{}) >= 0 && cmp(v, P512) < 0;
}

static long n_mul = 0, n_bad = 0, n_contract = 0;
// One product, checked: output normalized and < 2p, its element equal to the reference's.
// strict: also insist that the operands are inside mul's stated contract.
static void check_mul(const fpd_t& a, const fpd_t& b, bool strict = true) {
    if (strict && (!lazy_ok(a) || !normalized(b) || cmp(big_fpd(b), P512) >= 0)) {
        n_contract++;
        return;
    }
    const fpd_t r = fpd_t::mul(a, b);
    const fp_t want = fp_t::mul_cios<1>(ref_to_fp(a), ref_to_fp(b));
    bool ok = normalized(r) && cmp(big_fpd(r), P2) < 0 && ref_to_fp(r) == want;
    ok = ok && r.to_fp() == want;
    n_mul++;
    if (!ok && n_bad++ < 5) printf("  mismatch #%ld\n", n_mul);
}

int main() {
    for (int s = 0; s < 17; s++) PS[s] = shl(P, s);
    std::mt19937_64 rng(1);
    long bad_split = 0, n_split = 0, bad_const = 0;

    // 1. The split: a b = K 2^50 + L, |L| <= 2^49, and C12 - hi exact.
    auto split = [&](int64_t a, int64_t b) {
        uint64_t lo = 0ull - B2, hi = 0ull - B1;
        pp((double)a, (double)b, lo, hi);
        const __int128 ab = (__int128)a * b;
        const int64_t K = (int64_t)hi, L = (int64_t)lo;
        const double h = fma_rn((double)a, (double)b, C1);
        const double t = sub_rn(C12, h);
        bool ok = (__int128)K * ((__int128)1 << 50) + L == ab && L <= (1ll << 49) &&
                  L >= -(1ll << 49) && t == std::ldexp((double)(6 - K), 50) &&
                  bits(h) - B1 == (uint64_t)K;
        n_split++;
        bad_split += !ok;
    };
    const int64_t A = (1ll << 51) - 1, Bm = (1ll << 50) - 1;
    const int64_t edges_a[] = {0, 1, -1, A, -A, A - 1, -(A - 1), 1ll << 50, -(1ll << 50),
                               (1ll << 49) + 1, 3, 0x2ffffffffaaab};
    const int64_t edges_b[] = {0, 1, Bm, Bm - 1, 1ll << 49, (1ll << 49) + 1, 2, 0x680447a8};
    for (int64_t a : edges_a)
        for (int64_t b : edges_b) split(a, b);
    // Ties: a b = (2m + 1) 2^49 exactly, with a = 2^k odd-multiple patterns.
    for (int m = 0; m < 1000; m++) {
        const int64_t b = (1ll << 49);
        const int64_t a = ((int64_t)(rng() % (1ull << 50)) | 1) * ((m & 1) ? -1 : 1);
        split(a, b);
        split(a, 1ll << 48 | 1);
    }
    for (int k = 0; k < 5000000; k++) {
        const int64_t a = (int64_t)(rng() % (2ull * A + 1)) - A;
        const int64_t b = (int64_t)(rng() % (1ull << 50));
        split(a, b);
    }
    bad_split += C12 != C1 + C2 || bits(C12) != 0x4658000000000006ull || C12 - C1 != C2 ||
                 bits(C1) != B1 || bits(C2) != B2 || bits(TWO52) != B52;
    printf("split a*b = K*2^50 + L: %ld operand pairs, %ld mismatches\n", n_split, bad_split);

    // 2. Constants.
    {
        fpd_t p;
        for (int i = 0; i < 8; i++) p.v[i] = fpd_t::P(i);
        bad_const += !normalized(p) || cmp(big_fpd(p), P) != 0;
        uint64_t p64 = (uint64_t)fp_t::P(0) | (uint64_t)fp_t::P(1) << 32;
        bad_const += ((p64 * fpd_t::PINV + 1) & MASK) != 0;
        fpd_t p4;
        for (int i = 0; i < 8; i++) p4.v[i] = fpd_t::P4(i);
        bad_const += !normalized(p4) || cmp(big_fpd(p4), shl(P, 2)) != 0;
        bad_const += !normalized(fpd_t::r400()) || !(canon(big_fpd(fpd_t::r400())) == pow2_mod_p(400));
        bad_const += cmp(big_fpd(fpd_t::r400()), P) >= 0;
        bad_const += !normalized(fpd_t::r384()) || !(canon(big_fpd(fpd_t::r384())) == pow2_mod_p(384));
        bad_const += cmp(big_fpd(fpd_t::r384()), P) >= 0;
        for (int k = 0; k < 16; k++) {  // column offsets: count the terms the slow way
            uint64_t want = 0;
            for (int i = 0; i < 8; i++)
                for (int j = 0; j < 8; j++) {
                    if (i + j == k) want -= 2 * B2;
                    if (i + j + 1 == k) want -= 2 * B1;
                }
            bad_const += fpd_t::col_init(k) != want;
        }
        printf("constants: %ld mismatches\n", bad_const);
    }

    // 3. Products.
    auto element = [&]() { return random_fp(rng); };
    fp_t p_minus_1;
    for (int i = 0; i < 12; i++) p_minus_1.v[i] = fp_t::P(i);
    p_minus_1.v[0] -= 1;
    fp_t plain1 = fp_t::zero();
    plain1.v[0] = 1;
    std::vector<fp_t> edge_fp = {fp_t::zero(), fp_t::one(), plain1, p_minus_1,
                                 fp_t::one() + fp_t::one()};
    for (int i = 0; i < 11; i++) {
        fp_t b = fp_t::zero();
        b.v[i] = 0xffffffff;
        edge_fp.push_back(b);
    }
    // fpd edge values (normalized): converted fp_t edges, the raw p and p - 1 (reduced < 2p
    // values), all-ones limbs with the largest top limb below 2^9 p, 2^9 p - 1 - k.
    std::vector<fpd_t> edge;
    long conv_bad = 0;
    for (const fp_t& x : edge_fp) {
        const fpd_t d = fpd_t::from_fp(x);
        conv_bad += !normalized(d) || cmp(big_fpd(d), P2) >= 0 || !(ref_to_fp(d) == x) ||
                    !(d.to_fp() == x);
        edge.push_back(d);
    }
    auto from_big = [](Big v) {  // normalized limbs of 0 <= v < 2^400
        fpd_t r;
        for (int i = 0; i < 8; i++) {
            r.v[i] = (double)(sar_small(v, 50 * i) & (int64_t)MASK);
        }
        return r;
    };
    {
        Big pm1 = sub(P, Big{});
        edge.push_back(from_big(P));
        add_shifted(pm1, -1, 0);
        edge.push_back(from_big(pm1));
        for (int k = 0; k < 4; k++) {
            Big v = P512;
            add_shifted(v, -1 - k * 0x123456789ll, 0);
            edge.push_back(from_big(v));
        }
        fpd_t ones = fpd_t::zero();
        for (int i = 0; i < 7; i++) ones.v[i] = (double)MASK;
        ones.v[7] = (double)sar_small(sub(P512, big_fpd(ones)), 350);
        while (cmp(big_fpd(ones), P512) >= 0) ones.v[7] -= 1;
        edge.push_back(ones);
        fpd_t low = fpd_t::zero();
        for (int i = 0; i < 8; i++) low.v[i] = (double)MASK * (i < 7);
        edge.push_back(low);
    }
    for (const fpd_t& a : edge)
        for (const fpd_t& b : edge) check_mul(a, b);
    const long edge_muls = n_mul;

    // Max-bound lazy first operands: low limbs +-(2^51 - 1) (random signs, or all one sign),
    // top limb at its least, largest or a random value that keeps 0 <= V < 2^9 p.
    auto lazy_max = [&](int mode) {
        fpd_t x;
        for (int i = 0; i < 7; i++) {
            const bool negative = mode == 0 ? (rng() & 1) : mode == 1;
            x.v[i] = negative ? -(double)A : (double)A;
        }
        x.v[7] = 0;
        const Big low = big_fpd(x);
        const int64_t vmin = -sar_small(low, 350);                 // ceil(-low / 2^350)
        Big room = P512;
        add_shifted(room, -1, 0);
        const int64_t vmax = sar_small(sub(room, low), 350);       // floor((2^9p-1-low)/2^350)
        const int pick = (int)(rng() % 3);
        x.v[7] = (double)(pick == 0 ? vmin : pick == 1 ? vmax : vmin + (int64_t)(rng() % (vmax - vmin + 1)));
        return x;
    };
    long n_lazy_ops = 0;
    for (int k = 0; k < 20000; k++) {
        const fpd_t a = lazy_max(k % 3);
        n_lazy_ops += lazy_ok(a);
        check_mul(a, edge[k % edge.size()]);
        check_mul(a, fpd_t::from_fp(element()));
    }
    const long lazy_muls = n_mul - edge_muls;

    // Random pairs through the conversions, plus lazy sums / differences as first operand.
    long rand_muls0 = n_mul;
    for (int k = 0; k < 200000; k++) {
        const fp_t x = element(), y = element(), z = element();
        const fpd_t X = fpd_t::from_fp(x), Y = fpd_t::from_fp(y), Z = fpd_t::from_fp(z);
        if (k < 50000)
            conv_bad += !normalized(X) || cmp(big_fpd(X), P2) >= 0 || !(ref_to_fp(X) == x) ||
                        !(X.to_fp() == x);
        check_mul(X, Y);
        if (k % 4 == 0) {
            check_mul(X + Z, Y);           // < 4p, limbs < 2^51
            check_mul(X - Z, Y);           // a - b + 4p < 6p, limbs in (-2^50, 2^51)
            check_mul(X, X);
            // The lazy conversion (< 2^16 p) against an operand < 2p: outside the value
            // contract but inside the bound fpd.cuh states.
            check_mul(fpd_t::from_fp_lazy(x), Y, false);
        }
    }
    const long rand_muls = n_mul - rand_muls0;
    printf("conversions fp_t <-> fpd_t: %ld mismatches\n", conv_bad);

    // 4. Chains of 1000 dependent products, some through lazy add / sub.
    long chain_bad = 0, chain_muls = 0;
    for (int c = 0; c < 16; c++) {
        fp_t xr = element(), yr = element();
        const fp_t cr = element();
        fpd_t x = fpd_t::from_fp(xr), y = fpd_t::from_fp(yr);
        const fpd_t cd = fpd_t::from_fp(cr);
        for (int it = 0; it < 1000; it++) {
            if (c < 8) {
                x = fpd_t::mul(x, cd);
                xr = fp_t::mul_cios<1>(xr, cr);
            } else {  // x <- (x - y) c, y <- (x + y) y
                const fpd_t nx = fpd_t::mul(x - y, cd), ny = fpd_t::mul(x + y, y);
                const fp_t nxr = fp_t::mul_cios<1>(xr - yr, cr), nyr = fp_t::mul_cios<1>(xr + yr, yr);
                x = nx, y = ny, xr = nxr, yr = nyr;
                chain_muls++;
                chain_bad += !(ref_to_fp(y) == yr) || !normalized(y);
            }
            chain_muls++;
            chain_bad += !normalized(x) || cmp(big_fpd(x), P2) >= 0;
            if (it % 50 == 49) chain_bad += !(x.to_fp() == xr);
        }
        chain_bad += !(x.to_fp() == xr) || !(ref_to_fp(x) == xr);
    }

    // normalize and is_zero.
    long misc_bad = 0, misc = 0;
    for (int k = 0; k < 20000; k++) {
        const fpd_t X = fpd_t::from_fp(element()), Z = fpd_t::from_fp(element());
        const fpd_t lz[] = {X + Z, X - Z, lazy_max(k % 3)};
        for (const fpd_t& l : lz) {
            const fpd_t n = l.normalize();
            misc_bad += !normalized(n) || cmp(big_fpd(n), big_fpd(l)) != 0;
            misc++;
        }
        misc_bad += !(X - X).is_zero() || (X - Z).is_zero() != (X.to_fp() == Z.to_fp());
        misc_bad += fpd_t::zero().is_zero() != true || X.is_zero() != X.to_fp().is_zero();
        misc += 4;
    }

    printf("products: %ld checked (%ld edge pairs, %ld max-lazy, %ld random/lazy), "
           "%ld mismatches, %ld skipped as outside the contract\n",
           n_mul, edge_muls, lazy_muls, rand_muls, n_bad, n_contract);
    printf("max-bound lazy operands generated inside the contract: %ld of 20000\n", n_lazy_ops);
    printf("chains: 16 x 1000 dependent steps, %ld products, %ld mismatches\n", chain_muls, chain_bad);
    printf("normalize / is_zero: %ld checks, %ld mismatches\n", misc, misc_bad);
    const bool fail = bad_split || bad_const || conv_bad || n_bad || n_contract || chain_bad ||
                      misc_bad || n_lazy_ops != 20000;
    printf("%s\n", fail ? "FAIL" : "OK");
    return fail;
}

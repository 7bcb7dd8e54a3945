// One PTX instruction per function, so that a multi-limb carry chain can be written as a
// sequence of calls: the carry flag (CC.CF) flows from one call to the next. This is sound at
// the PTX level because the compiler emits no `.cc` instructions of its own between
// `asm volatile` statements, and ptxas treats CC as a true dependency.
//
// Outside nvcc's device pass (the host compiler of a plain C++ test) the same functions
// emulate the flag in a variable, so the field and curve code can be checked on a machine
// without a GPU against big-integer arithmetic.
#pragma once
#include <stdint.h>

#if defined(__CUDACC__)
#define CUZK_HD __host__ __device__ __forceinline__
#define CUZK_HD_NOINLINE __host__ __device__ __noinline__
#else
#define CUZK_HD inline
#define CUZK_HD_NOINLINE inline
#define __host__
#define __device__
#endif

namespace carry {

#if defined(__CUDA_ARCH__)

#define CUZK_PTX2(name, op)                                                        \
    __device__ __forceinline__ uint32_t name(uint32_t a, uint32_t b) {             \
        uint32_t r;                                                                \
        asm volatile(op " %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));                \
        return r;                                                                  \
    }
#define CUZK_PTX3(name, op)                                                        \
    __device__ __forceinline__ uint32_t name(uint32_t a, uint32_t b, uint32_t c) { \
        uint32_t r;                                                                \
        asm volatile(op " %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));    \
        return r;                                                                  \
    }

CUZK_PTX2(add_cc, "add.cc.u32")
CUZK_PTX2(addc_cc, "addc.cc.u32")
CUZK_PTX2(addc, "addc.u32")
CUZK_PTX2(sub_cc, "sub.cc.u32")
CUZK_PTX2(subc_cc, "subc.cc.u32")
CUZK_PTX2(subc, "subc.u32")
CUZK_PTX3(mad_lo_cc, "mad.lo.cc.u32")
CUZK_PTX3(madc_lo_cc, "madc.lo.cc.u32")
CUZK_PTX3(madc_lo, "madc.lo.u32")
CUZK_PTX3(mad_hi_cc, "mad.hi.cc.u32")
CUZK_PTX3(madc_hi_cc, "madc.hi.cc.u32")
CUZK_PTX3(madc_hi, "madc.hi.u32")
CUZK_PTX2(mul_lo, "mul.lo.u32")
CUZK_PTX2(mul_hi, "mul.hi.u32")

#undef CUZK_PTX2
#undef CUZK_PTX3

#else  // host emulation, for tests only

static uint32_t g_cf;  // the emulated carry (or borrow) flag

inline uint32_t add_cc(uint32_t a, uint32_t b) {
    uint64_t t = (uint64_t)a + b;
    g_cf = (uint32_t)(t >> 32);
    return (uint32_t)t;
}
inline uint32_t addc_cc(uint32_t a, uint32_t b) {
    uint64_t t = (uint64_t)a + b + g_cf;
    g_cf = (uint32_t)(t >> 32);
    return (uint32_t)t;
}
inline uint32_t addc(uint32_t a, uint32_t b) { return a + b + g_cf; }
inline uint32_t sub_cc(uint32_t a, uint32_t b) {
    g_cf = a < b;
    return a - b;
}
inline uint32_t subc_cc(uint32_t a, uint32_t b) {
    uint64_t t = (uint64_t)a - b - g_cf;
    g_cf = (uint32_t)(t >> 63);
    return (uint32_t)t;
}
inline uint32_t subc(uint32_t a, uint32_t b) { return a - b - g_cf; }
inline uint32_t lo(uint32_t a, uint32_t b) { return (uint32_t)((uint64_t)a * b); }
inline uint32_t hi(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }
inline uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) { return add_cc(lo(a, b), c); }
inline uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) { return addc_cc(lo(a, b), c); }
inline uint32_t madc_lo(uint32_t a, uint32_t b, uint32_t c) { return addc(lo(a, b), c); }
inline uint32_t mad_hi_cc(uint32_t a, uint32_t b, uint32_t c) { return add_cc(hi(a, b), c); }
inline uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) { return addc_cc(hi(a, b), c); }
inline uint32_t madc_hi(uint32_t a, uint32_t b, uint32_t c) { return addc(hi(a, b), c); }
inline uint32_t mul_lo(uint32_t a, uint32_t b) { return lo(a, b); }
inline uint32_t mul_hi(uint32_t a, uint32_t b) { return hi(a, b); }

#endif

}  // namespace carry

// ---------------------------------------------------------------------------------------
// Fp, the base field of BLS12-381, in exactly blst's representation: little-endian limbs,
// Montgomery form with R = 2^384. Twelve 32-bit limbs hold the same bytes as blst_fp's six
// 64-bit limbs (and R is the same), so blstrs points upload without conversion. 32-bit limbs
// because the GPU's integer multiplier is 32-bit (mad.lo/mad.hi).
// ---------------------------------------------------------------------------------------

// A product of two field elements before its reduction: 24 little-endian limbs (below p R;
// fp_t::mul_wide's below p^2). Separate from fp_t so that a formula can add or subtract
// products and reduce once (fp_t::redc, fp_t::mul_sub_mul).
struct wide_t {
    uint32_t v[24];
};

struct fp_t {
    static constexpr int N = 12;
    uint32_t v[N];

    // p = 0x1a0111ea...ffffaaab; p < 2^381 leaves 3 spare bits, which the multiplication's
    // bounds below rely on.
    CUZK_HD static uint32_t P(int i) {
        const uint32_t p[N] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe,
                               0xf6b0f624, 0x6730d2a0, 0xf38512bf, 0x64774b84,
                               0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
        return p[i];
    }
    static constexpr uint32_t PINV = 0xfffcfffd;  // -p^-1 mod 2^32
    // p^2 (< 2^762), 24 limbs: the offset that keeps a difference of two products (each
    // below p^2) non-negative without changing it mod p.
    CUZK_HD static uint32_t P2(int i) {
        const uint32_t q[2 * N] = {0x1c718e39, 0x26aa0000, 0x76382eab, 0x7ced6b1d, 0x62113cfd,
                                   0x162c3383, 0x3e71b743, 0x66bf91ed, 0x7091a049, 0x292e85a8,
                                   0x86185c7b, 0x1d68619c, 0x0978ef01, 0xf5314933, 0x16ddca6e,
                                   0x50a62cfd, 0x349e8bd0, 0x66e59e49, 0x0e7046b4, 0xe2dc90e5,
                                   0xa22f25e9, 0x4bd278ea, 0xb8c35fc7, 0x02a437a4};
        return q[i];
    }

    CUZK_HD static fp_t zero() {
        fp_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }
    // R mod p: one in Montgomery form.
    CUZK_HD static fp_t one() {
        const uint32_t o[N] = {0x0002fffd, 0x76090000, 0xc40c0002, 0xebf4000b,
                               0x53c758ba, 0x5f489857, 0x70525745, 0x77ce5853,
                               0xa256ec6d, 0x5c071a97, 0xfa80e493, 0x15f65ec3};
        fp_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = o[i];
        return r;
    }

    CUZK_HD bool is_zero() const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }
    CUZK_HD bool operator==(const fp_t& b) const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i] ^ b.v[i];
        return acc == 0;
    }

    // r = t - p if t >= p, else t. t < 2p on entry.
    CUZK_HD static fp_t reduce_once(const fp_t& t) {
        fp_t s;
        s.v[0] = carry::sub_cc(t.v[0], P(0));
#pragma unroll
        for (int i = 1; i < N; i++) s.v[i] = carry::subc_cc(t.v[i], P(i));
        uint32_t borrow = carry::subc(0, 0);  // 0xffffffff if t < p
        fp_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = borrow ? t.v[i] : s.v[i];
        return r;
    }

    CUZK_HD friend fp_t operator+(const fp_t& a, const fp_t& b) {
        // a, b < p < 2^381, so the sum fits in 12 limbs with no carry out.
        fp_t t;
        t.v[0] = carry::add_cc(a.v[0], b.v[0]);
#pragma unroll
        for (int i = 1; i < N - 1; i++) t.v[i] = carry::addc_cc(a.v[i], b.v[i]);
        t.v[N - 1] = carry::addc(a.v[N - 1], b.v[N - 1]);
        return reduce_once(t);
    }

    CUZK_HD friend fp_t operator-(const fp_t& a, const fp_t& b) {
        fp_t t;
        t.v[0] = carry::sub_cc(a.v[0], b.v[0]);
#pragma unroll
        for (int i = 1; i < N; i++) t.v[i] = carry::subc_cc(a.v[i], b.v[i]);
        uint32_t borrow = carry::subc(0, 0);
        // Add p back under a mask instead of a branch: no divergence inside a warp.
        fp_t r;
        r.v[0] = carry::add_cc(t.v[0], P(0) & borrow);
#pragma unroll
        for (int i = 1; i < N - 1; i++) r.v[i] = carry::addc_cc(t.v[i], P(i) & borrow);
        r.v[N - 1] = carry::addc(t.v[N - 1], P(N - 1) & borrow);
        return r;
    }

    CUZK_HD fp_t neg() const { return zero() - *this; }
    CUZK_HD fp_t dbl() const { return *this + *this; }

    // Montgomery multiplication, CIOS with one limb of b per round: t = (t + a*b_i + m*p)/2^32.
    // With a, b < p the running value stays below 2p < 2^382 between rounds and below
    // 2^416 inside a round, so 13 limbs suffice and t[12] is zero at the top of each round.
    // Each product row is two carry chains: the low halves of a_j*b_i land on limb j, the
    // high halves on limb j+1.
    //
    // U rounds are unrolled at a time. Fully unrolled (U = 12) the limb shifts vanish into
    // register renaming; rolled (U = 1) each round pays register moves (b rotates down a
    // limb, t shifts down a limb) but the code is 12 times smaller. Measured on the H200
    // (G1 2^24 bucket accumulation, 218M mixed additions): rolled 160 ms, unrolled 186 ms;
    // the unrolled loop body (~110 KB per mixed addition) no longer fits the instruction
    // cache. Unrolled, the module also took cicc minutes per architecture. The even/odd
    // FIOS product below replaced it (FAST_U); CIOS stays as the reference the harness
    // checks FIOS against.
    template <int U>
    CUZK_HD static fp_t mul_cios(const fp_t& a, const fp_t& b) {
        uint32_t t[N + 1], bb[N];
#pragma unroll
        for (int i = 0; i <= N; i++) t[i] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) bb[i] = b.v[i];
#pragma unroll U
        for (int i = 0; i < N; i++) {
            const uint32_t bi = bb[0];
#pragma unroll
            for (int j = 0; j < N - 1; j++) bb[j] = bb[j + 1];
            t[0] = carry::mad_lo_cc(a.v[0], bi, t[0]);
#pragma unroll
            for (int j = 1; j < N; j++) t[j] = carry::madc_lo_cc(a.v[j], bi, t[j]);
            t[N] = carry::addc(0, 0);

            t[1] = carry::mad_hi_cc(a.v[0], bi, t[1]);
#pragma unroll
            for (int j = 1; j < N - 1; j++) t[j + 1] = carry::madc_hi_cc(a.v[j], bi, t[j + 1]);
            t[N] = carry::madc_hi(a.v[N - 1], bi, t[N]);

            const uint32_t m = t[0] * PINV;
            t[0] = carry::mad_lo_cc(P(0), m, t[0]);  // becomes zero; only its carry matters
#pragma unroll
            for (int j = 1; j < N; j++) t[j] = carry::madc_lo_cc(P(j), m, t[j]);
            t[N] = carry::addc(t[N], 0);

            t[1] = carry::mad_hi_cc(P(0), m, t[1]);
#pragma unroll
            for (int j = 1; j < N - 1; j++) t[j + 1] = carry::madc_hi_cc(P(j), m, t[j + 1]);
            t[N] = carry::madc_hi(P(N - 1), m, t[N]);

#pragma unroll
            for (int j = 0; j < N; j++) t[j] = t[j + 1];
            t[N] = 0;
        }
        fp_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = t[i];
        return reduce_once(r);
    }

    // ------------------------------------------------------------------------------------
    // Even/odd FIOS (the layout of mont.cuh's Fr product, Emmart-Zheng-Weems 2018): the
    // accumulator is a pair (x, y) of N limbs worth x + y * 2^32; the products a[j] * b_i of
    // even j land on x's disjoint limb pairs and those of odd j on y's, so each row is two
    // unbroken mad.lo.cc/madc.hi.cc chains with no carry fix-ups, and the roles of x and y
    // swap from row to row instead of shifting limbs with register moves. Per row: 4N
    // multiplier instructions plus one for m, against CIOS's 4N plus its limb shifts and
    // carry words.

    // One row. On entry (not first) `lo` holds the previous y and `hi` the previous x, whose
    // limb 0 the last reduction made zero; dividing by 2^32 turns the old pair into
    // (y + x[1], x[2..]), which is what the shifted chain builds. On exit (lo, hi) is the
    // new (x, y) with x[0] == 0.
    CUZK_HD static void fios_row(uint32_t* lo, uint32_t* hi, const uint32_t* a, uint32_t bi,
                                 bool first) {
        if (first) {
#pragma unroll
            for (int j = 0; j < N; j += 2) {
                hi[j] = carry::mul_lo(a[j + 1], bi);
                hi[j + 1] = carry::mul_hi(a[j + 1], bi);
            }
#pragma unroll
            for (int j = 0; j < N; j += 2) {
                lo[j] = carry::mul_lo(a[j], bi);
                lo[j + 1] = carry::mul_hi(a[j], bi);
            }
        } else {
            plain_row<N>(lo, hi, a, bi);  // the product half of the row, shift included
        }
        fios_reduce(lo, hi);
    }

    // The reduction half of a row: adds m * p with m chosen so that limb 0 vanishes.
    CUZK_HD static void fios_reduce(uint32_t* lo, uint32_t* hi) {
        // m makes limb 0 vanish: lo[0] + m * p[0] == 0 mod 2^32.
        const uint32_t m = lo[0] * PINV;
        // Odd limbs of p into hi; its carry out is provably zero (spare top bits), so the
        // even chain starts fresh and its carry out lands in hi[N-1].
        hi[0] = carry::mad_lo_cc(P(1), m, hi[0]);
        hi[1] = carry::madc_hi_cc(P(1), m, hi[1]);
#pragma unroll
        for (int j = 2; j < N; j += 2) {
            hi[j] = carry::madc_lo_cc(P(j + 1), m, hi[j]);
            hi[j + 1] = carry::madc_hi_cc(P(j + 1), m, hi[j + 1]);
        }
        lo[0] = carry::mad_lo_cc(P(0), m, lo[0]);
        lo[1] = carry::madc_hi_cc(P(0), m, lo[1]);
#pragma unroll
        for (int j = 2; j < N; j += 2) {
            lo[j] = carry::madc_lo_cc(P(j), m, lo[j]);
            lo[j + 1] = carry::madc_hi_cc(P(j), m, lo[j + 1]);
        }
        hi[N - 1] = carry::addc(hi[N - 1], 0);
    }

    // Final state (y, x) with y[0] == 0: the value is x + y >> 32, below 2p.
    CUZK_HD static fp_t fios_finish(const uint32_t* x, const uint32_t* y) {
        fp_t r;
        r.v[0] = carry::add_cc(x[0], y[1]);
#pragma unroll
        for (int i = 1; i < N - 1; i++) r.v[i] = carry::addc_cc(x[i], y[i + 1]);
        r.v[N - 1] = carry::addc(x[N - 1], 0);
        return reduce_once(r);
    }

    // A row with b_i = 0 (the squaring's reduction): only the shift by one limb, a carry
    // chain of adds instead of multiply-adds.
    CUZK_HD static void fios_shift(uint32_t* lo, uint32_t* hi) {
        lo[0] = carry::add_cc(lo[0], hi[1]);
#pragma unroll
        for (int j = 0; j < N - 2; j++) hi[j] = carry::addc_cc(hi[j + 2], 0);
        hi[N - 2] = carry::addc(0, 0);
        hi[N - 1] = 0;
    }

    // acc += a[i] * a[j] << 32 (i + j) for j = j0, j0 + 2, ... < N: one carry chain over
    // limb pairs of one parity, its carry out into the limb above the chain. That limb is
    // either untouched so far or holds only an earlier row's carry (the rows' tops rise by
    // 0 or 2 limbs per row), so the add cannot overflow.
    CUZK_HD static void sqr_chain(uint32_t* acc, const uint32_t* a, int i, int j0) {
        acc[i + j0] = carry::mad_lo_cc(a[i], a[j0], acc[i + j0]);
        acc[i + j0 + 1] = carry::madc_hi_cc(a[i], a[j0], acc[i + j0 + 1]);
        int j = j0 + 2;
#pragma unroll
        for (; j < N; j += 2) {
            acc[i + j] = carry::madc_lo_cc(a[i], a[j], acc[i + j]);
            acc[i + j + 1] = carry::madc_hi_cc(a[i], a[j], acc[i + j + 1]);
        }
        acc[i + j] = carry::addc(acc[i + j], 0);
    }

    // a^2 with the square's symmetry: the N(N-1)/2 cross products once (two accumulators,
    // one per limb parity, so every chain is unbroken pairs), doubled, plus the N diagonal
    // products; then the Montgomery reduction of the low half t_lo by FIOS rows without the
    // product part, and the high half added: (t_lo + M p) / R <= p and t_hi < a^2 / R < p / 8,
    // so the sum is below 2p and one conditional subtraction makes it canonical, the same
    // integer mul(a, a) returns. 78 + 144 products against mul's 288, but ~190 more adds
    // (the doubling, and the reduction rows' shifts as add chains). Measured slower, so not
    // FAST_U: G1 2^24 bucket pass 99.2 against 97.3 ms with the two squares of a mixed
    // addition as mul (msm_harness, H200, bit-identical) -- the pass is bound by issue
    // slots more than by the multiplier pipe.
    CUZK_HD static fp_t sqr_fios(const fp_t& a) {
        uint32_t e[2 * N], o[2 * N];
#pragma unroll
        for (int k = 0; k < 2 * N; k++) e[k] = o[k] = 0;
#pragma unroll
        for (int i = 0; i < N - 1; i++) {
            sqr_chain(o, a.v, i, i + 1);
            if (i + 2 < N) sqr_chain(e, a.v, i, i + 2);
        }
        // t = 2 (e + o) + sum a_i^2 << 64 i, in e; each step's value stays below a^2 < 2^768.
        e[0] = carry::add_cc(e[0], o[0]);
#pragma unroll
        for (int k = 1; k < 2 * N - 1; k++) e[k] = carry::addc_cc(e[k], o[k]);
        e[2 * N - 1] = carry::addc(e[2 * N - 1], o[2 * N - 1]);
        e[0] = carry::add_cc(e[0], e[0]);
#pragma unroll
        for (int k = 1; k < 2 * N - 1; k++) e[k] = carry::addc_cc(e[k], e[k]);
        e[2 * N - 1] = carry::addc(e[2 * N - 1], e[2 * N - 1]);
        e[0] = carry::mad_lo_cc(a.v[0], a.v[0], e[0]);
        e[1] = carry::madc_hi_cc(a.v[0], a.v[0], e[1]);
#pragma unroll
        for (int i = 1; i < N - 1; i++) {
            e[2 * i] = carry::madc_lo_cc(a.v[i], a.v[i], e[2 * i]);
            e[2 * i + 1] = carry::madc_hi_cc(a.v[i], a.v[i], e[2 * i + 1]);
        }
        e[2 * N - 2] = carry::madc_lo_cc(a.v[N - 1], a.v[N - 1], e[2 * N - 2]);
        e[2 * N - 1] = carry::madc_hi(a.v[N - 1], a.v[N - 1], e[2 * N - 1]);

        // Reduction rows on (x, y) = (t_lo, 0), roles swapping as in mul_fios.
        uint32_t x[N], y[N];
#pragma unroll
        for (int k = 0; k < N; k++) {
            x[k] = e[k];
            y[k] = 0;
        }
        fios_reduce(x, y);
        fios_shift(y, x);
        fios_reduce(y, x);
#pragma unroll
        for (int r = 2; r < N; r += 2) {
            fios_shift(x, y);
            fios_reduce(x, y);
            fios_shift(y, x);
            fios_reduce(y, x);
        }
        fp_t r;
        r.v[0] = carry::add_cc(x[0], y[1]);
#pragma unroll
        for (int i = 1; i < N - 1; i++) r.v[i] = carry::addc_cc(x[i], y[i + 1]);
        r.v[N - 1] = carry::addc(x[N - 1], 0);
        r.v[0] = carry::add_cc(r.v[0], e[N]);
#pragma unroll
        for (int i = 1; i < N - 1; i++) r.v[i] = carry::addc_cc(r.v[i], e[N + i]);
        r.v[N - 1] = carry::addc(r.v[N - 1], e[2 * N - 1]);
        return reduce_once(r);
    }

    // ROWS rows per loop iteration (even, divides N). A rolled loop cannot index b's limbs
    // by the loop counter without sending them to local memory, so they rotate down ROWS
    // limbs per iteration (N - ROWS moves).
    template <int ROWS>
    CUZK_HD static fp_t mul_fios(const fp_t& a, const fp_t& b) {
        static_assert(ROWS % 2 == 0 && N % ROWS == 0, "rows per iteration");
        uint32_t x[N], y[N], bb[N];
#pragma unroll
        for (int i = 0; i < N; i++) bb[i] = b.v[i];
#pragma unroll
        for (int r = 0; r < ROWS; r += 2) {
            fios_row(x, y, a.v, bb[r], r == 0);
            fios_row(y, x, a.v, bb[r + 1], false);
        }
#pragma unroll 1
        for (int i = ROWS; i < N; i += ROWS) {
#pragma unroll
            for (int j = 0; j < N - ROWS; j++) bb[j] = bb[j + ROWS];
#pragma unroll
            for (int r = 0; r < ROWS; r += 2) {
                fios_row(x, y, a.v, bb[r], false);
                fios_row(y, x, a.v, bb[r + 1], false);
            }
        }
        return fios_finish(x, y);
    }

    // Fully unrolled, but one out-of-line copy that every call site shares: the
    // straight-line product without the instruction-cache cost of inlining it ten times.
    CUZK_HD_NOINLINE static fp_t mul_fios_call(fp_t a, fp_t b) { return mul_fios<N>(a, b); }

    // ------------------------------------------------------------------------------------
    // Karatsuba (KARA): the full 768-bit product from three 6x6-limb products, then one
    // Montgomery reduction of it. Wide products (IMAD.WIDE.U32.X, 4 multiplier cycles each):
    // 3 x 36 = 108 for the product and 12 x 12 = 144 for the reduction, 252 against FIOS's
    // 288, which interleaves the two. The price is ~130 adds and masks (the split sums, the
    // middle term, the assembly) where FIOS has ~40, on the bet that the bucket pass has
    // issue slots to spare but not multiplier cycles. Keeping the product and the reduction
    // apart also lets a formula reduce a difference of products once (mul_sub_mul).
    //
    // Measured, and lost (H200, msm_harness, G1 2^24 bucket pass at 2 blocks of 128 per SM,
    // bit-identical bucket sums): FIOS 95.9 ms, KARA 103.2 (+7.6%), KARA_LAZY 98.7, and
    // FIOS_LAZY (FIOS products, the lazy Y3 with schoolbook wide products) 91.9 (-4.2%).
    // Per mixed addition KARA has 430 fewer IMAD.WIDE (-12% multiplier cycles) but ~965
    // more instructions (+21%, mostly IADD3) and 248 registers against 174: the pass is not
    // bound by the multiplier alone, and the extra adds cost more than the products saved.

    // Product selectors (see mul), here because mul_sub_mul's default needs them.
    static constexpr int KARA = 400;
    static constexpr int KARA_LAZY = 500;
    static constexpr int FIOS_LAZY = 600;
    static constexpr int FIOS_CALL_LAZY = 700;
    // Whether the additions (mixed and full) under U form Y3 with mul_sub_mul<U>.
    template <int U>
    static constexpr bool LAZY_Y3 = U == KARA_LAZY || U == FIOS_LAZY || U == FIOS_CALL_LAZY;

    static constexpr int H = N / 2;  // the split: a = a0 + a1 2^192, six limbs each

    // One row of a plain (not Montgomery) K x K-limb product in fios_row's pair layout:
    // (lo, hi) is worth lo + hi 2^32, and lo[0] is the previous row's finished digit, so
    // the row drops it, shifts down a limb inside the chains (no register moves) and adds
    // a * bi. Two unbroken chains, so each mad.lo.cc/madc.hi.cc pair is one
    // IMAD.WIDE.U32.X. Bounds with every limb all ones: the hi chain is the old hi[2..]
    // (< 2^(32 (K-2))) plus the odd products (< 2^(32 K) - 2^(32 K - 32)), so it never
    // carries out; the running value stays below 2^(32 (K+1)), so the lo chain's carry
    // fits hi[K-1].
    template <int K>
    CUZK_HD static void plain_row(uint32_t* lo, uint32_t* hi, const uint32_t* a, uint32_t bi) {
        lo[0] = carry::add_cc(lo[0], hi[1]);
#pragma unroll
        for (int j = 0; j < K - 2; j += 2) {
            hi[j] = carry::madc_lo_cc(a[j + 1], bi, hi[j + 2]);
            hi[j + 1] = carry::madc_hi_cc(a[j + 1], bi, hi[j + 3]);
        }
        hi[K - 2] = carry::madc_lo_cc(a[K - 1], bi, 0);
        hi[K - 1] = carry::madc_hi(a[K - 1], bi, 0);
        lo[0] = carry::mad_lo_cc(a[0], bi, lo[0]);
        lo[1] = carry::madc_hi_cc(a[0], bi, lo[1]);
#pragma unroll
        for (int j = 2; j < K; j += 2) {
            lo[j] = carry::madc_lo_cc(a[j], bi, lo[j]);
            lo[j + 1] = carry::madc_hi_cc(a[j], bi, lo[j + 1]);
        }
        hi[K - 1] = carry::addc(hi[K - 1], 0);
    }

    // r[0..2K) = a * b for K-limb a, b (any limb values): K^2 wide products and ~3K adds.
    template <int K>
    CUZK_HD static void mul_plain(uint32_t* r, const uint32_t* a, const uint32_t* b) {
        static_assert(K % 2 == 0, "the last row must leave the pair as (y, x)");
        uint32_t x[K], y[K];
#pragma unroll
        for (int j = 0; j < K; j += 2) {
            y[j] = carry::mul_lo(a[j + 1], b[0]);
            y[j + 1] = carry::mul_hi(a[j + 1], b[0]);
        }
#pragma unroll
        for (int j = 0; j < K; j += 2) {
            x[j] = carry::mul_lo(a[j], b[0]);
            x[j + 1] = carry::mul_hi(a[j], b[0]);
        }
        r[0] = x[0];
#pragma unroll
        for (int i = 1; i < K; i += 2) {
            plain_row<K>(y, x, a, b[i]);
            r[i] = y[0];
            if (i + 1 < K) {
                plain_row<K>(x, y, a, b[i + 1]);
                r[i + 1] = x[0];
            }
        }
        // What is left above digit K-1 is y[1..] + x; the product is below 2^(64 K), so
        // nothing carries out of the top.
        r[K] = carry::add_cc(y[1], x[0]);
#pragma unroll
        for (int k = 1; k < K - 1; k++) r[K + k] = carry::addc_cc(y[k + 1], x[k]);
        r[2 * K - 1] = carry::addc(x[K - 1], 0);
    }

    // a * b as 24 limbs by schoolbook rows: 144 wide products, ~36 adds (FIOS_LAZY's).
    CUZK_HD static wide_t mul_wide_school(const fp_t& a, const fp_t& b) {
        wide_t w;
        mul_plain<N>(w.v, a.v, b.v);
        return w;
    }

    // a * b as 24 limbs, exact, for a, b < 2^382 (so a1, b1 < 2^190).
    //
    // The middle term comes from the sums, (a0 + a1)(b0 + b1) - a0 b0 - a1 b1, not from the
    // differences |a0 - a1| |b0 - b1|: a sum is one 6-limb add chain and a carry bit, and the
    // bits' cross terms cb (a0 + a1) + ca (b0 + b1) are two masked 6-limb adds (~26 ops for
    // both operands), where the differences need a subtraction, a masked conditional
    // negation each (~38 ops for both) and a sign-dependent add or subtract of the product.
    // The middle term a0 b1 + a1 b0 is below 2^383, so all of it is computed mod 2^384:
    // the sums' product is 12 limbs, ca cb 2^384 and every borrow out of the subtractions
    // drop.
    CUZK_HD static wide_t mul_wide(const fp_t& a, const fp_t& b) {
        uint32_t sa[H], sb[H];
        sa[0] = carry::add_cc(a.v[0], a.v[H]);
#pragma unroll
        for (int k = 1; k < H; k++) sa[k] = carry::addc_cc(a.v[k], a.v[H + k]);
        const uint32_t ma = 0u - carry::addc(0, 0);  // all ones where a0 + a1 >= 2^192
        sb[0] = carry::add_cc(b.v[0], b.v[H]);
#pragma unroll
        for (int k = 1; k < H; k++) sb[k] = carry::addc_cc(b.v[k], b.v[H + k]);
        const uint32_t mb = 0u - carry::addc(0, 0);

        uint32_t lo[N], hi[N], mid[N];
        mul_plain<H>(lo, a.v, b.v);
        mul_plain<H>(hi, a.v + H, b.v + H);
        mul_plain<H>(mid, sa, sb);

        mid[0] = carry::sub_cc(mid[0], lo[0]);
#pragma unroll
        for (int k = 1; k < N - 1; k++) mid[k] = carry::subc_cc(mid[k], lo[k]);
        mid[N - 1] = carry::subc(mid[N - 1], lo[N - 1]);
        mid[0] = carry::sub_cc(mid[0], hi[0]);
#pragma unroll
        for (int k = 1; k < N - 1; k++) mid[k] = carry::subc_cc(mid[k], hi[k]);
        mid[N - 1] = carry::subc(mid[N - 1], hi[N - 1]);
        mid[H] = carry::add_cc(mid[H], sb[0] & ma);
#pragma unroll
        for (int k = 1; k < H - 1; k++) mid[H + k] = carry::addc_cc(mid[H + k], sb[k] & ma);
        mid[N - 1] = carry::addc(mid[N - 1], sb[H - 1] & ma);
        mid[H] = carry::add_cc(mid[H], sa[0] & mb);
#pragma unroll
        for (int k = 1; k < H - 1; k++) mid[H + k] = carry::addc_cc(mid[H + k], sa[k] & mb);
        mid[N - 1] = carry::addc(mid[N - 1], sa[H - 1] & mb);

        // lo + mid 2^192 + hi 2^384 < 2^764: one chain from limb H, no carry out of the top.
        wide_t w;
#pragma unroll
        for (int k = 0; k < H; k++) w.v[k] = lo[k];
        w.v[H] = carry::add_cc(lo[H], mid[0]);
#pragma unroll
        for (int k = H + 1; k < N; k++) w.v[k] = carry::addc_cc(lo[k], mid[k - H]);
#pragma unroll
        for (int k = N; k < N + H; k++) w.v[k] = carry::addc_cc(hi[k - N], mid[k - H]);
#pragma unroll
        for (int k = N + H; k < 2 * N - 1; k++) w.v[k] = carry::addc_cc(hi[k - N], 0);
        w.v[2 * N - 1] = carry::addc(hi[N - 1], 0);
        return w;
    }

    // One reduction row of redc, in fios_row's pair layout with p in place of a and m in
    // place of b_i: the old lo[0] is zero (the previous row made it so), the shift by a limb
    // happens inside the chains, and the wide value's next limbs enter at the top (top_lo
    // at hi[N-2], top_hi at hi[N-1]) as they come into the 12-limb window. m is formed from
    // the shifted limb 0 with plain arithmetic, before the chain, so no carry flag has to
    // survive a non-chain instruction.
    // Bounds, for t < p R (t's top limb below 2^29): the hi chain is the old hi[2..] with
    // top_lo (< 2^352), top_hi 2^352 (< 2^381) and the odd limbs of p times m (< 2^381), so
    // it never carries out, and a row's hi (the next row's lo) is below 2^382. The lo chain
    // is that plus the even limbs of p times m (p's limb 10 is below 2^30: < 2^382), below
    // 2^383: it never carries out either, so unlike fios_reduce there is no carry to add
    // into hi[N-1] (11 adds per reduction saved; row 0, whose lo is t's full low half, keeps
    // its carry).
    CUZK_HD static void redc_row(uint32_t* lo, uint32_t* hi, uint32_t top_lo, uint32_t top_hi) {
        const uint32_t m = (lo[0] + hi[1]) * PINV;
        lo[0] = carry::add_cc(lo[0], hi[1]);
#pragma unroll
        for (int j = 0; j < N - 2; j += 2) {
            hi[j] = carry::madc_lo_cc(P(j + 1), m, hi[j + 2]);
            hi[j + 1] = carry::madc_hi_cc(P(j + 1), m, hi[j + 3]);
        }
        hi[N - 2] = carry::madc_lo_cc(P(N - 1), m, top_lo);
        hi[N - 1] = carry::madc_hi(P(N - 1), m, top_hi);
        lo[0] = carry::mad_lo_cc(P(0), m, lo[0]);
        lo[1] = carry::madc_hi_cc(P(0), m, lo[1]);
#pragma unroll
        for (int j = 2; j < N - 2; j += 2) {
            lo[j] = carry::madc_lo_cc(P(j), m, lo[j]);
            lo[j + 1] = carry::madc_hi_cc(P(j), m, lo[j + 1]);
        }
        lo[N - 2] = carry::madc_lo_cc(P(N - 2), m, lo[N - 2]);
        lo[N - 1] = carry::madc_hi(P(N - 2), m, lo[N - 1]);
    }

    // Montgomery reduction: t / R mod p, canonical, for any t < p R (a product of two
    // elements is below p^2, mul_sub_mul's sum below 2 p^2). 12 rows of 12 wide products
    // plus one IMAD each for m; the high half of t enters a limb per row instead of being
    // added at the end. The result before the final subtraction is (t + M p) / R < t / R + p
    // < 2p, so one reduce_once makes it the integer mul_cios<1> returns.
    CUZK_HD static fp_t redc(const wide_t& t) {
        uint32_t x[N], y[N];
#pragma unroll
        for (int k = 0; k < N; k++) {
            x[k] = t.v[k];
            y[k] = 0;
        }
        // Row 0 has nothing to shift: the plain reduction half of a row, as in sqr_fios.
        fios_reduce(x, y);
#pragma unroll
        for (int r = 1; r < N; r++) {
            const uint32_t top_lo = t.v[N - 1 + r];
            const uint32_t top_hi = r == N - 1 ? t.v[2 * N - 1] : 0;
            if (r & 1)
                redc_row(y, x, top_lo, top_hi);
            else
                redc_row(x, y, top_lo, top_hi);
        }
        return fios_finish(x, y);  // the last row (odd) leaves the pair as (y, x)
    }

    CUZK_HD static fp_t mul_kara(const fp_t& a, const fp_t& b) { return redc(mul_wide(a, b)); }

    template <int U>
    CUZK_HD static wide_t wide_of(const fp_t& a, const fp_t& b) {
        static_assert(LAZY_Y3<U>, "U names no wide product");
        if constexpr (U == FIOS_LAZY)
            return mul_wide_school(a, b);
        else if constexpr (U == FIOS_CALL_LAZY)
            return mul_wide_school_call(a, b);
        else
            return mul_wide(a, b);
    }
    CUZK_HD_NOINLINE static wide_t mul_wide_school_call(fp_t a, fp_t b) { return mul_wide_school(a, b); }

    // a b - c d mod p, canonical, with one reduction instead of two: the two wide products'
    // difference plus p^2 is in (0, 2 p^2) (each product is below p^2), a multiple of p
    // changes nothing mod p, and 2 p^2 < p R is within redc's range. With Karatsuba wide
    // products (U = KARA_LAZY) 216 + 144 wide products and ~48 adds for the difference,
    // against 2 x 252 and a field subtraction; with schoolbook ones (FIOS_LAZY) 288 + 144
    // against FIOS's 2 x 288.
    template <int U = KARA_LAZY>
    CUZK_HD static fp_t mul_sub_mul(const fp_t& a, const fp_t& b, const fp_t& c, const fp_t& d) {
        const wide_t t = wide_of<U>(c, d);
        wide_t w;
        w.v[0] = carry::sub_cc(P2(0), t.v[0]);
#pragma unroll
        for (int k = 1; k < 2 * N - 1; k++) w.v[k] = carry::subc_cc(P2(k), t.v[k]);
        w.v[2 * N - 1] = carry::subc(P2(2 * N - 1), t.v[2 * N - 1]);
        const wide_t s = wide_of<U>(a, b);
        w.v[0] = carry::add_cc(w.v[0], s.v[0]);
#pragma unroll
        for (int k = 1; k < 2 * N - 1; k++) w.v[k] = carry::addc_cc(w.v[k], s.v[k]);
        w.v[2 * N - 1] = carry::addc(w.v[2 * N - 1], s.v[2 * N - 1]);
        return redc(w);
    }

    // U selects the product (the hot formulas pass F::FAST_U):
    //   1..12            CIOS, U rounds per loop iteration
    //   FIOS_ROWS + k    even/odd FIOS, k rows per loop iteration (k = 2, 4, 6, 12)
    //   FIOS_CALL        even/odd FIOS, unrolled, out of line
    //   FIOS_SQR         even/odd FIOS, unrolled, inline; square() uses sqr_fios
    //   KARA             Karatsuba wide product, then redc (mul_kara), inline
    //   KARA_LAZY        KARA, and the G1 mixed addition (xyzz_t::add_affine) forms
    //                    Y3 = R (Q - X3) - Y1 PPP with one reduction (mul_sub_mul)
    //   FIOS_LAZY        even/odd FIOS, unrolled, inline, and the mixed addition's Y3 from
    //                    two schoolbook wide products and one reduction
    //   FIOS_CALL_LAZY   FIOS_LAZY with the products and wide products out of line (fewer
    //                    registers: more blocks per SM)
    static constexpr int FIOS_ROWS = 100;
    static constexpr int FIOS_CALL = 200;
    static constexpr int FIOS_SQR = 300;
    // KARA, KARA_LAZY, FIOS_LAZY: with the Karatsuba product above.
    template <int U>
    CUZK_HD static fp_t mul(const fp_t& a, const fp_t& b) {
        if constexpr (U == KARA || U == KARA_LAZY)
            return mul_kara(a, b);
        else if constexpr (U == FIOS_LAZY)
            return mul_fios<N>(a, b);
        else if constexpr (U == FIOS_SQR)
            return mul_fios<N>(a, b);
        else if constexpr (U == FIOS_CALL || U == FIOS_CALL_LAZY)
            return mul_fios_call(a, b);
        else if constexpr (U > FIOS_ROWS)
            return mul_fios<U - FIOS_ROWS>(a, b);
        else
            return mul_cios<U>(a, b);
    }

    CUZK_HD friend fp_t operator*(const fp_t& a, const fp_t& b) { return mul<FAST_U>(a, b); }
    CUZK_HD fp_t sqr() const { return mul<FAST_U>(*this, *this); }
    template <int U>
    CUZK_HD static fp_t square(const fp_t& a) {
        if constexpr (U == FIOS_SQR)
            return sqr_fios(a);
        else
            return mul<U>(a, a);
    }
    // a^(p-2) = a^-1 (zero gives zero), by square-and-multiply over p - 2's bits. About
    // 570 products: used only where a batch of inversions shares one (cuda/msm/fold.cuh).
    CUZK_HD_NOINLINE fp_t inv() const {
        fp_t r = one();
#pragma unroll 1
        for (int i = N - 1; i >= 0; i--) {
            const uint32_t e = P(i) - (i == 0 ? 2u : 0u);  // p is odd: no borrow
#pragma unroll 1
            for (int b = 31; b >= 0; b--) {
                r = mul<FIOS_CALL>(r, r);
                if ((e >> b) & 1) r = mul<FIOS_CALL>(r, *this);
            }
        }
        return r;
    }

    // The product every formula uses: even/odd FIOS, fully unrolled and inlined. Measured
    // on the H200 (kernels/bench/msm_harness.cu, G1 2^24 bucket pass, 218M mixed additions,
    // bit-identical bucket sums): CIOS rolled 157.3 ms, FIOS 2 / 4 rows per iteration 108.3
    // / 103.2, FIOS unrolled out of line 105.9, FIOS unrolled inline 99.5 (97.2 at 3 blocks
    // per SM). ptxas fuses each mad.lo.cc/madc.hi.cc pair of the two chains into one
    // IMAD.WIDE.U32.X, where CIOS's separate low and high rows cost an IMAD plus an IADD3.X
    // per product: 113 SASS instructions per CIOS round against ~50 per FIOS row. Unrolled,
    // the G1 bucket kernel is ~6,200 instructions (~100 KB) and still the fastest.
    // FIOS_LAZY adds one reduction fewer per addition's Y3: 4.2% off the bucket pass in the
    // harness (NOTES, part 10). CUZK_NVCC_FLAGS=-DCUZK_FP_FAST_U=112 builds the crate with
    // plain FIOS (scripts/device-bundle.sh ALT_NVCC_FLAGS, device-scale.sh product: the A/B
    // through the daemon).
#ifdef CUZK_FP_FAST_U
    static constexpr int FAST_U = CUZK_FP_FAST_U;
#else
    static constexpr int FAST_U = FIOS_LAZY;
#endif
};

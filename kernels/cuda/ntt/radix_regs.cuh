// One pass of a radix-2^m NTT with 2^R points per thread held in registers.
//
// Same decomposition as radix_pass.cuh (a pass covers index bits [lo, lo + m) of 2^(m + c)
// elements: 2^m rows strided by 2^lo times 2^c adjacent columns; the four-step twiddle
// between passes), but each thread owns 2^R rows of one column and runs R radix-2 stages on
// them in registers before the tile goes through shared memory again. A pass of m = 10 thus
// takes 3 shared-memory exchanges (R = 3) instead of 10, with 12 independent-ish products per
// round instead of one per barrier; the first round reads global memory straight into
// registers and the last writes straight out.
//
// Rounds: DIF walks the row bits from the top, each round covering the window
// [w0, w0 + R) and doing the stages of that window (the first round does only m mod R of
// them when R does not divide m); DIT walks the same windows bottom up. The bottom window
// [0, R) always comes last in DIF and first in DIT, and there a stage's twiddle index is a
// compile-time function of the register index, so the butterflies whose twiddle is 1 skip
// the multiplication (3 of 4 at R = 2, 7 of 12 at R = 3): 0.75 (0.875) products per element
// per pass saved, against 0.5 for radix-2 in shared memory.
//
// The bottom window is also where the four-step twiddle lives (DIF: after the last stage,
// DIT: before the first), the scale of a first pass (coset shift, 1/n), and, for the last
// pass of a DIF transform (lo = 0), the bit-reversal: the pass writes element p to
// out[rev_L(p)] (times an optional scale by the destination index) instead of needing a
// permutation pass of its own.
#pragma once

#include "butterfly.cuh"
#include "twiddles.cuh"

namespace cuzk {

constexpr uint32_t NTT_REG_LOG_TILE = 10;  // elements per block: 2^(m + c) <= 1024
// Element e of the tile lives at e + e / 8 (in 16-byte units, per plane): with R = 3 every
// quarter warp's 16-byte accesses hit 8 distinct bank groups, whatever the window and column
// count (checked exhaustively for all m, c, windows); R = 2 has 2-way conflicts in a few
// (c = 1 or 2 with the bottom window), no simple padding or xor swizzle removes all of them.
constexpr uint32_t NTT_REG_PLANE = (1u << NTT_REG_LOG_TILE) + (1u << NTT_REG_LOG_TILE) / 8;

__device__ __forceinline__ uint32_t reg_tile_slot(uint32_t e) { return e + (e >> 3); }

#ifndef NTT_REG_TWIDDLE_INLINE
#define NTT_REG_TWIDDLE_INLINE 0
#endif
#ifndef NTT_REG_STREAMING
#define NTT_REG_STREAMING 0
#endif

// The vector is read and written once per pass: with streaming hints its lines are evicted
// first, leaving L1/L2 to the twiddle tables.
__device__ __forceinline__ fr_t load_data(const fr_t* p)
{
#if NTT_REG_STREAMING
    const uint4* q = reinterpret_cast<const uint4*>(p);
    return fr_t::from_halves(__ldcs(q), __ldcs(q + 1));
#else
    return fr_t::load(p);
#endif
}

__device__ __forceinline__ void store_data(fr_t* p, const fr_t& x)
{
#if NTT_REG_STREAMING
    uint4* q = reinterpret_cast<uint4*>(p);
    __stcs(q, x.half(0));
    __stcs(q + 1, x.half(1));
#else
    x.store(p);
#endif
}

// The parameters of one pass, passed by value to the kernel.
struct reg_pass_args {
    const fr_t* in;
    fr_t* out;        // == in except for a bit-reversing last pass
    uint32_t L;       // log2 of the domain
    uint32_t lo, m, c;
    const fr_t* roots;     // w_1024^e, e < 512 (or their inverses)
    pow_table tw;          // four-step twiddles x^e, e < 2^L, from two tables ...
    const fr_t* tw_direct; // ... or, when not null, one table of w_N^e, N = 2^(lo + m)
    pow_table scale;       // optional: input x natural index x scale(i) (first pass only)
    pow_table out_scale;   // optional: bit-reversed output x scale(destination index)
    uint32_t bitrev_out;   // DIF with lo == 0 only: write out[rev_L(p)]
};

template <int R>
struct reg_pass {
    static constexpr int P = 1 << R;  // points per thread

    // The radix-2 stages of one window on the thread's registers. x[i] is row
    // row_base | (i << w0); stage j of the window is index bit b = w0 + j; its twiddle for
    // the pair (i, i + 2^j) is w_{2^(b+1)}^fl with fl = (row_base mod 2^w0) | (i mod 2^j) << w0,
    // which is roots[fl << (9 - b)]. Stages j < jmin are not this round's (the top window
    // when R does not divide m).
    template <bool DIT, bool BOTTOM>
    __device__ __forceinline__ static void stages(fr_t (&x)[P], uint32_t w0, uint32_t fbase,
                                                  int jmin, const fr_t* roots)
    {
#pragma unroll
        for (int jj = 0; jj < R; jj++) {
            const int j = DIT ? jj : R - 1 - jj;
            if (j < jmin) continue;
            const uint32_t b = w0 + j;
            const int h = 1 << j;
#if NTT_REG_TWIDDLE_INLINE
            // Each butterfly loads its twiddle just before use (L1 hits): fewer live registers.
#pragma unroll
            for (int i = 0; i < P; i++) {
                if (i & h) continue;
                const int k = i & (h - 1);
                if (BOTTOM && k == 0) {
                    butterfly_plain(x[i], x[i + h]);
                    continue;
                }
                const fr_t w = pow_table::ldg(roots + ((fbase | ((uint32_t)k << w0)) << (9 - b)));
                if (DIT)
                    butterfly_dit(x[i], x[i + h], w);
                else
                    butterfly_dif(x[i], x[i + h], w);
            }
#else
            fr_t w[P / 2];
#pragma unroll
            for (int k = 0; k < h; k++)
                if (!(BOTTOM && k == 0))
                    w[k] = pow_table::ldg(roots + ((fbase | ((uint32_t)k << w0)) << (9 - b)));
#pragma unroll
            for (int i = 0; i < P; i++) {
                if (i & h) continue;
                const int k = i & (h - 1);
                if (BOTTOM && k == 0)
                    butterfly_plain(x[i], x[i + h]);
                else if (DIT)
                    butterfly_dit(x[i], x[i + h], w[k]);
                else
                    butterfly_dif(x[i], x[i + h], w[k]);
            }
#endif
        }
    }

    // Four-step twiddle of tile position (row, column): w_N^(col k1), k1 = rev_m(row),
    // N = 2^(lo + m).
    __device__ __forceinline__ static fr_t four_step(const reg_pass_args& a, uint32_t row,
                                                     uint32_t col)
    {
        uint32_t e = col * bit_rev(row, a.m);
        if (a.tw_direct) return pow_table::ldg(a.tw_direct + e);
        return a.tw(e << (a.L - a.lo - a.m));
    }

    template <bool DIT>
    __device__ __forceinline__ static void run(const reg_pass_args& a, uint32_t block)
    {
        __shared__ uint4 smem[2 * NTT_REG_PLANE];

        const uint32_t lo = a.lo, m = a.m, c = a.c;
        const uint32_t C = 1u << c;
        const uint32_t tid = threadIdx.x;
        const uint32_t chunk_bits = lo - c;  // column chunks per sub-problem: 2^(lo - c)
        const uint64_t sub = block >> chunk_bits;
        const uint32_t col0 = (block & ((1u << chunk_bits) - 1)) << c;
        const uint64_t base = (sub << (lo + m)) + col0;
        const uint32_t col = tid & (C - 1);
        const uint32_t rest = tid >> c;  // the m - R row bits outside the window

        // Windows: the top one is [m - R, m) and does only its stages j >= jtop; below it
        // [R (rounds - 1 - rr), + R) for rr = 1 .. rounds - 1, the last being [0, R).
        const int rounds = (m + R - 1) / R;
        const int jtop = (int)(rounds * R - m);  // stages j < jtop of the top window are skipped

        fr_t x[P];
        auto row_of = [&](uint32_t w0, int i) -> uint32_t {
            return ((rest >> w0) << (w0 + R)) | (rest & ((1u << w0) - 1)) | ((uint32_t)i << w0);
        };
        auto global_index = [&](uint32_t row) -> uint64_t {
            return base + ((uint64_t)row << lo) + col;
        };
        auto smem_get = [&](uint32_t e) -> fr_t {
            uint32_t s = reg_tile_slot(e);
            return fr_t::from_halves(smem[s], smem[NTT_REG_PLANE + s]);
        };
        auto smem_put = [&](uint32_t e, const fr_t& v) {
            uint32_t s = reg_tile_slot(e);
            smem[s] = v.half(0);
            smem[NTT_REG_PLANE + s] = v.half(1);
        };

        for (int r = 0; r < rounds; r++) {
            // DIF: round r has window top - R r (the top window first, clamped to 0 at the
            // bottom); DIT: the reverse order.
            const int rr = DIT ? rounds - 1 - r : r;
            const uint32_t w0 = rr == 0 ? m - R : (uint32_t)(R * (rounds - 1 - rr));
            const int jmin = rr == 0 ? jtop : 0;
            const bool first = r == 0, last = r == rounds - 1;

            if (first) {
#pragma unroll
                for (int i = 0; i < P; i++) {
                    const uint32_t row = row_of(w0, i);
                    const uint64_t g = global_index(row);
                    x[i] = load_data(a.in + g);
                    if (a.scale.present()) {
                        const uint32_t nat = DIT ? bit_rev((uint32_t)g, a.L) : (uint32_t)g;
                        x[i] *= a.scale(nat);
                    }
                    if (DIT && lo != 0) x[i] *= four_step(a, row, col0 + col);
                }
            } else {
#pragma unroll
                for (int i = 0; i < P; i++) x[i] = smem_get((row_of(w0, i) << c) | col);
            }

            if (w0 == 0)  // the bottom window; jmin is 0 there
                stages<DIT, true>(x, 0, 0, jmin, a.roots);
            else
                stages<DIT, false>(x, w0, rest & ((1u << w0) - 1), jmin, a.roots);

            if (last) {
#pragma unroll
                for (int i = 0; i < P; i++) {
                    const uint32_t row = row_of(w0, i);
                    const uint64_t g = global_index(row);
                    if (!DIT && lo != 0) x[i] *= four_step(a, row, col0 + col);
                    if (!DIT && a.bitrev_out) {
                        const uint32_t dst = bit_rev((uint32_t)g, a.L);
                        if (a.out_scale.present()) x[i] *= a.out_scale(dst);
                        store_data(a.out + dst, x[i]);
                    } else {
                        store_data(a.out + g, x[i]);
                    }
                }
            } else {
                // A round writes back exactly the slots it read (its own rows), so one
                // barrier per round, between the writes and the next window's reads, suffices.
#pragma unroll
                for (int i = 0; i < P; i++) smem_put((row_of(w0, i) << c) | col, x[i]);
                __syncthreads();
            }
        }
    }
};

}  // namespace cuzk

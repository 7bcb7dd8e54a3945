// One pass of a radix-2^m NTT through shared memory.
//
// A domain of 2^L is transformed in a few passes, each covering m consecutive index bits
// [lo, lo + m): a block loads 2^m elements strided by 2^lo ("a column"), times 2^c adjacent
// columns so that global reads and writes come in runs of 2^c * 32 bytes, does m radix-2
// stages on them in shared memory, and writes them back in place. With m up to 10, a 2^24
// domain takes three passes over global memory instead of 24.
//
// Between passes sits the four-step twiddle: in the DIF order, after the pass over bits
// [lo, lo + m) of a sub-problem of size N = 2^(lo + m), the element at row j (bit-reversed
// output index k1 = rev_m(j)) of column j2 is multiplied by w_N^(j2 k1). DIT is the
// transpose of DIF, so it applies the same factor to the same position *before* its local
// stages, and runs the passes in the opposite order.
#pragma once

#include "butterfly.cuh"
#include "twiddles.cuh"

namespace cuzk {

constexpr uint32_t NTT_MAX_LOG_RADIX = 10;  // the roots table holds w_1024^e, e < 512
constexpr uint32_t NTT_LOG_BLOCK = 10;      // elements per block: 2^(m + c) <= 1024
constexpr uint32_t NTT_BLOCK = 1u << NTT_LOG_BLOCK;
constexpr uint32_t NTT_THREADS = NTT_BLOCK / 2;  // one butterfly per thread per stage
// The two 16-byte halves of an element live in two planes; the second plane starts 64 bytes
// past a 128-byte line so that a quarter warp touching 4 whole elements hits 32 banks.
constexpr uint32_t NTT_PLANE = NTT_BLOCK + 4;

struct smem_tile {
    uint4* s;
    __device__ __forceinline__ fr_t get(uint32_t e) const
    {
        return fr_t::from_halves(s[e], s[NTT_PLANE + e]);
    }
    __device__ __forceinline__ void put(uint32_t e, const fr_t& x) const
    {
        s[e] = x.half(0);
        s[NTT_PLANE + e] = x.half(1);
    }
};

// The inter-pass twiddle of the element at tile position (row, col) of a pass over bits
// [lo, lo + m) of a 2^L domain whose block starts at column `col0`.
__device__ __forceinline__ fr_t pass_twiddle(const pow_table& tw, uint32_t L, uint32_t lo,
                                             uint32_t m, uint32_t row, uint32_t col)
{
    uint32_t k1 = bit_rev(row, m);
    uint32_t e = (col * k1) << (L - lo - m);
    return tw(e);
}

// DIT = false: natural-order input bits [lo, lo + m) to bit-reversed (DIF).
// DIT = true: the reverse (bit-reversed input, natural output).
// `scale` (optional) multiplies each input element by scale(natural index of the element),
// where the natural index is the position in DIF and rev_L(position) in DIT: a coset shift
// g^i or a 1/n folded into the first pass instead of costing a pass of its own.
template <bool DIT>
__device__ __forceinline__ void radix_pass(fr_t* data, uint32_t L, uint32_t lo, uint32_t m,
                                           uint32_t c, const fr_t* roots, pow_table tw,
                                           pow_table scale)
{
    __shared__ uint4 smem[2 * NTT_PLANE];
    const smem_tile tile{smem};

    const uint32_t C = 1u << c;
    const uint32_t elems = 1u << (m + c);
    const uint32_t tid = threadIdx.x;
    const uint32_t chunk_bits = lo - c;  // column chunks per sub-problem: 2^(lo - c)
    const uint64_t sub = blockIdx.x >> chunk_bits;
    const uint32_t col0 = (blockIdx.x & ((1u << chunk_bits) - 1)) << c;
    const uint64_t base = (sub << (lo + m)) + col0;
    const uint4* src = reinterpret_cast<const uint4*>(data);
    uint4* dst = reinterpret_cast<uint4*>(data);

    // Consecutive threads take consecutive 16-byte halves of a run of C elements.
#pragma unroll 4
    for (uint32_t k = tid; k < 2 * elems; k += NTT_THREADS) {
        uint32_t e = k >> 1, h = k & 1;
        uint64_t g = base + ((uint64_t)(e >> c) << lo) + (e & (C - 1));
        smem[h * NTT_PLANE + e] = src[2 * g + h];
    }
    __syncthreads();

    const bool active = tid < elems / 2;
    const uint32_t col = tid & (C - 1);
    const uint32_t f = tid >> c;
    const bool twiddled = lo != 0;  // the lo == 0 pass is where the four-step factor is 1

    for (uint32_t s = 0; s < m; s++) {
        const uint32_t b = DIT ? s : m - 1 - s;
        if (active) {
            const uint32_t fl = f & ((1u << b) - 1);
            const uint32_t r1 = ((f >> b) << (b + 1)) | fl, r2 = r1 + (1u << b);
            const uint32_t e1 = (r1 << c) | col, e2 = (r2 << c) | col;
            fr_t u = tile.get(e1), v = tile.get(e2);

            if (s == 0) {
                if (scale.present()) {
                    uint64_t g1 = base + ((uint64_t)r1 << lo) + col;
                    uint64_t g2 = base + ((uint64_t)r2 << lo) + col;
                    uint32_t i1 = DIT ? bit_rev((uint32_t)g1, L) : (uint32_t)g1;
                    uint32_t i2 = DIT ? bit_rev((uint32_t)g2, L) : (uint32_t)g2;
                    u *= scale(i1);
                    v *= scale(i2);
                }
                if (DIT && twiddled) {
                    u *= pass_twiddle(tw, L, lo, m, r1, col0 + col);
                    v *= pass_twiddle(tw, L, lo, m, r2, col0 + col);
                }
            }

            if (b == 0) {
                butterfly_plain(u, v);
            } else {
                fr_t w = pow_table::ldg(roots + (fl << (NTT_MAX_LOG_RADIX - 1 - b)));
                if (DIT)
                    butterfly_dit(u, v, w);
                else
                    butterfly_dif(u, v, w);
            }

            if (!DIT && twiddled && s == m - 1) {
                u *= pass_twiddle(tw, L, lo, m, r1, col0 + col);
                v *= pass_twiddle(tw, L, lo, m, r2, col0 + col);
            }
            tile.put(e1, u);
            tile.put(e2, v);
        }
        __syncthreads();
    }

#pragma unroll 4
    for (uint32_t k = tid; k < 2 * elems; k += NTT_THREADS) {
        uint32_t e = k >> 1, h = k & 1;
        uint64_t g = base + ((uint64_t)(e >> c) << lo) + (e & (C - 1));
        dst[2 * g + h] = smem[h * NTT_PLANE + e];
    }
}

}  // namespace cuzk

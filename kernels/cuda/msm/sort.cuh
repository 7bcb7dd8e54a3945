// Bucket sort of (window, point) pairs by bucket, as a counting sort: every nonzero digit
// takes a rank in its bucket with one atomic increment, an exclusive scan of the bucket
// counts gives each bucket's start, and a scatter writes point indices (sign in bit 31) in
// bucket order. No comparison sort is needed because the key is the bucket index itself;
// the order inside a bucket is arbitrary, which is harmless since group addition commutes.
#pragma once
#include "scalar.cuh"

// Bucket (w, d) lives at w * buckets_per_window + d; d = 0 is never used.
struct msm_layout {
    uint32_t n, c, nwin, buckets_per_window;
};

__device__ __forceinline__ void load_scalar(const uint32_t* scalars, uint32_t i, uint32_t s[8]) {
    const uint4* p = reinterpret_cast<const uint4*>(scalars + 8 * (size_t)i);
    uint4 a = p[0], b = p[1];
    s[0] = a.x, s[1] = a.y, s[2] = a.z, s[3] = a.w;
    s[4] = b.x, s[5] = b.y, s[6] = b.z, s[7] = b.w;
}

__device__ __forceinline__ void scalars_to_canonical(uint32_t* scalars, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t s[8];
    load_scalar(scalars, i, s);
    fr_canonical::from_montgomery(s);
    uint4* p = reinterpret_cast<uint4*>(scalars + 8 * (size_t)i);
    p[0] = make_uint4(s[0], s[1], s[2], s[3]);
    p[1] = make_uint4(s[4], s[5], s[6], s[7]);
}

__device__ __forceinline__ void count_digits(const uint32_t* scalars, msm_layout lay,
                                             uint32_t* counts, uint32_t* ranks) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= lay.n) return;
    uint32_t s[8];
    load_scalar(scalars, i, s);
    digit_reader rd{s, lay.c};
    for (uint32_t w = 0; w < lay.nwin; w++) {
        uint32_t mag;
        bool neg;
        rd.next(w, mag, neg);
        if (mag != 0)
            ranks[(size_t)w * lay.n + i] = atomicAdd(&counts[w * lay.buckets_per_window + mag], 1u);
    }
}

__device__ __forceinline__ void scatter_digits(const uint32_t* scalars, msm_layout lay,
                                               const uint32_t* offsets, const uint32_t* ranks,
                                               uint32_t* sorted) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= lay.n) return;
    uint32_t s[8];
    load_scalar(scalars, i, s);
    digit_reader rd{s, lay.c};
    for (uint32_t w = 0; w < lay.nwin; w++) {
        uint32_t mag;
        bool neg;
        rd.next(w, mag, neg);
        if (mag != 0) {
            const uint32_t pos =
                offsets[w * lay.buckets_per_window + mag] + ranks[(size_t)w * lay.n + i];
            sorted[pos] = i | ((uint32_t)neg << 31);
        }
    }
}

// Exclusive scan in three launches: scan each block of 1024, scan the block totals in one
// block, add them back. out has n + 1 entries; out[n] is the total.
__device__ __forceinline__ uint32_t block_inclusive_scan(uint32_t x) {
    __shared__ uint32_t warp_tot[32];
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (uint32_t off = 1; off < 32; off <<= 1) {
        uint32_t y = __shfl_up_sync(0xffffffffu, x, off);
        if (lane >= off) x += y;
    }
    if (lane == 31) warp_tot[warp] = x;
    __syncthreads();
    if (warp == 0) {
        uint32_t t = lane < (blockDim.x >> 5) ? warp_tot[lane] : 0;
#pragma unroll
        for (uint32_t off = 1; off < 32; off <<= 1) {
            uint32_t y = __shfl_up_sync(0xffffffffu, t, off);
            if (lane >= off) t += y;
        }
        warp_tot[lane] = t;
    }
    __syncthreads();
    if (warp > 0) x += warp_tot[warp - 1];
    __syncthreads();  // warp_tot is reused by the next call
    return x;
}

__device__ __forceinline__ void scan_blocks(const uint32_t* in, uint32_t* out, uint32_t n,
                                            uint32_t* block_tot) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t v = i < n ? in[i] : 0;
    const uint32_t x = block_inclusive_scan(v);
    if (i < n) out[i] = x - v;
    if (threadIdx.x == blockDim.x - 1) block_tot[blockIdx.x] = x;
}

// One block: exclusive scan of the block totals in place; writes the grand total to *total.
__device__ __forceinline__ void scan_totals(uint32_t* block_tot, uint32_t nblocks,
                                            uint32_t* total) {
    uint32_t base = 0;
    for (uint32_t start = 0; start < nblocks; start += blockDim.x) {
        const uint32_t i = start + threadIdx.x;
        const uint32_t v = i < nblocks ? block_tot[i] : 0;
        const uint32_t x = block_inclusive_scan(v);
        if (i < nblocks) block_tot[i] = base + x - v;
        __shared__ uint32_t chunk_tot;
        if (threadIdx.x == blockDim.x - 1) chunk_tot = x;
        __syncthreads();
        base += chunk_tot;
        __syncthreads();
    }
    if (threadIdx.x == 0) *total = base;
}

__device__ __forceinline__ void scan_add(uint32_t* out, uint32_t n, const uint32_t* block_tot) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += block_tot[blockIdx.x];
}

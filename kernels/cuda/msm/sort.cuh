// Bucket sort of (window, point) pairs by bucket. The key is the bucket index itself, so a
// counting sort does it, in three steps:
//   count      one atomic per nonzero digit on its bucket's counter (per uploaded slice);
//   scan       exclusive scan of the counts: each bucket's offset in the sorted list;
//   partition  each block of PART_BLOCK scalars groups its (bucket, entry) pairs by
//              partition (a range of 2^pshift buckets, at most MAX_PARTS of them) in shared
//              memory and appends each group as one run to its partition's region;
//   place      each pair goes to offsets[bucket] + its rank in the bucket.
// Writing each pair straight to its bucket's slot is one 4-byte store to a random place
// in a list of hundreds of MB: every store costs a DRAM sector (read and write, with ECC),
// and that scatter took 65 ms for G1 2^26. Through partitions, the stores of the first pass
// are runs appended at a few hundred moving fronts, and those of the second fall in one
// partition's region at a time; both stay in L2 until their sectors are full (G1 2^26:
// 65 -> 61 ms for the two passes; the atomics, not the stores, are most of it).
// The order inside a bucket is arbitrary (atomic order), which is harmless since group
// addition commutes.
#pragma once
#include "scalar.cuh"

// Bucket (w, d) lives at (w / fold) * buckets_per_window + d; d = 0 is never used. With
// fold > 1 the bases hold `fold` copies (copy k = 2^(c k) P, `stride` points apart, see
// fold.cuh), and window w's digit selects copy w % fold: the `fold` windows of one set
// share its buckets.
struct msm_layout {
    uint32_t n, c, nwin, buckets_per_window;
    uint32_t fold, stride;
};

__device__ __forceinline__ void load_scalar(const uint32_t* scalars, uint32_t i, uint32_t s[8]) {
    const uint4* p = reinterpret_cast<const uint4*>(scalars + 8 * (size_t)i);
    uint4 a = p[0], b = p[1];
    s[0] = a.x, s[1] = a.y, s[2] = a.z, s[3] = a.w;
    s[4] = b.x, s[5] = b.y, s[6] = b.z, s[7] = b.w;
}

__device__ __forceinline__ void store_scalar(uint32_t* scalars, uint32_t i, const uint32_t s[8]) {
    uint4* p = reinterpret_cast<uint4*>(scalars + 8 * (size_t)i);
    p[0] = make_uint4(s[0], s[1], s[2], s[3]);
    p[1] = make_uint4(s[4], s[5], s[6], s[7]);
}

// Calls f(bucket, entry) for each nonzero digit of canonical scalar s (point i); the entry
// is the point's index in the bases (its copy's, when folded) with the sign in bit 31.
template <class Fn>
__device__ __forceinline__ void for_each_digit(const uint32_t s[8], const msm_layout& lay,
                                               uint32_t i, Fn f) {
    digit_reader rd{s, lay.c};
    uint32_t set_base = 0, copy = 0;
    for (uint32_t w = 0; w < lay.nwin; w++) {
        uint32_t mag;
        bool neg;
        rd.next(w, mag, neg);
        if (mag != 0) f(set_base + mag, (copy * lay.stride + i) | ((uint32_t)neg << 31));
        if (++copy == lay.fold) {
            copy = 0;
            set_base += lay.buckets_per_window;
        }
    }
}

// Scalars [first, first + count) (one slice of the upload): Montgomery -> canonical in
// place if `convert` (the partition pass reads them again), then one count per nonzero
// digit that falls in bucket sets [set_lo, set_hi), into counts[bucket - set_base's first
// bucket] (a stage's own counters; 0 for one array over every set). Counting the sets in
// several passes keeps each pass's counters within L2: a 2^27 MSM on folded bases (3 sets of
// 2^23 buckets, 100 MB of counters) counted in 71 ms in one pass, where 13 sets of 2^19
// took 27 ms.
__device__ __forceinline__ void count_digits(uint32_t* scalars, msm_layout lay, uint32_t first,
                                             uint32_t count, uint32_t* counts, uint32_t convert,
                                             uint32_t set_lo, uint32_t set_hi, uint32_t set_base) {
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= count) return;
    const uint32_t i = first + k;
    uint32_t s[8];
    load_scalar(scalars, i, s);
    if (convert) {
        fr_canonical::from_montgomery(s);
        store_scalar(scalars, i, s);
    }
    const uint32_t lo = set_lo * lay.buckets_per_window, hi = set_hi * lay.buckets_per_window;
    const uint32_t base = set_base * lay.buckets_per_window;
    for_each_digit(s, lay, i, [&](uint32_t b, uint32_t) {
        if (b >= lo && b < hi) atomicAdd(&counts[b - base], 1u);
    });
}

#define PART_BLOCK 512
#define MAX_PARTS 512

// First pass: one block per PART_BLOCK scalars. Only the digits of bucket sets
// [set_lo, set_hi) (one stage of the sort) are taken, their buckets numbered from the
// stage's first: offsets, part_fill (zeroed, one per partition; it hands out runs of each
// partition's region) and the (bucket, entry) pairs in staged are the stage's own.
__device__ __forceinline__ void partition_digits(const uint32_t* scalars, msm_layout lay,
                                                 uint32_t pshift, uint32_t nparts,
                                                 const uint32_t* offsets, uint32_t* part_fill,
                                                 uint2* staged, uint32_t set_lo,
                                                 uint32_t set_hi) {
    __shared__ uint32_t hist[MAX_PARTS];
    __shared__ uint32_t cursor[MAX_PARTS];
    for (uint32_t p = threadIdx.x; p < nparts; p += blockDim.x) hist[p] = 0;
    __syncthreads();
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool have = i < lay.n;
    const uint32_t lo = set_lo * lay.buckets_per_window, hi = set_hi * lay.buckets_per_window;
    uint32_t s[8];
    if (have) {
        load_scalar(scalars, i, s);
        for_each_digit(s, lay, i, [&](uint32_t b, uint32_t) {
            if (b >= lo && b < hi) atomicAdd(&hist[(b - lo) >> pshift], 1u);
        });
    }
    __syncthreads();
    for (uint32_t p = threadIdx.x; p < nparts; p += blockDim.x)
        if (hist[p] != 0) cursor[p] = offsets[p << pshift] + atomicAdd(&part_fill[p], hist[p]);
    __syncthreads();
    if (have)
        for_each_digit(s, lay, i, [&](uint32_t b, uint32_t e) {
            if (b >= lo && b < hi)
                staged[atomicAdd(&cursor[(b - lo) >> pshift], 1u)] = make_uint2(b - lo, e);
        });
}

// Second pass, one thread per pair in the staged order: the threads in flight work through
// one or two partitions at a time, so their stores and the counters they take ranks from
// (the counts, used up) stay in L2. (One block per partition, ranks from shared-memory
// counters, measured 3.7x slower at G1 2^26: a few hundred partitions written at once no
// longer fit in L2.)
__device__ __forceinline__ void place_digits(const uint2* staged, uint32_t total,
                                             const uint32_t* offsets, uint32_t* counts,
                                             uint32_t* sorted) {
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= total) return;
    const uint2 v = staged[k];
    sorted[offsets[v.x] + atomicSub(&counts[v.x], 1u) - 1] = v.y;
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

// Bucket accumulation with even load: the sorted entries are cut into segments of equal
// length, one per thread, regardless of bucket boundaries. A bucket that begins inside a
// segment is owned by that segment's thread, which writes its sum straight to the bucket;
// a segment that begins inside a bucket started earlier writes that part to its own
// "head" slot, and a fix-up pass lets each owner add the heads of the segments its bucket
// runs into. Skewed inputs (every scalar equal, say) then cost the same as random ones in
// the main pass.
#pragma once
#include "../curve/xyzz.cuh"

// Largest b in [0, nb) with offsets[b] <= e: the bucket holding entry e (offsets is
// non-decreasing, offsets[0] = 0, offsets[nb] = total > e).
__device__ __forceinline__ uint32_t bucket_of(const uint32_t* offsets, uint32_t nb, uint32_t e) {
    uint32_t lo = 0, hi = nb;  // offsets[lo] <= e < offsets[hi]
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (offsets[mid] <= e)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

template <class F, int U = F::FAST_U>
__device__ __forceinline__ void accumulate_buckets(
    const affine_t<F>* points, const uint32_t* sorted, const uint32_t* offsets, uint32_t nb,
    uint32_t total, uint32_t seg_len, xyzz_t<F>* buckets, xyzz_t<F>* head_sum,
    uint32_t* head_bucket, uint32_t* tail_bucket) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t start64 = (uint64_t)t * seg_len;
    if (start64 >= total) return;
    const uint32_t start = (uint32_t)start64;
    const uint32_t end = (uint32_t)min((uint64_t)total, start64 + seg_len);

    uint32_t b = bucket_of(offsets, nb, start);
    uint32_t bend = offsets[b + 1];
    bool head = offsets[b] < start;  // this bucket began in an earlier segment
    xyzz_t<F> acc = xyzz_t<F>::inf();

    for (uint32_t e = start; e < end; e++) {
        if (e >= bend) {
            if (head) {
                head_sum[t] = acc;
                head_bucket[t] = b + 1;
                head = false;
            } else {
                buckets[b] = acc;
            }
            acc = xyzz_t<F>::inf();
            do {
                b++;
                bend = offsets[b + 1];
            } while (bend <= e);  // skip empty buckets
        }
        // (Loading the next point before adding this one, to overlap the two dependent
        // loads with arithmetic, measured no faster: 159.8 vs 161 ms at G1 2^24.)
        const uint32_t entry = sorted[e];
        acc.template add_affine<U>(affine_t<F>::load(points + (entry & 0x7fffffffu)),
                                   entry >> 31);
    }
    if (head) {
        head_sum[t] = acc;
        head_bucket[t] = b + 1;
    } else {
        buckets[b] = acc;
        if (bend > end) tail_bucket[t] = b + 1;  // continues into later segments
    }
}

template <class F>
__device__ __forceinline__ void accumulate_fixup(uint32_t nseg, xyzz_t<F>* buckets,
                                                 const xyzz_t<F>* head_sum,
                                                 const uint32_t* head_bucket,
                                                 const uint32_t* tail_bucket) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nseg) return;
    const uint32_t tb = tail_bucket[t];
    if (tb == 0) return;
    xyzz_t<F> acc = buckets[tb - 1];
    for (uint32_t u = t + 1; u < nseg && head_bucket[u] == tb; u++) acc.add(head_sum[u]);
    buckets[tb - 1] = acc;
}

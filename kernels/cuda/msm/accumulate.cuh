// Bucket accumulation with even load: the sorted entries are cut into segments of equal
// length, one per thread, regardless of bucket boundaries. A bucket that begins inside a
// segment is owned by that segment's thread, which writes its sum straight to the bucket;
// a segment that begins inside a bucket started earlier writes that part to its own
// "head" slot (head_bucket = bucket + 1; 0 where the segment began a bucket of its own),
// and `join_heads` adds the heads into their buckets. Skewed inputs (bits, every scalar
// equal) then cost the same as random ones in both passes.
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
    uint32_t* head_bucket) {
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
    }
}

// Joining the heads. The heads of one bucket are the segments that begin inside it: a
// contiguous run of head slots with the same key (bucket + 1; 0 = the segment began a
// bucket of its own). Bit-heavy witnesses put millions of entries into one bucket, so a run
// can span every segment there is; adding it up in the owner's thread (as the first version
// did) took 0.8-1.3 s per MSM of a real PoRep partition. Instead, a segmented reduction by
// key in levels: each thread takes `g` consecutive (key, point) slots and sums each run of
// equal keys in them. A run that continues into the neighbouring group is "open": its partial
// sum goes to the next level's list, at most two per group (slot 2t for a run open to the
// left, 2t + 1 for one open to the right; a run open on both sides takes both, the second
// as infinity, so that the next list keeps each key's slots contiguous). A closed run is a
// complete set of heads: the thread adds it to its bucket, which no other thread touches
// (every bucket's heads close in exactly one place). The list shrinks by g / 2 per level;
// the level with one group closes everything.
template <class F>
__device__ __forceinline__ void join_heads(const uint32_t* key, const xyzz_t<F>* val, uint32_t m,
                                           uint32_t g, uint32_t* key_out, xyzz_t<F>* val_out,
                                           xyzz_t<F>* buckets) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t s64 = (uint64_t)t * g;
    if (s64 >= m) return;
    const uint32_t s = (uint32_t)s64;
    const uint32_t e = (uint32_t)min((uint64_t)m, s64 + g);
    key_out[2 * t] = 0;
    key_out[2 * t + 1] = 0;
    for (uint32_t i = s; i < e;) {
        const uint32_t k = key[i];
        uint32_t j = i;
        xyzz_t<F> acc = xyzz_t<F>::inf();
        for (; j < e && key[j] == k; j++)
            if (k != 0) acc.add(val[j]);
        if (k != 0) {
            const bool left = i == s && s > 0 && key[s - 1] == k;
            const bool right = j == e && e < m && key[e] == k;
            if (left) {
                key_out[2 * t] = k;
                val_out[2 * t] = acc;
                if (right) {
                    key_out[2 * t + 1] = k;
                    val_out[2 * t + 1] = xyzz_t<F>::inf();
                }
            } else if (right) {
                key_out[2 * t + 1] = k;
                val_out[2 * t + 1] = acc;
            } else {
                xyzz_t<F> b = buckets[k - 1];
                b.add(acc);
                buckets[k - 1] = b;
            }
        }
        i = j;
    }
}

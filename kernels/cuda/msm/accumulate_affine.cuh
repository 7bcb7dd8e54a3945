// Bucket accumulation in affine coordinates with batched inversion: an experiment, built
// only into kernels/bench/affine_bench.cu. On the H200 it ran 0.89x the XYZZ pass at best
// (kernels/NOTES.md, part 7), so the crate does not use it. Same job and output contract as `accumulate_buckets`
// (accumulate.cuh): buckets[b] gets the sum of the entries of bucket b that lie in segments
// which began the bucket, and every segment that began inside a bucket started earlier
// writes that part to its head slot (head_sum[v], head_bucket[v] = bucket + 1; slots of
// segments without a head are left alone, so head_bucket must be zeroed first, as must the
// buckets, which empty buckets never touch). `join_heads` then finishes the job unchanged.
//
// Why: an XYZZ mixed addition costs ~10 Fp products; an affine addition x3 = l^2 - x1 - x2,
// y3 = l (x1 - x3) - y1 with l = (y2 - y1) / (x2 - x1) costs 3 plus the division. Montgomery's
// trick shares one inversion (~570 products, fp_t::inv) among many independent divisions at
// 3 products each (prefix product, and two in the back-substitution), so ~6 per addition
// plus 570 / m for a batch of m. Only one addition per bucket can be in flight at a time, so
// the independent additions have to come from different buckets: each physical thread runs
// M "virtual segments" (contiguous pieces of the sorted list) in lock-step, one entry of each
// per round, and inverts once per round. M * (accumulator, prefix, cursor) does not fit in
// registers, so it lives in global memory, laid out [slot][16-byte chunk][thread] so that a
// warp's accesses to one slot are contiguous 512-byte runs.
//
// Virtual segment v = slot * T + t (T physical threads) covers entries
// [v * seg_len, (v + 1) * seg_len) of the sorted list, so the head slots stay in list order,
// which join_heads relies on (a bucket's heads are a contiguous run of slots).
//
// Every case is exact: an infinity entry is skipped; an accumulator at infinity takes the
// entry as it is; equal points double (l = 3 x^2 / 2y); opposite points cancel to infinity.
// Only adding and doubling take part in the batch; the other cases finish in the first pass.
//
// The functions are host-callable (t, T as arguments) so kernels/bench/affine_host_check.cpp
// can check them with g++ against XYZZ sums.
#pragma once
#include <string.h>

#include "../field/fp.cuh"  // CUZK_HD; the curve headers assume it
#include "../curve/xyzz.cuh"

// 16 bytes: the unit of the global state's coalesced layout.
struct alignas(16) aff_chunk_t {
    uint32_t w[4];
};

template <class F>
struct affine_acc_args {
    const affine_t<F>* points;  // blst layout, infinity = (0, 0)
    const uint32_t* sorted;     // point index | sign << 31, grouped by bucket
    const uint32_t* offsets;    // nb + 1 bucket offsets into sorted
    uint32_t nb, total, seg_len;
    // Per (slot, thread) state, M * T entries each ([slot][chunk][thread]):
    aff_chunk_t* acc_x;  // accumulator x (sizeof(F) / 16 chunks)
    aff_chunk_t* acc_y;  // accumulator y
    aff_chunk_t* pre;    // product of the earlier slots' denominators this round
    aff_chunk_t* state;  // {bucket, end of bucket, flags, unused}, [slot][thread]
    xyzz_t<F>* buckets;
    xyzz_t<F>* head_sum;    // one per virtual segment
    uint32_t* head_bucket;  // one per virtual segment, zeroed by the caller
};

// flags: bit 0 = the current bucket is a head (began in an earlier segment); bits 1-2 = what
// the second pass must do for this slot this round.
enum : uint32_t { AFF_HEAD = 1, AFF_NONE = 0, AFF_ADD = 1, AFF_DBL = 2 };

// Largest b in [0, nb) with offsets[b] <= e (as accumulate.cuh's bucket_of; a copy so that
// this header compiles for the host).
CUZK_HD uint32_t aff_bucket_of(const uint32_t* offsets, uint32_t nb, uint32_t e) {
    uint32_t lo = 0, hi = nb;
    while (hi - lo > 1) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (offsets[mid] <= e)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

// Element (slot s, thread t) of a [slot][chunk][thread] array of F.
template <class F>
CUZK_HD F aff_load(const aff_chunk_t* base, uint32_t s, uint32_t t, uint32_t T) {
    constexpr int NG = sizeof(F) / 16;
    static_assert(sizeof(F) % 16 == 0, "field element must be a multiple of 16 bytes");
    // memcpy, not a pointer cast: F's words accessed through another type is an aliasing
    // violation that g++ -O2 really does miscompile (the host check caught it); the copy
    // between registers costs nothing, and the global access stays one 16-byte load.
    F r;
#pragma unroll
    for (int g = 0; g < NG; g++) {
        const aff_chunk_t c = base[((size_t)s * NG + g) * T + t];
        memcpy(reinterpret_cast<char*>(&r) + 16 * g, &c, 16);
    }
    return r;
}

template <class F>
CUZK_HD void aff_store(aff_chunk_t* base, uint32_t s, uint32_t t, uint32_t T, const F& x) {
    constexpr int NG = sizeof(F) / 16;
#pragma unroll
    for (int g = 0; g < NG; g++) {
        aff_chunk_t c;
        memcpy(&c, reinterpret_cast<const char*>(&x) + 16 * g, 16);
        base[((size_t)s * NG + g) * T + t] = c;
    }
}

// The end of a bucket's part in one segment: to the bucket, or to the segment's head slot.
template <class F>
CUZK_HD void aff_flush(const affine_acc_args<F>& a, uint64_t v, uint32_t b, bool head,
                       const affine_t<F>& acc) {
    const xyzz_t<F> q = xyzz_t<F>::from_affine(acc);
    if (head) {
        a.head_sum[v] = q;
        a.head_bucket[v] = b + 1;
    } else {
        a.buckets[b] = q;
    }
}

template <class F>
CUZK_HD affine_t<F> aff_inf() {
    return {F::zero(), F::zero()};
}

// The work of physical thread t of T: its M virtual segments, all rounds.
template <class F, int M, int U = F::FAST_U>
CUZK_HD void accumulate_affine_thread(uint32_t t, uint32_t T, const affine_acc_args<F>& a) {
    const uint32_t seg_len = a.seg_len;
#pragma unroll 1
    for (uint32_t r = 0; r < seg_len; r++) {
        // Pass 1: bucket boundaries, the cases that need no division, and the prefix
        // products of the denominators of those that do.
        F prod = F::one();
        bool any = false;
#pragma unroll 1
        for (uint32_t s = 0; s < (uint32_t)M; s++) {
            const uint64_t v = (uint64_t)s * T + t;
            // Every segment is seg_len long but the list's end cuts the last ones short;
            // entry start + r always lies inside the segment, so this is the only test.
            const uint64_t e64 = v * seg_len + r;
            if (e64 >= a.total) continue;
            const uint32_t e = (uint32_t)e64;
            const size_t si = (size_t)s * T + t;
            uint32_t b, bend;
            bool head, dirty;
            affine_t<F> acc;
            if (r == 0) {
                b = aff_bucket_of(a.offsets, a.nb, e);
                bend = a.offsets[b + 1];
                head = a.offsets[b] < e;
                acc = aff_inf<F>();
                dirty = true;
            } else {
                const aff_chunk_t st = a.state[si];
                b = st.w[0];
                bend = st.w[1];
                head = st.w[2] & AFF_HEAD;
                acc.x = aff_load<F>(a.acc_x, s, t, T);
                acc.y = aff_load<F>(a.acc_y, s, t, T);
                dirty = false;
            }
            if (e >= bend) {
                aff_flush(a, v, b, head, acc);
                head = false;
                acc = aff_inf<F>();
                dirty = true;
                do {
                    b++;
                    bend = a.offsets[b + 1];
                } while (bend <= e);  // skip empty buckets
            }
            const uint32_t entry = a.sorted[e];
            const affine_t<F> p = affine_t<F>::load(a.points + (entry & 0x7fffffffu));
            uint32_t kind = AFF_NONE;
            if (!p.is_inf()) {
                const F y2 = (entry >> 31) ? p.y.neg() : p.y;
                if (acc.is_inf()) {
                    acc = {p.x, y2};
                    dirty = true;
                } else if (acc.x == p.x) {
                    if (acc.y == y2) {
                        kind = AFF_DBL;
                    } else {  // x equal, y not: the negation (y2 = -y1)
                        acc = aff_inf<F>();
                        dirty = true;
                    }
                } else {
                    kind = AFF_ADD;
                }
                if (kind != AFF_NONE) {
                    // No G1 point has y = 0 (the group's order is odd), so 2y != 0.
                    const F d = kind == AFF_ADD ? p.x - acc.x : acc.y.dbl();
                    aff_store<F>(a.pre, s, t, T, prod);  // exclusive prefix
                    prod = F::template mul<U>(prod, d);
                    any = true;
                }
            }
            a.state[si] = {{b, bend, (head ? AFF_HEAD : 0u) | (kind << 1), 0u}};
            if (dirty) {
                aff_store<F>(a.acc_x, s, t, T, acc.x);
                aff_store<F>(a.acc_y, s, t, T, acc.y);
            }
        }
        if (!any) continue;  // no division this round: every slot is already done

        // Pass 2, slots in reverse: inv = 1 / (d_0 ... d_s) over the batched slots up to s,
        // so 1 / d_s = inv * pre_s, and dropping d_s leaves the inverse for the slots below.
        F inv = prod.inv();
#pragma unroll 1
        for (int s = M - 1; s >= 0; s--) {
            const uint64_t v = (uint64_t)s * T + t;
            const uint64_t e64 = v * seg_len + r;
            if (e64 >= a.total) continue;
            const size_t si = (size_t)s * T + t;
            const uint32_t kind = (a.state[si].w[2] >> 1) & 3;
            if (kind == AFF_NONE) continue;
            // The entry again rather than a stashed copy: 96 bytes read (3 sectors) against
            // 96 written and read back.
            const uint32_t entry = a.sorted[(uint32_t)e64];
            const affine_t<F> p = affine_t<F>::load(a.points + (entry & 0x7fffffffu));
            const F x1 = aff_load<F>(a.acc_x, s, t, T);
            const F y1 = aff_load<F>(a.acc_y, s, t, T);
            F d, num;
            if (kind == AFF_ADD) {
                d = p.x - x1;
                num = ((entry >> 31) ? p.y.neg() : p.y) - y1;
            } else {  // doubling: l = 3 x1^2 / 2 y1, and x2 = x1 below
                d = y1.dbl();
                const F xx = F::template square<U>(x1);
                num = xx.dbl() + xx;
            }
            const F inv_d = F::template mul<U>(inv, aff_load<F>(a.pre, s, t, T));
            inv = F::template mul<U>(inv, d);
            const F l = F::template mul<U>(num, inv_d);
            const F x3 = F::template square<U>(l) - x1 - p.x;
            const F y3 = F::template mul<U>(l, x1 - x3) - y1;
            aff_store<F>(a.acc_x, s, t, T, x3);
            aff_store<F>(a.acc_y, s, t, T, y3);
        }
    }
    // Each segment's last bucket part.
#pragma unroll 1
    for (uint32_t s = 0; s < (uint32_t)M; s++) {
        const uint64_t v = (uint64_t)s * T + t;
        if (v * seg_len >= a.total || seg_len == 0) continue;
        const aff_chunk_t st = a.state[(size_t)s * T + t];
        affine_t<F> acc;
        acc.x = aff_load<F>(a.acc_x, s, t, T);
        acc.y = aff_load<F>(a.acc_y, s, t, T);
        aff_flush(a, v, st.w[0], st.w[2] & AFF_HEAD, acc);
    }
}

#if defined(__CUDACC__)
// One wave of T = gridDim.x * blockDim.x threads (each holds M segments' state, so the grid
// is sized to what is resident, not to the work). MINB: blocks of 128 per SM (register cap).
template <class F, int M, int MINB>
__global__ void __launch_bounds__(128, MINB) accumulate_affine_kernel(affine_acc_args<F> a) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    accumulate_affine_thread<F, M>(t, gridDim.x * blockDim.x, a);
}
#endif

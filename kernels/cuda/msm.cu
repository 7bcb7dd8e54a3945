// Pippenger multi-scalar multiplication in G1 and G2 of BLS12-381: the kernels the host
// side (kernels/src/msm/) launches, in order:
//   msm_fold_{g1,g2}        (once per resident base vector) copies 2^(c k) P, see fold.cuh
//   msm_count_digits        per uploaded slice (or per range of bucket sets): scalars Fr
//                           Montgomery -> canonical in place, signed digits counted per bucket
//   msm_scan_* (3)          exclusive scan of the bucket counts -> bucket offsets
//   msm_partition_digits, msm_place_digits   point indices in bucket order (msm/sort.cuh)
//   msm_accumulate_{g1,g2}  bucket sums (XYZZ), then msm_join_heads_{g1,g2} in levels
//   msm_reduce_level_{g1,g2}, msm_sum_level_{g1,g2}   per-window sum_d d * B_d
//   msm_xyzz_to_jacobian_{g1,g2}                     the few points left, in blst's form
// The host combines those (levels, windows) with blstrs. Beside them, msm_select_scalars
// compacts a device vector by a density bitmap and msm_expand_scalars unpacks an assignment
// uploaded as per-word bitmaps and ranks and its wide values (msm/select.cuh), and
// msm_bits_* split a bit-heavy MSM into a batch addition over its ones and a smaller MSM
// (msm/bits.cuh).
#include "curve/bls12_381.cuh"
#include "msm/accumulate.cuh"
#include "msm/bits.cuh"
#include "msm/fold.cuh"
#include "msm/reduce.cuh"
#include "msm/select.cuh"
#include "msm/sort.cuh"

extern "C" {

__global__ void msm_select_scalars(const uint4* in, uint32_t n, const unsigned long long* words,
                                   const uint32_t* word_rank, uint4* out) {
    select_scalars(in, n, words, word_rank, out);
}

__global__ void msm_expand_scalars(uint32_t n, const packed_word* words, const uint4* wide,
                                   uint32_t nwide, const uint4* one, uint4* out, uint32_t* bad) {
    expand_scalars(n, words, wide, nwide, one, out, bad);
}

__global__ void msm_count_digits(uint32_t* scalars, msm_layout lay, uint32_t first,
                                 uint32_t count, uint32_t* counts, uint32_t convert,
                                 uint32_t set_lo, uint32_t set_hi, uint32_t set_base) {
    count_digits(scalars, lay, first, count, counts, convert, set_lo, set_hi, set_base);
}

__global__ void __launch_bounds__(PART_BLOCK) msm_partition_digits(
    const uint32_t* scalars, msm_layout lay, uint32_t pshift, uint32_t nparts,
    const uint32_t* offsets, uint32_t* part_fill, uint2* staged, uint32_t set_lo,
    uint32_t set_hi) {
    partition_digits(scalars, lay, pshift, nparts, offsets, part_fill, staged, set_lo, set_hi);
}

__global__ void msm_place_digits(const uint2* staged, uint32_t total, const uint32_t* offsets,
                                 uint32_t* counts, uint32_t* sorted) {
    place_digits(staged, total, offsets, counts, sorted);
}

__global__ void __launch_bounds__(1024) msm_scan_blocks(const uint32_t* in, uint32_t* out,
                                                        uint32_t n, uint32_t* block_tot) {
    scan_blocks(in, out, n, block_tot);
}

// Writes the grand total to out[n], so that offsets has n + 1 entries.
__global__ void __launch_bounds__(1024) msm_scan_totals(uint32_t* block_tot, uint32_t nblocks,
                                                        uint32_t* out, uint32_t n) {
    scan_totals(block_tot, nblocks, out + n);
}

__global__ void msm_scan_add(uint32_t* out, uint32_t n, const uint32_t* block_tot) {
    scan_add(out, n, block_tot);
}

// G1's mixed-addition loops (the bucket accumulation, the ones' sum): their Fp product and
// blocks of 128 per SM. FIOS_CALL_LAZY (products out of line, Y3 with one reduction) at 3
// blocks: G1 2^24 bucket pass 88.07 ms against 93.62 for FIOS_LAZY inline at 2 and 96.30 for
// plain FIOS at 2 (harness, -DLAZY_SET, H200; NOTES part 11). -DCUZK_G1_ADD_U=600
// -DCUZK_G1_ADD_BLOCKS=2 builds the previous configuration (the A/B through the daemon).
#ifndef CUZK_G1_ADD_U
#define CUZK_G1_ADD_U fp_t::FIOS_CALL_LAZY
#endif
#ifndef CUZK_G1_ADD_BLOCKS
#define CUZK_G1_ADD_BLOCKS 3
#endif
// The bucket reduction's full addition (G1, inlined) and its blocks of 128 per SM. With the
// lazy Y3 it spills 120 B at 3 blocks (1,260 B out of line), none at 2;
// -DCUZK_G1_REDUCE_BLOCKS=3 builds the previous configuration.
// -DCUZK_REDUCE_CHAINED builds the reduction's first loop as a chain of dependent additions
// (reduce.cuh; the default since part 15 has its two additions independent).
#ifndef CUZK_G1_REDUCE_U
#define CUZK_G1_REDUCE_U fp_t::FIOS_LAZY
#endif
#ifndef CUZK_G1_REDUCE_BLOCKS
#define CUZK_G1_REDUCE_BLOCKS 2
#endif

// ACC_BLOCKS: blocks of 128 the bucket kernel is built to fit per SM (register cap). With the
// unrolled FIOS product G1 at 3 (168 registers, no spill) measured 97.2 ms against 99.5 ms at
// 4 (128 registers, 36 B of spill) for the G1 2^24 bucket pass (kernels/bench/msm_harness.cu),
// and through the crate 2 (184 registers) 88.6 ms against 90.7 at 3; G2 needs ~252
// registers, so 1. The host sizes its segments from the kernel's occupancy.
// REDUCE_INLINE, REDUCE_BLOCKS: the reduction kernels' full addition inlined (G1) or shared
// out of line (G2), and their blocks per SM.
#define CUZK_MSM_GROUP(G, F, ACC_U, ACC_BLOCKS, REDUCE_INLINE, REDUCE_U, REDUCE_BLOCKS)                                                     \
    __global__ void __launch_bounds__(128, ACC_BLOCKS) msm_accumulate_##G(                                 \
        const affine_t<F>* points, const uint32_t* sorted, const uint32_t* offsets,            \
        uint32_t nb, uint32_t total, uint32_t seg_len, xyzz_t<F>* buckets,                     \
        xyzz_t<F>* head_sum, uint32_t* head_bucket) {                                          \
        accumulate_buckets<F, ACC_U>(points, sorted, offsets, nb, total, seg_len, buckets,   \
                                     head_sum, head_bucket);                                                 \
    }                                                                                          \
    __global__ void __launch_bounds__(128) msm_join_heads_##G(                                 \
        const uint32_t* key, const xyzz_t<F>* val, uint32_t m, uint32_t g, uint32_t* key_out,  \
        xyzz_t<F>* val_out, xyzz_t<F>* buckets) {                                              \
        join_heads<F>(key, val, m, g, key_out, val_out, buckets);                              \
    }                                                                                          \
    __global__ void __launch_bounds__(128, REDUCE_BLOCKS) msm_reduce_level_##G(                               \
        const xyzz_t<F>* in, uint32_t len, uint32_t L, uint32_t nwin, uint32_t out_stride,     \
        xyzz_t<F>* acc_out, xyzz_t<F>* run_out) {                                              \
        reduce_level<F, REDUCE_INLINE, REDUCE_U>(in, len, L, nwin, out_stride, acc_out, run_out);                       \
    }                                                                                          \
    __global__ void __launch_bounds__(128, REDUCE_BLOCKS) msm_sum_level_##G(                                  \
        const xyzz_t<F>* in, uint32_t len, uint32_t L, uint32_t nwin, uint32_t out_stride,     \
        xyzz_t<F>* out) {                                                                      \
        sum_level<F, REDUCE_INLINE, REDUCE_U>(in, len, L, nwin, out_stride, out);                                       \
    }                                                                                          \
    __global__ void msm_xyzz_to_jacobian_##G(const xyzz_t<F>* in, F* out, uint32_t n) {       \
        xyzz_to_jacobian<F>(in, out, n);                                                       \
    }                                                                                          \
    __global__ void __launch_bounds__(128) msm_fold_##G(const affine_t<F>* in,                 \
                                                        affine_t<F>* out, F* scratch,          \
                                                        uint32_t n, uint32_t c) {              \
        fold_bases<F>(in, out, scratch, n, c);                                                 \
    }

CUZK_MSM_GROUP(g1, fp_t, CUZK_G1_ADD_U, CUZK_G1_ADD_BLOCKS, true, CUZK_G1_REDUCE_U, CUZK_G1_REDUCE_BLOCKS)


CUZK_MSM_GROUP(g2, fp2_t, fp2_t::FAST_U, 1, false, fp2_t::FAST_U, 1)

__global__ void msm_bits_sample(const uint4* scalars, uint32_t n, uint32_t samples,
                                fr_words one, uint32_t* counts) {
    bits_sample(scalars, n, samples, one, counts);
}

__global__ void msm_bits_classify(const uint4* scalars, uint32_t first, uint32_t end,
                                  uint32_t nwords, fr_words one, uint32_t* ones_words,
                                  uint32_t* others_words, uint32_t* counts) {
    bits_classify(scalars, first, end, nwords, one, ones_words, others_words, counts);
}

__global__ void msm_bits_compact(const uint4* scalars, uint32_t first, uint32_t end,
                                 uint32_t nwords, const uint32_t* ones_words,
                                 const uint32_t* others_words, const uint32_t* ranks,
                                 const uint4* points, uint32_t point_u4, uint32_t* ones_idx,
                                 uint4* others_scalars, uint4* others_points) {
    bits_compact(scalars, first, end, nwords, ones_words, others_words, ranks, points, point_u4,
                 ones_idx, others_scalars, others_points);
}

// The same product and register budgets as the bucket kernels (one mixed addition per loop
// turn).
__global__ void __launch_bounds__(128, CUZK_G1_ADD_BLOCKS) msm_bits_sum_g1(
    const g1_affine_t* points, uint32_t first, const uint32_t* ones_idx, const uint32_t* ranks,
    uint32_t word_lo, uint32_t word_hi, uint32_t nthreads, g1_xyzz_t* partial) {
    bits_sum<fp_t, CUZK_G1_ADD_U>(points, first, ones_idx, ranks, word_lo, word_hi, nthreads, partial);
}

__global__ void __launch_bounds__(128) msm_bits_sum_g2(
    const g2_affine_t* points, uint32_t first, const uint32_t* ones_idx, const uint32_t* ranks,
    uint32_t word_lo, uint32_t word_hi, uint32_t nthreads, g2_xyzz_t* partial) {
    bits_sum<fp2_t>(points, first, ones_idx, ranks, word_lo, word_hi, nthreads, partial);
}

}  // extern "C"

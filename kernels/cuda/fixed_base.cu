// Fixed-base batch scalar multiplication in G1 and G2 of BLS12-381, for parameter
// generation: out[i] = scalars[i] * B in affine form, B one point for the whole call
// (fixed_base/window_sum.cuh). The host (src/fixed_base.rs) builds B's window table, feeds
// the scalars in chunks and reads the points back.
#include "curve/bls12_381.cuh"
#include "fixed_base/window_sum.cuh"

extern "C" {

// Blocks per SM as the MSM's bucket kernels (msm.cu): G1's inlined mixed addition fits two
// blocks of 128 per SM without spilling, G2's (~252 registers) one.
#define CUZK_FIXED_BASE_GROUP(G, F, BLOCKS)                                                 \
    __global__ void __launch_bounds__(128, BLOCKS) fixed_base_times_##G(                     \
        const uint4* scalars, uint32_t n, const affine_t<F>* table, uint32_t c,             \
        uint32_t nwin, affine_t<F>* out, F* scratch) {                                      \
        fixed_base_times<F>(scalars, n, table, c, nwin, out, scratch);                      \
    }

CUZK_FIXED_BASE_GROUP(g1, fp_t, 2)
CUZK_FIXED_BASE_GROUP(g2, fp2_t, 1)

}  // extern "C"

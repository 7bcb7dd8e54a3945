// NTT kernels over BLS12-381 Fr, called from kernels/src/ntt.rs. Every vector is in blst_fr
// layout (Montgomery, R = 2^256). Plans (which passes, which tables) are made on the host.
#include "ntt/permute.cuh"
#include "ntt/radix_pass.cuh"
#include "ntt/radix_regs.cuh"

using namespace cuzk;

namespace {
__device__ __forceinline__ pow_table table(const fr_t* lo, const fr_t* hi, uint32_t bits)
{
    return pow_table{lo, hi, bits};
}
}  // namespace

// Radix-2 passes through shared memory (ntt/radix_pass.cuh): domains below 2^NTT_REG_LOG_RADIX,
// where the register passes' windows do not fit, and the reference in the harness.
extern "C" __global__ void __launch_bounds__(NTT_THREADS, 2)
ntt_pass_dif(fr_t* data, uint32_t L, uint32_t lo, uint32_t m, uint32_t c, const fr_t* roots,
             const fr_t* tw_lo, const fr_t* tw_hi, uint32_t tw_bits, const fr_t* sc_lo,
             const fr_t* sc_hi, uint32_t sc_bits)
{
    radix_pass<false>(data, L, lo, m, c, roots, table(tw_lo, tw_hi, tw_bits),
                      table(sc_lo, sc_hi, sc_bits));
}

extern "C" __global__ void __launch_bounds__(NTT_THREADS, 2)
ntt_pass_dit(fr_t* data, uint32_t L, uint32_t lo, uint32_t m, uint32_t c, const fr_t* roots,
             const fr_t* tw_lo, const fr_t* tw_hi, uint32_t tw_bits, const fr_t* sc_lo,
             const fr_t* sc_hi, uint32_t sc_bits)
{
    radix_pass<true>(data, L, lo, m, c, roots, table(tw_lo, tw_hi, tw_bits),
                     table(sc_lo, sc_hi, sc_bits));
}

// Register-radix passes (ntt/radix_regs.cuh): 2^NTT_REG_LOG_RADIX points per thread, up to
// 2^10 points per block. 4 points per thread at 3 blocks of 256 threads per SM (85 registers,
// 24 warps) measured fastest in the harness (kernels/bench/ntt_harness.cu): 4.74 ms at 2^24
// against 4.99 for 8 points per thread at 4 blocks of 128 (128 registers, 16 warps); see
// NOTES.md. The macros let the harness build the other variants.
#ifndef NTT_REG_LOG_RADIX
#define NTT_REG_LOG_RADIX 2
#endif
#ifndef NTT_REG_MIN_BLOCKS
#define NTT_REG_MIN_BLOCKS 3
#endif
constexpr uint32_t NTT_REG_THREADS = 1u << (NTT_REG_LOG_TILE - NTT_REG_LOG_RADIX);

namespace {
__device__ __forceinline__ reg_pass_args reg_args(
    const fr_t* in, fr_t* out, uint32_t L, uint32_t lo, uint32_t m, uint32_t c,
    const fr_t* roots, const fr_t* tw_lo, const fr_t* tw_hi, uint32_t tw_bits,
    const fr_t* tw_direct, const fr_t* sc_lo, const fr_t* sc_hi, uint32_t sc_bits,
    const fr_t* osc_lo, const fr_t* osc_hi, uint32_t osc_bits, uint32_t bitrev_out)
{
    return reg_pass_args{in,    out,       L,
                         lo,    m,         c,
                         roots, table(tw_lo, tw_hi, tw_bits), tw_direct,
                         table(sc_lo, sc_hi, sc_bits), table(osc_lo, osc_hi, osc_bits),
                         bitrev_out};
}
}  // namespace

// block0: the first block's index, so that a pass can run over a range of column chunks
// (the pinned path starts the first pass on the columns already uploaded).
#define NTT_REG_KERNEL(name, dit)                                                              \
    extern "C" __global__ void __launch_bounds__(NTT_REG_THREADS, NTT_REG_MIN_BLOCKS) name(    \
        const fr_t* in, fr_t* out, uint32_t L, uint32_t lo, uint32_t m, uint32_t c,            \
        const fr_t* roots, const fr_t* tw_lo, const fr_t* tw_hi, uint32_t tw_bits,             \
        const fr_t* tw_direct, const fr_t* sc_lo, const fr_t* sc_hi, uint32_t sc_bits,         \
        const fr_t* osc_lo, const fr_t* osc_hi, uint32_t osc_bits, uint32_t bitrev_out,        \
        uint32_t block0)                                                                       \
    {                                                                                          \
        reg_pass<NTT_REG_LOG_RADIX>::run<dit>(                                                 \
            reg_args(in, out, L, lo, m, c, roots, tw_lo, tw_hi, tw_bits, tw_direct, sc_lo,     \
                     sc_hi, sc_bits, osc_lo, osc_hi, osc_bits, bitrev_out),                    \
            block0 + blockIdx.x);                                                              \
    }
NTT_REG_KERNEL(ntt_regs_dif, false)
NTT_REG_KERNEL(ntt_regs_dit, true)
#undef NTT_REG_KERNEL

extern "C" __global__ void ntt_bit_reverse(fr_t* out, const fr_t* in, uint32_t L,
                                           const fr_t* sc_lo, const fr_t* sc_hi,
                                           uint32_t sc_bits)
{
    bit_reverse_scaled(out, in, L, table(sc_lo, sc_hi, sc_bits));
}

// Element-wise field operations: the H polynomial's product and difference, tests, and
// callers that need a vector op on the device. op: 0 add, 1 sub, 2 mul, 3 square, 4 inverse
// (zero to zero), 5 negate.
extern "C" __global__ void fr_elementwise(fr_t* out, const fr_t* a, const fr_t* b, uint32_t op,
                                          uint32_t n)
{
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        fr_t x = fr_t::load(a + i), r;
        switch (op) {
        case 0: r = x + fr_t::load(b + i); break;
        case 1: r = x - fr_t::load(b + i); break;
        case 2: r = x * fr_t::load(b + i); break;
        case 3: r = x.sqr(); break;
        case 4: r = x.inverse(); break;
        default: r = -x; break;
        }
        r.store(out + i);
    }
}

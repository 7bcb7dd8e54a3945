// Throughput of the instructions the Fp product is made of, on the device: to know which
// ceiling the MSM bucket pass sits at (NOTES.md, MSM). Each kernel runs at full occupancy
// (many warps, so latency is hidden) and reports warp-instructions per SM per cycle at the
// clock the script reads, and Fp products per second for each product variant.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 kernels/bench/imad_bench.cu -o imad_bench
//   ./imad_bench [sm_clock_mhz=1980]
#include <cstdio>
#include <cstdlib>

#include "../cuda/field/fp.cuh"

#include "cuda_check.cuh"

constexpr int ITERS = 4096;

// 12 mad.lo.cc/madc.hi.cc pairs per row, one carry chain: 12 IMAD.WIDE.U32.X (check SASS).
__global__ void k_wide(uint32_t* out, uint32_t seed) {
    uint32_t acc[24], a[12];
    for (int i = 0; i < 24; i++) acc[i] = seed * (i + 1) + threadIdx.x;
    for (int i = 0; i < 12; i++) a[i] = seed ^ (i * 0x9e3779b9u) ^ threadIdx.x;
    uint32_t b = seed + blockIdx.x;
    for (int it = 0; it < ITERS; it++) {
        acc[0] = carry::mad_lo_cc(a[0], b, acc[0]);
        acc[1] = carry::madc_hi_cc(a[0], b, acc[1]);
#pragma unroll
        for (int j = 1; j < 12; j++) {
            acc[2 * j] = carry::madc_lo_cc(a[j], b, acc[2 * j]);
            acc[2 * j + 1] = carry::madc_hi_cc(a[j], b, acc[2 * j + 1]);
        }
        b ^= acc[23];
    }
    uint32_t r = 0;
    for (int i = 0; i < 24; i++) r ^= acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = r;
}

// 24 independent 32-bit multiply-adds per row: IMAD.
__global__ void k_imad(uint32_t* out, uint32_t seed) {
    uint32_t acc[24], a[24];
    for (int i = 0; i < 24; i++) acc[i] = seed * (i + 1) + threadIdx.x;
    for (int i = 0; i < 24; i++) a[i] = seed ^ (i * 0x9e3779b9u) ^ threadIdx.x;
    uint32_t b = seed + blockIdx.x;
    for (int it = 0; it < ITERS; it++) {
#pragma unroll
        for (int j = 0; j < 24; j++) acc[j] = a[j] * b + acc[j];
        b ^= acc[23];
    }
    uint32_t r = 0;
    for (int i = 0; i < 24; i++) r ^= acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = r;
}

// A 24-limb add-with-carry chain per row: IADD3.X.
__global__ void k_addc(uint32_t* out, uint32_t seed) {
    uint32_t acc[24], a[24];
    for (int i = 0; i < 24; i++) acc[i] = seed * (i + 1) + threadIdx.x;
    for (int i = 0; i < 24; i++) a[i] = seed ^ (i * 0x9e3779b9u) ^ threadIdx.x;
    for (int it = 0; it < ITERS; it++) {
        acc[0] = carry::add_cc(acc[0], a[0]);
#pragma unroll
        for (int j = 1; j < 24; j++) acc[j] = carry::addc_cc(acc[j], a[j]);
        a[0] ^= acc[23];
    }
    uint32_t r = 0;
    for (int i = 0; i < 24; i++) r ^= acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = r;
}

// Two independent Fp product chains per thread.
template <int U>
__global__ void k_fpmul(uint32_t* out, uint32_t seed, int iters) {
    fp_t x, y, c;
    for (int i = 0; i < 12; i++) {
        x.v[i] = seed * (i + 3) + threadIdx.x;
        y.v[i] = seed * (i + 5) + blockIdx.x + 7 * threadIdx.x;
        c.v[i] = seed ^ (i * 0x9e3779b9u) ^ threadIdx.x;  // per thread, as in the MSM
    }
    x.v[11] &= 0x0fffffff;
    y.v[11] &= 0x0fffffff;
    c.v[11] &= 0x0fffffff;
    for (int it = 0; it < iters; it++) {
        x = fp_t::mul<U>(x, c);
        y = fp_t::mul<U>(y, c);
    }
    uint32_t r = 0;
    for (int i = 0; i < 12; i++) r ^= x.v[i] ^ y.v[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = r;
}

template <class K>
static float time_kernel(K kern, int blocks, int threads, uint32_t* out) {
    return best_ms([&] { kern(blocks, threads, out); });
}

int main(int argc, char** argv) {
    double mhz = argc > 1 ? atof(argv[1]) : 1980.0;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int sms = prop.multiProcessorCount;
    uint32_t* out;
    CK(cudaMalloc(&out, 64u << 20));
    printf("%s, %d SMs, rates at %.0f MHz\n", prop.name, sms, mhz);

    auto report = [&](const char* name, float ms, int blocks, int threads, double instr_per_row,
                      double rows) {
        double warps = (double)blocks * threads / 32;
        double winstr = warps * rows * instr_per_row;
        double cycles = ms * 1e-3 * mhz * 1e6;
        printf("| %s | %.3f ms | %.3f warp-instr / SM / cycle |\n", name, ms,
               winstr / sms / cycles);
    };
    const int T = 256, B = sms * 8;  // 64 warps per SM
    float ms;
    ms = time_kernel([](int b, int t, uint32_t* o) { k_wide<<<b, t>>>(o, 12345); }, B, T, out);
    report("IMAD.WIDE.U32.X chain (12/row)", ms, B, T, 12, ITERS);
    ms = time_kernel([](int b, int t, uint32_t* o) { k_imad<<<b, t>>>(o, 12345); }, B, T, out);
    report("IMAD independent (24/row)", ms, B, T, 24, ITERS);
    ms = time_kernel([](int b, int t, uint32_t* o) { k_addc<<<b, t>>>(o, 12345); }, B, T, out);
    report("IADD3.X chain (24/row)", ms, B, T, 24, ITERS);

    const int iters = 256;
    auto fp = [&](const char* name, auto kern, int threads, int blocks_per_sm) {
        int blocks = sms * blocks_per_sm;
        float t = time_kernel(kern, blocks, threads, out);
        double muls = 2.0 * blocks * threads * iters;
        printf("| Fp product %s | %.3f ms | %.2f G products/s |\n", name, t, muls / (t * 1e6));
    };
    fp("CIOS rolled (U=1)", [](int b, int t, uint32_t* o) { k_fpmul<1><<<b, t>>>(o, 7, 256); }, 128, 8);
    fp("FIOS unrolled (U=112)", [](int b, int t, uint32_t* o) { k_fpmul<112><<<b, t>>>(o, 7, 256); }, 128, 8);
    fp("FIOS 4 rows (U=104)", [](int b, int t, uint32_t* o) { k_fpmul<104><<<b, t>>>(o, 7, 256); }, 128, 8);
    fp("FIOS call (U=200)", [](int b, int t, uint32_t* o) { k_fpmul<200><<<b, t>>>(o, 7, 256); }, 128, 8);
    CK(cudaFree(out));
    return 0;
}

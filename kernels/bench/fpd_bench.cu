// Throughput of the FP64 Fp product (field/fpd.cuh) against the integer one (fp_t, FIOS,
// U = fp_t::FAST_U) on the device, in the style of imad_bench.cu: two independent product
// chains per thread (x <- x c, y <- y c, c per thread), 128 threads per block at 4 and 8
// blocks per SM of grid; plus hybrid kernels where one thread runs fp_t and fpd_t chains at
// once (integer and FP64 pipes together). Each kernel's registers, local memory (spills) and
// resident blocks per SM are printed beside its rate. A correctness pass first: 2^16 random
// products by both, fpd results converted back and compared with the host's mul_cios<1>, and
// the raw fpd limbs compared bit for bit with the host's fpd product.
//
// Built here, run prebuilt on the device machine (it has no nvcc): kernels/bench/run_fpd_bench.sh.
//   .tools/cuda/nvidia/cu13/bin/nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v \
//       -L.tools/cuda/nvidia/cu13/lib kernels/bench/fpd_bench.cu -o .device/fpd_bench
//   (the -L: this toolkit keeps libcudart_static.a in lib/, where nvcc.profile does not look)
//   ./fpd_bench [sm_clock_mhz=1980]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "../cuda/field/fp.cuh"
#include "../cuda/field/fpd.cuh"

#include "cuda_check.cuh"
#include "random_fp.h"

constexpr int THREADS = 128;
constexpr int ITERS = 1024;

__device__ __forceinline__ uint32_t hash32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

// A normalized fpd value below 2^389 < 2^9 p (top limb < 2^39): valid as either operand.
__device__ __forceinline__ fpd_t fpd_seed(uint32_t s) {
    fpd_t r;
#pragma unroll
    for (int i = 0; i < fpd_t::N; i++) {
        const uint64_t h = (uint64_t)hash32(s * 17 + 2 * i) << 32 | hash32(s * 17 + 2 * i + 1);
        r.v[i] = (double)(h & (i == fpd_t::N - 1 ? (1ull << 39) - 1 : fpd_detail::MASK));
    }
    return r;
}
__device__ __forceinline__ fp_t fp_seed(uint32_t s) {
    fp_t r;
#pragma unroll
    for (int i = 0; i < fp_t::N; i++) r.v[i] = hash32(s * 29 + i);
    r.v[fp_t::N - 1] &= 0x0fffffff;
    return r;
}
__device__ __forceinline__ uint32_t fold(const fpd_t& x) {
    uint32_t r = 0;
#pragma unroll
    for (int i = 0; i < fpd_t::N; i++) {
        const uint64_t b = fpd_detail::bits(x.v[i]);
        r ^= (uint32_t)b ^ (uint32_t)(b >> 32);
    }
    return r;
}
__device__ __forceinline__ uint32_t fold(const fp_t& x) {
    uint32_t r = 0;
#pragma unroll
    for (int i = 0; i < fp_t::N; i++) r ^= x.v[i];
    return r;
}

// MINB: __launch_bounds__ minimum blocks per SM (1: no register cap; 4: <= 128; 8: <= 64).
// Two independent fp_t chains per thread (imad_bench's k_fpmul).
template <int MINB>
__global__ void __launch_bounds__(THREADS, MINB) k_fp(uint32_t* out, uint32_t seed, int iters) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    fp_t x = fp_seed(seed + 3 * t), y = fp_seed(seed + 3 * t + 1), c = fp_seed(seed + 3 * t + 2);
    for (int it = 0; it < iters; it++) {
        x = fp_t::mul<fp_t::FAST_U>(x, c);
        y = fp_t::mul<fp_t::FAST_U>(y, c);
    }
    out[t] = fold(x) ^ fold(y);
}

// CH independent fpd_t chains per thread.
template <int CH, int MINB>
__global__ void __launch_bounds__(THREADS, MINB) k_fpd(uint32_t* out, uint32_t seed, int iters) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    fpd_t x[CH];
    for (int k = 0; k < CH; k++) x[k] = fpd_seed(seed + 5 * t + k);
    const fpd_t c = fpd_seed(seed + 5 * t + 4);
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int k = 0; k < CH; k++) x[k] = fpd_t::mul(x[k], c);
    }
    uint32_t r = 0;
    for (int k = 0; k < CH; k++) r ^= fold(x[k]);
    out[t] = r;
}

// NI fp_t chains and NF fpd_t chains in the same thread: both pipes at once.
template <int NI, int NF, int MINB>
__global__ void __launch_bounds__(THREADS, MINB) k_hybrid(uint32_t* out, uint32_t seed, int iters) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    fp_t x[NI];
    fpd_t y[NF];
    for (int k = 0; k < NI; k++) x[k] = fp_seed(seed + 7 * t + k);
    for (int k = 0; k < NF; k++) y[k] = fpd_seed(seed + 7 * t + 3 + k);
    const fp_t c = fp_seed(seed + 7 * t + 6);
    const fpd_t cd = fpd_seed(seed + 7 * t + 6);
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int k = 0; k < NI; k++) x[k] = fp_t::mul<fp_t::FAST_U>(x[k], c);
#pragma unroll
        for (int k = 0; k < NF; k++) y[k] = fpd_t::mul(y[k], cd);
    }
    uint32_t r = 0;
    for (int k = 0; k < NI; k++) r ^= fold(x[k]);
    for (int k = 0; k < NF; k++) r ^= fold(y[k]);
    out[t] = r;
}

// Correctness: r_fp = fp_t product, r_fpd = fpd product converted back, raw = fpd limbs.
__global__ void k_check(const fp_t* a, const fp_t* b, fp_t* r_fp, fp_t* r_fpd, fpd_t* raw, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    r_fp[i] = fp_t::mul<fp_t::FAST_U>(a[i], b[i]);
    const fpd_t p = fpd_t::mul(fpd_t::from_fp(a[i]), fpd_t::from_fp(b[i]));
    raw[i] = p;
    r_fpd[i] = p.to_fp();
}

template <class K>
static float time_kernel(K kern, int blocks, uint32_t* out) {
    return best_ms([&] { kern(blocks, out); });
}

static int check(int n) {
    std::mt19937_64 rng(42);
    auto element = [&]() { return random_fp(rng); };
    std::vector<fp_t> a(n), b(n), r_fp(n), r_fpd(n);
    std::vector<fpd_t> raw(n);
    for (int i = 0; i < n; i++) a[i] = element(), b[i] = element();
    fp_t p_minus_1;
    for (int i = 0; i < 12; i++) p_minus_1.v[i] = fp_t::P(i);
    p_minus_1.v[0] -= 1;
    const fp_t edge[] = {fp_t::zero(), fp_t::one(), p_minus_1};
    for (int i = 0; i < 9; i++) a[i] = edge[i / 3], b[i] = edge[i % 3];
    fp_t *da, *db, *dr, *drd;
    fpd_t* draw;
    CK(cudaMalloc(&da, n * sizeof(fp_t)));
    CK(cudaMalloc(&db, n * sizeof(fp_t)));
    CK(cudaMalloc(&dr, n * sizeof(fp_t)));
    CK(cudaMalloc(&drd, n * sizeof(fp_t)));
    CK(cudaMalloc(&draw, n * sizeof(fpd_t)));
    CK(cudaMemcpy(da, a.data(), n * sizeof(fp_t), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b.data(), n * sizeof(fp_t), cudaMemcpyHostToDevice));
    k_check<<<(n + 127) / 128, 128>>>(da, db, dr, drd, draw, n);
    CK(cudaGetLastError());
    CK(cudaMemcpy(r_fp.data(), dr, n * sizeof(fp_t), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(r_fpd.data(), drd, n * sizeof(fp_t), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(raw.data(), draw, n * sizeof(fpd_t), cudaMemcpyDeviceToHost));
    long bad_fp = 0, bad_fpd = 0, bad_raw = 0;
    for (int i = 0; i < n; i++) {
        const fp_t want = fp_t::mul_cios<1>(a[i], b[i]);
        bad_fp += !(r_fp[i] == want);
        bad_fpd += !(r_fpd[i] == want);
        const fpd_t host = fpd_t::mul(fpd_t::from_fp(a[i]), fpd_t::from_fp(b[i]));
        bad_raw += memcmp(&host, &raw[i], sizeof(fpd_t)) != 0;
    }
    printf("correctness, %d random products (+ edges) vs host mul_cios<1>: fp_t %ld mismatches, "
           "fpd_t %ld mismatches; fpd limbs vs host fpd product: %ld differ\n",
           n, bad_fp, bad_fpd, bad_raw);
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dr));
    CK(cudaFree(drd));
    CK(cudaFree(draw));
    return (bad_fp || bad_fpd || bad_raw) ? 1 : 0;
}

int main(int argc, char** argv) {
    const double mhz = argc > 1 ? atof(argv[1]) : 1980.0;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int sms = prop.multiProcessorCount;
    printf("%s, %d SMs, cycle figures at %.0f MHz, %d threads/block, %d iterations\n",
           prop.name, sms, mhz, THREADS, ITERS);
    const int fail = check(1 << 16);

    uint32_t* out;
    CK(cudaMalloc(&out, 64u << 20));
    // products: per thread per iteration. Prints registers, local bytes, resident blocks/SM.
    auto bench = [&](const char* name, auto kfun, int products, auto launch) {
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, kfun));
        int resident = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kfun, THREADS, 0));
        for (int bps : {4, 8}) {
            const int blocks = sms * bps;
            const float ms = time_kernel(launch, blocks, out);
            const double muls = (double)products * blocks * THREADS * ITERS;
            const double rate = muls / (ms * 1e6);  // G products / s
            // SM cycles per warp-product, at the given clock, over all SMs
            const double cyc = ms * 1e-3 * mhz * 1e6 * sms / (muls / 32);
            printf("| %-34s | %d blk/SM grid | %3d regs, %4zu B local, %d resident | %8.3f ms "
                   "| %6.2f G products/s | %6.1f SM-cycles/warp-product |\n",
                   name, bps, fa.numRegs, (size_t)fa.localSizeBytes, resident, ms, rate, cyc);
        }
    };
#define L(...) [](int b, uint32_t* o) { __VA_ARGS__<<<b, THREADS>>>(o, 7, ITERS); }
    bench("fp_t FIOS (U=112), 2 chains", k_fp<1>, 2, L(k_fp<1>));
    bench("fp_t FIOS, 2 chains, lb 8", k_fp<8>, 2, L(k_fp<8>));
    bench("fpd_t, 2 chains", k_fpd<2, 1>, 2, L(k_fpd<2, 1>));
    bench("fpd_t, 2 chains, lb 4", k_fpd<2, 4>, 2, L(k_fpd<2, 4>));
    bench("fpd_t, 2 chains, lb 8", k_fpd<2, 8>, 2, L(k_fpd<2, 8>));
    bench("fpd_t, 1 chain", k_fpd<1, 1>, 1, L(k_fpd<1, 1>));
    bench("fpd_t, 1 chain, lb 4", k_fpd<1, 4>, 1, L(k_fpd<1, 4>));
    bench("fpd_t, 1 chain, lb 8", k_fpd<1, 8>, 1, L(k_fpd<1, 8>));
    bench("hybrid 1 fp_t + 1 fpd_t", k_hybrid<1, 1, 1>, 2, L(k_hybrid<1, 1, 1>));
    bench("hybrid 1 fp_t + 1 fpd_t, lb 4", k_hybrid<1, 1, 4>, 2, L(k_hybrid<1, 1, 4>));
    bench("hybrid 1 fp_t + 2 fpd_t", k_hybrid<1, 2, 1>, 3, L(k_hybrid<1, 2, 1>));
    bench("hybrid 2 fp_t + 1 fpd_t", k_hybrid<2, 1, 1>, 3, L(k_hybrid<2, 1, 1>));
#undef L
    CK(cudaFree(out));
    printf("%s\n", fail ? "FAIL" : "OK");
    return fail;
}

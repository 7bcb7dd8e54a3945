// Standalone MSM bucket-pass harness for the device machine (nvcc, no Rust): runs the
// crate's bucket accumulation (cuda/msm/accumulate.cuh, the ~75% of an MSM's time) with
// each Fp product variant (fp_t::mul<U>, cuda/field/fp.cuh), checks every variant's bucket
// sums bit for bit against the first one (U = 1, the CIOS product the crate's tests
// checked against blst), and times each with CUDA events. A variant whose occupancy cuts
// the list into other segments (other blocks per SM) is checked instead against the CIOS
// product run untimed with its segments ("diff words ... (cios at these segments)").
//
//   nvcc -O3 -std=c++17 -arch=sm_90 kernels/bench/msm_harness.cu -o msm_harness
//   ./msm_harness [logs=20,22,24] [reps=5] [g2_logs=20,22]
// (-DNO_G1 / -DNO_G2 leave a group out: two binaries build in parallel on the device;
// -DG1_VARIANTS=... / -DG2_VARIANTS=... replace the variant lists.)
//
// Inputs, made on the device: G1 bases are real curve points (x from a hash, y = sqrt(x^3 + 4)
// with the next x tried when x^3 + 4 is no square), base 0 is infinity. G2 bases are pseudo
// points (hashed coordinates): the formulas' field-operation sequence does not depend on the
// curve equation (only a = 0 in doubling), so they time and compare variants just the same.
// The sorted list the sort would make: nwin * n entries, a hashed base index and sign each,
// in buckets of hashed sizes averaging n / 2^(c-1) (windows as the crate picks them: c = 16
// up to 2^22, 20 above), so reads of the bases are as random as in a real MSM and a few
// buckets hold a base twice (doubling) or a base and its negation (cancellation).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../cuda/curve/bls12_381.cuh"
#include "../cuda/msm/accumulate.cuh"

#include "cuda_check.cuh"

__host__ __device__ inline uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// A hashed element below 2^380 < p (any such word string is some element's Montgomery form).
__device__ fp_t hashed_fp(uint64_t seed) {
    fp_t r;
    for (int i = 0; i < 12; i += 2) {
        uint64_t h = mix64(seed * 8 + i);
        r.v[i] = (uint32_t)h;
        r.v[i + 1] = (uint32_t)(h >> 32);
    }
    r.v[11] &= 0x0fffffff;
    return r;
}

struct exp_t {
    uint32_t w[12];
};

__device__ fp_t fp_pow(const fp_t& x, const exp_t& e) {
    fp_t r = fp_t::one();
    for (int i = 11; i >= 0; i--)
        for (int bit = 31; bit >= 0; bit--) {
            r = fp_t::mul_cios<1>(r, r);
            if ((e.w[i] >> bit) & 1) r = fp_t::mul_cios<1>(r, x);
        }
    return r;
}

// G1 points on y^2 = x^3 + 4; p = 3 mod 4, so sqrt(a) = a^((p+1)/4).
__global__ void k_g1_points(g1_affine_t* out, uint32_t n, exp_t sqrt_exp, uint64_t seed) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    g1_affine_t p;
    if (i == 0) {
        p.x = fp_t::zero();
        p.y = fp_t::zero();
    } else {
        fp_t four = fp_t::one().dbl().dbl();
        fp_t x = hashed_fp(seed ^ ((uint64_t)i << 20)), y;
        for (;;) {
            fp_t rhs = fp_t::mul_cios<1>(fp_t::mul_cios<1>(x, x), x) + four;
            y = fp_pow(rhs, sqrt_exp);
            if (fp_t::mul_cios<1>(y, y) == rhs) break;
            x = x + fp_t::one();
        }
        p.x = x;
        p.y = y;
    }
    out[i] = p;
}

__global__ void k_g2_points(g2_affine_t* out, uint32_t n, uint64_t seed) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint64_t s = seed ^ ((uint64_t)i << 20);
    g2_affine_t p;
    p.x = {hashed_fp(s), hashed_fp(s + 1)};
    p.y = {hashed_fp(s + 2), hashed_fp(s + 3)};
    out[i] = p;
}

__global__ void k_entries(uint32_t* sorted, uint64_t total, uint32_t n, uint64_t seed) {
    for (uint64_t e = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; e < total;
         e += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t h = mix64(seed + e);
        uint32_t idx = (uint32_t)((h & 0xffffffffull) % n);
        sorted[e] = idx | ((uint32_t)(h >> 63) << 31);
    }
}

// Differing 32-bit words between two buffers.
__global__ void k_diff(const uint32_t* a, const uint32_t* b, size_t words,
                       unsigned long long* count) {
    unsigned long long c = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words;
         i += (size_t)gridDim.x * blockDim.x)
        c += a[i] != b[i];
    if (c) atomicAdd(count, c);
}

template <class F, int U, int MINB>
__global__ void __launch_bounds__(128, MINB)
    k_accumulate(const affine_t<F>* points, const uint32_t* sorted, const uint32_t* offsets,
                 uint32_t nb, uint32_t total, uint32_t seg_len, xyzz_t<F>* buckets,
                 xyzz_t<F>* head_sum, uint32_t* head_bucket) {
    accumulate_buckets<F, U>(points, sorted, offsets, nb, total, seg_len, buckets, head_sum,
                             head_bucket);
}

template <class F>
__global__ void __launch_bounds__(128)
    k_fixup(uint32_t nseg, xyzz_t<F>* buckets, const xyzz_t<F>* head_sum,
            const uint32_t* head_bucket) {
    // The heads joined by one thread in one group (untimed; the crate joins in levels,
    // cuda/msm/accumulate.cuh): nothing is left open, so the two outputs stay unused.
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    uint32_t key_out[2];
    xyzz_t<F> val_out[2];
    join_heads<F>(head_bucket, head_sum, nseg, nseg, key_out, val_out, buckets);
}

struct Problem {
    uint32_t n, c, nwin, nb, total;
    uint32_t *sorted, *offsets;
};

static Problem make_problem(uint32_t log_n, uint64_t seed) {
    Problem pr;
    pr.n = 1u << log_n;
    pr.c = log_n <= 22 ? 16 : 20;
    pr.nwin = (256 + pr.c - 1) / pr.c;
    pr.nb = pr.nwin << (pr.c - 1);
    const uint32_t avg = std::max(1u, pr.n >> (pr.c - 1));
    std::vector<uint32_t> off(pr.nb + 1);
    uint64_t acc = 0;
    for (uint32_t b = 0; b < pr.nb; b++) {
        off[b] = (uint32_t)acc;
        acc += avg / 2 + mix64(seed * 131 + b) % (avg + 1);
    }
    off[pr.nb] = (uint32_t)acc;
    pr.total = (uint32_t)acc;
    CK(cudaMalloc(&pr.offsets, off.size() * 4));
    CK(cudaMemcpy(pr.offsets, off.data(), off.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&pr.sorted, (size_t)pr.total * 4));
    k_entries<<<4096, 256>>>(pr.sorted, pr.total, pr.n, seed);
    CK(cudaGetLastError());
    return pr;
}

static void free_problem(Problem& pr) {
    CK(cudaFree(pr.sorted));
    CK(cudaFree(pr.offsets));
}

template <class F>
struct Out {
    xyzz_t<F>* buckets;
    xyzz_t<F>* head_sum;
    uint32_t *head_bucket, *tail_bucket;
    uint32_t segments, seg_len;
};

static int g_sms;

// seg_len: 0 to size the segments from the kernel's occupancy as the crate does, or the
// segment length to use (the reference run for another variant's segments).
template <class F, int U, int MINB>
static float run_variant(const char* name, const affine_t<F>* points, const Problem& pr,
                         Out<F>& o, int reps, uint32_t seg_len = 0) {
    auto kern = k_accumulate<F, U, MINB>;
    if (seg_len) {
        o.seg_len = seg_len;
    } else {
        int blocks = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kern, 128, 0));
        blocks = std::max(blocks, 1);
        // As kernels/src/msm.rs: two full waves of resident threads, at most 2^20.
        uint32_t waves = 2u * g_sms * blocks * 128;
        uint32_t segs = std::min(pr.total, std::min(waves, 1u << 20));
        o.seg_len = (pr.total + segs - 1) / segs;
    }
    o.segments = (pr.total + o.seg_len - 1) / o.seg_len;
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> ts;
    for (int r = 0; r <= reps; r++) {
        CK(cudaMemset(o.buckets, 0, (size_t)pr.nb * sizeof(xyzz_t<F>)));
        CK(cudaMemset(o.head_bucket, 0, (size_t)o.segments * 4));
        CK(cudaMemset(o.tail_bucket, 0, (size_t)o.segments * 4));
        CK(cudaEventRecord(a));
        kern<<<(o.segments + 127) / 128, 128>>>(points, pr.sorted, pr.offsets, pr.nb, pr.total,
                                                o.seg_len, o.buckets, o.head_sum,
                                                o.head_bucket);
        CK(cudaEventRecord(b));
        CK(cudaGetLastError());
        // The fix-up (one thread: 1-2 s at 2^16-2^17 segments) only after the last run: the
        // buckets are what is compared, and per run it made a default run outlast 10 minutes.
        if (r == reps) {
            k_fixup<F><<<1, 32>>>(o.segments, o.buckets, o.head_sum, o.head_bucket);
            CK(cudaGetLastError());
        }
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (r) ts.push_back(ms);  // the first run is the warm-up
    }
    CK(cudaDeviceSynchronize());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    if (ts.empty()) return 0;
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
}

struct Row {
    std::string group, variant;
    uint32_t log_n;
    float ms;
    double madd_per_s;
    long long diff;
};
static std::vector<Row> g_rows;

template <class F>
struct Bench {
    const affine_t<F>* points;
    Problem pr;
    uint32_t log_n;
    const char* group;
    int reps;
    Out<F> ref{}, cur{};
    bool have_ref = false;
    // CIOS bucket sums at other segment lengths than ref's, made on first need.
    std::vector<Out<F>> alt;

    void alloc(Out<F>& o) {
        CK(cudaMalloc(&o.buckets, (size_t)pr.nb * sizeof(xyzz_t<F>)));
        CK(cudaMalloc(&o.head_sum, (size_t)(1u << 20) * sizeof(xyzz_t<F>)));
        CK(cudaMalloc(&o.head_bucket, (size_t)(1u << 20) * 4));
        CK(cudaMalloc(&o.tail_bucket, (size_t)(1u << 20) * 4));
    }
    void release(Out<F>& o) {
        CK(cudaFree(o.buckets));
        CK(cudaFree(o.head_sum));
        CK(cudaFree(o.head_bucket));
        CK(cudaFree(o.tail_bucket));
    }

    // The reference for cur's segments: ref where they match, else CIOS (U = 1, no register
    // cap) run once untimed with cur's segment length.
    const Out<F>& ref_for_cur() {
        if (cur.seg_len == ref.seg_len) return ref;
        for (const Out<F>& o : alt)
            if (o.seg_len == cur.seg_len) return o;
        alt.emplace_back();
        Out<F>& o = alt.back();
        alloc(o);
        run_variant<F, 1, 1>("cios reference", points, pr, o, 0, cur.seg_len);
        return o;
    }

    // The bucket sums after the fix-up: what the reduction reads.
    long long diff_vs_ref() {
        const Out<F>& r = ref_for_cur();
        unsigned long long* d;
        CK(cudaMalloc(&d, 8));
        CK(cudaMemset(d, 0, 8));
        k_diff<<<4096, 256>>>((const uint32_t*)r.buckets, (const uint32_t*)cur.buckets,
                              (size_t)pr.nb * sizeof(xyzz_t<F>) / 4, d);
        CK(cudaGetLastError());
        unsigned long long h;
        CK(cudaMemcpy(&h, d, 8, cudaMemcpyDeviceToHost));
        CK(cudaFree(d));
        return (long long)h;
    }

    template <int U, int MINB>
    void variant(const char* name) {
        Out<F>& o = have_ref ? cur : ref;
        float ms = run_variant<F, U, MINB>(name, points, pr, o, reps);
        long long d = have_ref ? diff_vs_ref() : 0;
        const bool other_segs = have_ref && cur.seg_len != ref.seg_len;
        have_ref = true;
        Row r{group, name, log_n, ms, pr.total / (ms * 1e-3), d};
        printf("%s 2^%u %-22s %9.3f ms  %6.3f G madd/s  segs %u x %u  diff words %lld%s\n", group,
               log_n, name, ms, r.madd_per_s * 1e-9, o.segments, o.seg_len, d,
               other_segs ? " (cios at these segments)" : "");
        fflush(stdout);
        g_rows.push_back(r);
    }
};

static std::vector<uint32_t> parse_list(const char* s) {
    std::vector<uint32_t> v;
    for (const char* p = s; *p;) {
        v.push_back((uint32_t)strtoul(p, (char**)&p, 10));
        if (*p == ',') p++;
    }
    return v;
}

// (p + 1) / 4 as 32-bit words.
[[maybe_unused]] static exp_t sqrt_exponent() {
    exp_t e;
    uint64_t carry = 1;
    for (int i = 0; i < 12; i++) {
        uint64_t t = (uint64_t)fp_t::P(i) + carry;
        e.w[i] = (uint32_t)t;
        carry = t >> 32;
    }
    for (int i = 0; i < 12; i++) e.w[i] = (e.w[i] >> 2) | (i < 11 ? e.w[i + 1] << 30 : 0);
    return e;
}

// The G1 variants: U as fp_t::mul documents; MINB blocks of 128 per SM (register cap). A
// variant is compared with the first one of its group where its blocks per SM (hence its
// segments and order of additions) are the first's, else with CIOS run at its segments:
// every variant is checked bit for bit. -DCRATE_CONFIG checks the configuration cuda/msm.cu
// builds (CUZK_G1_ADD_U at CUZK_G1_ADD_BLOCKS) against CIOS. The last six: the crate's configuration
// (2 blocks of 128 per SM), the Karatsuba product (KARA) and its lazy mixed addition
// (KARA_LAZY, one reduction fewer per addition) beside it, and the lazy addition with FIOS
// products and schoolbook wide ones (FIOS_LAZY).
#ifdef CRATE_CONFIG
#define G1_VARIANTS                                                 \
    V(1, 3, "cios rolled, 3 blk/SM")                                \
    V(fp_t::FIOS_CALL_LAZY, 3, "crate: fios call lazy, 3 blk/SM")   \
    V(fp_t::FIOS_SQR, 3, "fios + square, 3 blk/SM")                 \
    V(fp_t::FIOS_SQR, 4, "fios + square, 4 blk/SM")
#define G2_VARIANTS                                        \
    V(1, 1, "cios rolled (old crate)")                     \
    V(fp2_t::FAST_U, 1, "crate: fios unrolled call")
#endif
// -DLAZY_SET: the lazy Y3 in and out of line at the blocks per SM their registers allow,
// beside plain FIOS (the crate before FIOS_LAZY) and FIOS out of line (NOTES, part 11: out
// of line at 3 blocks won and is the crate's bucket loop).
#ifdef LAZY_SET
#define G1_VARIANTS                                     \
    V(112, 2, "fios unrolled, 2 blk/SM")                \
    V(600, 2, "fios lazy, 2 blk/SM (FAST_U)")           \
    V(200, 4, "fios call, 4 blk/SM")                    \
    V(700, 4, "fios call lazy, 4 blk/SM")               \
    V(700, 3, "fios call lazy, 3 blk/SM")               \
    V(700, 2, "fios call lazy, 2 blk/SM")
#define G2_VARIANTS V(1, 1, "cios rolled (crate)")
#endif
// -DFP2_LAZY_SET: G2's lazy Fp2 product and a b - c d (fp2_t, FIOS_CALL_LAZY, the crate's
// default) beside FIOS out of line (the crate before it), both against CIOS.
#ifdef FP2_LAZY_SET
#define G1_VARIANTS V(fp_t::FIOS_CALL_LAZY, 3, "crate: fios call lazy, 3 blk/SM")
#define G2_VARIANTS                                   \
    V(1, 1, "cios rolled")                            \
    V(fp_t::FIOS_CALL, 1, "fios unrolled call (before)") \
    V(fp_t::FIOS_CALL_LAZY, 1, "fp2 lazy, call (crate)")
#endif
#ifndef G1_VARIANTS
#define G1_VARIANTS                        \
    V(1, 4, "cios rolled (crate)")         \
    V(102, 4, "fios 2 rows/iter")          \
    V(102, 3, "fios 2 rows, 3 blk/SM")     \
    V(104, 4, "fios 4 rows/iter")          \
    V(104, 3, "fios 4 rows, 3 blk/SM")     \
    V(112, 4, "fios unrolled inline")      \
    V(112, 3, "fios unrolled, 3 blk/SM")   \
    V(200, 4, "fios unrolled call")        \
    V(112, 2, "fios unrolled, 2 blk/SM")   \
    V(400, 2, "kara, 2 blk/SM")            \
    V(500, 2, "kara lazy, 2 blk/SM")       \
    V(400, 3, "kara, 3 blk/SM")            \
    V(500, 3, "kara lazy, 3 blk/SM")       \
    V(600, 2, "fios lazy, 2 blk/SM")
#endif
#ifndef G2_VARIANTS
#define G2_VARIANTS                  \
    V(1, 1, "cios rolled (crate)")   \
    V(102, 1, "fios 2 rows/iter")    \
    V(104, 1, "fios 4 rows/iter")    \
    V(200, 1, "fios unrolled call")
#endif

int main(int argc, char** argv) {
    std::vector<uint32_t> logs = parse_list(argc > 1 ? argv[1] : "20,22,24");
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    std::vector<uint32_t> g2_logs = parse_list(argc > 3 ? argv[3] : "20,22");
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    g_sms = prop.multiProcessorCount;
    printf("%s, %d SMs\n", prop.name, g_sms);

    uint32_t max_log = 0;
    for (uint32_t l : logs) max_log = std::max(max_log, l);
#ifndef NO_G1
    if (!logs.empty()) {
        g1_affine_t* pts;
        uint32_t np = 1u << max_log;
        CK(cudaMalloc(&pts, (size_t)np * sizeof(g1_affine_t)));
        const float ms = once_ms(
            [&] { k_g1_points<<<(np + 127) / 128, 128>>>(pts, np, sqrt_exponent(), 0x5eed); });
        printf("G1 bases: 2^%u curve points in %.0f ms\n", max_log, ms);
        for (uint32_t l : logs) {
            Bench<fp_t> bn;
            bn.points = pts;
            bn.pr = make_problem(l, 1000 + l);
            bn.log_n = l;
            bn.group = "G1";
            bn.reps = l >= 24 ? std::min(reps, 5) : reps;
            bn.alloc(bn.ref);
            bn.alloc(bn.cur);
#define V(U, B, NAME) bn.variant<U, B>(NAME);
            G1_VARIANTS
#undef V
            bn.release(bn.ref);
            bn.release(bn.cur);
            for (auto& o : bn.alt) bn.release(o);
            free_problem(bn.pr);
        }
        CK(cudaFree(pts));
    }
#endif
#ifndef NO_G2
    max_log = 0;
    for (uint32_t l : g2_logs) max_log = std::max(max_log, l);
    if (!g2_logs.empty()) {
        g2_affine_t* pts;
        uint32_t np = 1u << max_log;
        CK(cudaMalloc(&pts, (size_t)np * sizeof(g2_affine_t)));
        k_g2_points<<<(np + 127) / 128, 128>>>(pts, np, 0x6eed);
        CK(cudaGetLastError());
        for (uint32_t l : g2_logs) {
            Bench<fp2_t> bn;
            bn.points = pts;
            bn.pr = make_problem(l, 2000 + l);
            bn.log_n = l;
            bn.group = "G2";
            bn.reps = reps;
            bn.alloc(bn.ref);
            bn.alloc(bn.cur);
#define V(U, B, NAME) bn.variant<U, B>(NAME);
            G2_VARIANTS
#undef V
            bn.release(bn.ref);
            bn.release(bn.cur);
            for (auto& o : bn.alt) bn.release(o);
            free_problem(bn.pr);
        }
        CK(cudaFree(pts));
    }
#endif

    printf("\n| group | size | variant | bucket pass ms | G madd/s | words != ref |\n");
    printf("| --- | --- | --- | --- | --- | --- |\n");
    for (const Row& r : g_rows)
        printf("| %s | 2^%u | %s | %.2f | %.3f | %lld |\n", r.group.c_str(), r.log_n,
               r.variant.c_str(), r.ms, r.madd_per_s * 1e-9, r.diff);
    return 0;
}

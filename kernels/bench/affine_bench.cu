// Does affine bucket accumulation with batched inversion (cuda/msm/accumulate_affine.cuh)
// beat the crate's XYZZ mixed-addition bucket pass (cuda/msm/accumulate.cuh) for an H-MSM-like
// input? Standalone (nvcc, no Rust), self-checking:
//
// 1. correctness: small and edge-case inputs (one entry, one bucket, doubling runs, a point
//    and its negation, infinity entries, empty buckets, a tiny point pool, skew, a random
//    spread) through both kernels, each followed by the crate's levelled `join_heads`; every
//    bucket normalised to affine on the device and compared bit for bit. Every affine
//    variant (M) runs at one block and at full occupancy. The timed runs are compared too.
// 2. timing (CUDA events, median of reps): the XYZZ kernel launched as kernels/src/msm
//    launches it (segments: two waves of resident threads, at most 2^20) against the affine
//    kernel for each M, at full occupancy and at fewer blocks per SM; the kernel alone and
//    the kernel plus the head join (the affine kernel's segments are short, so it leaves far
//    more heads to join).
//
// Input: N entries (2^log_n), one per point, points distinct (random curve points, point 0
// at infinity), each put in a uniformly random bucket of NB with a random sign, sorted by
// bucket on the host: the shape of one window of the H MSM (2^27 uniform scalars).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v kernels/bench/affine_bench.cu -o affine_bench
//   ./affine_bench [log_n=26] [nb_logs=22,20] [reps=5] [blocks_per_sm=0,1]   (0 = occupancy)
// (here: add -L.tools/cuda/nvidia/cu13/lib, where this toolkit keeps libcudart_static.a)
// -DAFFINE_VARIANTS="V(M, MINB) ..." replaces the list of affine variants.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../cuda/curve/bls12_381.cuh"
#include "../cuda/msm/accumulate.cuh"
#include "../cuda/msm/accumulate_affine.cuh"

#include "cuda_check.cuh"

#ifndef AFFINE_VARIANTS
// V(M, MINB): M virtual segments per thread, __launch_bounds__(128, MINB). At MINB 2 ptxas
// gives the kernel ~142 registers (3 blocks/SM resident); MINB 4 caps it at 128.
#define AFFINE_VARIANTS V(64, 2) V(128, 2) V(256, 2) V(512, 2) V(256, 4)
#endif

static inline __host__ __device__ uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

struct exp_t {
    uint32_t w[12];
};

// (p + 1) / 4: p = 3 mod 4, so sqrt(a) = a^((p+1)/4) when a is a square.
static exp_t sqrt_exponent() {
    exp_t e;
    uint64_t c = 1;
    for (int i = 0; i < 12; i++) {
        const uint64_t s = (uint64_t)fp_t::P(i) + c;
        e.w[i] = (uint32_t)s;
        c = s >> 32;
    }
    for (int i = 0; i < 12; i++) e.w[i] = (e.w[i] >> 2) | (i < 11 ? e.w[i + 1] << 30 : 0);
    return e;
}

// Points of y^2 = x^3 + 4 from hashed x (the next x while x^3 + 4 is no square). Not
// necessarily in the prime-order subgroup, which the formulas do not care about; E(Fp) has
// odd order, so no point has y = 0. Point 0 is infinity. x below 2^380: distinct with
// overwhelming probability.
__global__ void k_points(g1_affine_t* out, uint32_t n, exp_t sq, uint64_t seed) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (i == 0) {
        out[0] = {fp_t::zero(), fp_t::zero()};
        return;
    }
    fp_t x;
    for (int k = 0; k < 12; k += 2) {
        const uint64_t h = mix64(seed ^ ((uint64_t)i << 8) ^ k);
        x.v[k] = (uint32_t)h;
        x.v[k + 1] = (uint32_t)(h >> 32);
    }
    x.v[11] &= 0x0fffffff;
    const fp_t four = fp_t::one().dbl().dbl();
    for (;;) {
        const fp_t rhs = x * x * x + four;
        fp_t y = fp_t::one();
        for (int w = 11; w >= 0; w--)
            for (int b = 31; b >= 0; b--) {
                y = y * y;
                if ((sq.w[w] >> b) & 1) y = y * rhs;
            }
        if (y * y == rhs) {
            out[i] = {x, y};
            return;
        }
        x = x + fp_t::one();
    }
}

template <int MINB>
__global__ void __launch_bounds__(128, MINB)
    k_acc_xyzz(const g1_affine_t* points, const uint32_t* sorted, const uint32_t* offsets,
               uint32_t nb, uint32_t total, uint32_t seg_len, g1_xyzz_t* buckets,
               g1_xyzz_t* head_sum, uint32_t* head_bucket) {
    accumulate_buckets<fp_t>(points, sorted, offsets, nb, total, seg_len, buckets, head_sum,
                             head_bucket);
}

__global__ void __launch_bounds__(128)
    k_join(const uint32_t* key, const g1_xyzz_t* val, uint32_t m, uint32_t g, uint32_t* key_out,
           g1_xyzz_t* val_out, g1_xyzz_t* buckets) {
    join_heads<fp_t>(key, val, m, g, key_out, val_out, buckets);
}

// XYZZ to affine, one inversion per bucket (1/Z = ZZ / ZZZ, x = X / Z^2, y = Y / Z^3): the
// affine form is unique, so two kernels' sums of one bucket must match word for word.
__global__ void k_to_affine(const g1_xyzz_t* in, g1_affine_t* out, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const g1_xyzz_t q = in[i];
    if (q.is_inf()) {
        out[i] = {fp_t::zero(), fp_t::zero()};
        return;
    }
    const fp_t izzz = q.ZZZ.inv();
    const fp_t iz = q.ZZ * izzz;
    out[i] = {q.X * iz.sqr(), q.Y * izzz};
}

__global__ void k_count_diff(const g1_affine_t* a, const g1_affine_t* b, uint32_t n,
                             unsigned long long* count) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (!(a[i].x == b[i].x && a[i].y == b[i].y)) atomicAdd(count, 1ull);
}

static int g_sms;

struct Problem {
    uint32_t total = 0, nb = 0;
    uint32_t *sorted = nullptr, *offsets = nullptr;
};

static Problem upload(const std::vector<std::vector<uint32_t>>& buckets) {
    std::vector<uint32_t> sorted, offsets;
    for (const auto& b : buckets) {
        offsets.push_back((uint32_t)sorted.size());
        sorted.insert(sorted.end(), b.begin(), b.end());
    }
    offsets.push_back((uint32_t)sorted.size());
    Problem pr;
    pr.total = (uint32_t)sorted.size();
    pr.nb = (uint32_t)buckets.size();
    CK(cudaMalloc(&pr.sorted, std::max<size_t>(sorted.size(), 1) * 4));
    CK(cudaMalloc(&pr.offsets, offsets.size() * 4));
    CK(cudaMemcpy(pr.sorted, sorted.data(), sorted.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(pr.offsets, offsets.data(), offsets.size() * 4, cudaMemcpyHostToDevice));
    return pr;
}

// Entry i is point i with a random sign in a uniformly random bucket (counting sort).
static Problem make_uniform(uint32_t n, uint32_t nb, uint64_t seed) {
    std::vector<uint32_t> count(nb + 1, 0), bucket(n);
    for (uint32_t i = 0; i < n; i++) count[(bucket[i] = (uint32_t)(mix64(seed + i) % nb)) + 1]++;
    for (uint32_t b = 0; b < nb; b++) count[b + 1] += count[b];
    std::vector<uint32_t> offsets(count), sorted(n);
    for (uint32_t i = 0; i < n; i++)
        sorted[count[bucket[i]]++] = i | (uint32_t)(mix64(~seed ^ i) >> 63) << 31;
    Problem pr;
    pr.total = n;
    pr.nb = nb;
    CK(cudaMalloc(&pr.sorted, (size_t)n * 4));
    CK(cudaMalloc(&pr.offsets, (size_t)(nb + 1) * 4));
    CK(cudaMemcpy(pr.sorted, sorted.data(), (size_t)n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(pr.offsets, offsets.data(), (size_t)(nb + 1) * 4, cudaMemcpyHostToDevice));
    return pr;
}

static void free_problem(Problem& pr) {
    CK(cudaFree(pr.sorted));
    CK(cudaFree(pr.offsets));
}

// The crate's join (kernels/src/msm/buckets.rs): levels of join_heads, 8 slots per thread.
// Destroys keys / vals. The scratch is allocated outside the timed region (a cudaFree there
// would synchronise and be timed).
static const uint32_t JOIN_G = 8;
struct JoinScratch {
    uint32_t* keys = nullptr;
    g1_xyzz_t* vals = nullptr;
    explicit JoinScratch(uint32_t m) {
        const size_t cap = 2 * (size_t)((m + JOIN_G - 1) / JOIN_G);
        CK(cudaMalloc(&keys, cap * 4));
        CK(cudaMalloc(&vals, cap * sizeof(g1_xyzz_t)));
    }
    ~JoinScratch() {
        CK(cudaFree(keys));
        CK(cudaFree(vals));
    }
};

static void join_levels(uint32_t* keys, g1_xyzz_t* vals, uint32_t m, const JoinScratch& js,
                        g1_xyzz_t* buckets) {
    uint32_t *kin = keys, *ko = js.keys;
    g1_xyzz_t *vin = vals, *vo = js.vals;
    for (;;) {
        const uint32_t groups = (m + JOIN_G - 1) / JOIN_G;
        k_join<<<(groups + 127) / 128, 128>>>(kin, vin, m, JOIN_G, ko, vo, buckets);
        CK(cudaGetLastError());
        if (groups == 1) break;
        m = 2 * groups;
        std::swap(kin, ko);
        std::swap(vin, vo);
    }
}

// Per rep: buckets and head keys zeroed (untimed), then kernel [a, b), join [b, c).
struct Timing {
    float acc_ms = 0, total_ms = 0;
    uint32_t threads = 0, segments = 0, seg_len = 0;
    int regs = 0, spill = 0, blocks_per_sm = 0;
};

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.f : v[v.size() / 2];
}

template <class Launch>
static void timed_reps(int reps, Timing& tm, const Problem& pr, g1_xyzz_t* buckets,
                       uint32_t* head_bucket, size_t heads, Launch launch_and_join) {
    cudaEvent_t a, b, c;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaEventCreate(&c));
    std::vector<float> acc, tot;
    for (int r = 0; r <= reps; r++) {  // r = 0: warm-up (and the only run when reps = 0)
        CK(cudaMemset(buckets, 0, (size_t)pr.nb * sizeof(g1_xyzz_t)));
        CK(cudaMemset(head_bucket, 0, heads * 4));
        CK(cudaEventRecord(a));
        launch_and_join(b);
        CK(cudaEventRecord(c));
        CK(cudaEventSynchronize(c));
        float x, y;
        CK(cudaEventElapsedTime(&x, a, b));
        CK(cudaEventElapsedTime(&y, a, c));
        if (r || reps == 0) acc.push_back(x), tot.push_back(y);
    }
    tm.acc_ms = median(acc);
    tm.total_ms = median(tot);
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    CK(cudaEventDestroy(c));
}

template <class K>
static void kernel_info(K k, Timing& tm) {
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, k));
    tm.regs = fa.numRegs;
    tm.spill = (int)fa.localSizeBytes;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&tm.blocks_per_sm, k, 128, 0));
}

static Timing run_xyzz(const g1_affine_t* pts, const Problem& pr, g1_xyzz_t* buckets, int reps) {
    Timing tm;
    auto k = k_acc_xyzz<2>;  // ACC_BLOCKS of G1 in cuda/msm.cu
    kernel_info(k, tm);
    const uint32_t waves = 2u * g_sms * std::max(tm.blocks_per_sm, 1) * 128;
    uint32_t segs = std::max(1u, std::min(pr.total, std::min(waves, 1u << 20)));
    tm.seg_len = std::max(1u, (pr.total + segs - 1) / segs);
    tm.segments = std::max(1u, (pr.total + tm.seg_len - 1) / tm.seg_len);
    tm.threads = tm.segments;
    g1_xyzz_t* head_sum;
    uint32_t* head_bucket;
    CK(cudaMalloc(&head_sum, (size_t)tm.segments * sizeof(g1_xyzz_t)));
    CK(cudaMalloc(&head_bucket, (size_t)tm.segments * 4));
    JoinScratch js(tm.segments);
    timed_reps(reps, tm, pr, buckets, head_bucket, tm.segments, [&](cudaEvent_t b) {
        k<<<(tm.segments + 127) / 128, 128>>>(pts, pr.sorted, pr.offsets, pr.nb, pr.total,
                                              tm.seg_len, buckets, head_sum, head_bucket);
        CK(cudaGetLastError());
        CK(cudaEventRecord(b));
        join_levels(head_bucket, head_sum, tm.segments, js, buckets);
    });
    CK(cudaFree(head_sum));
    CK(cudaFree(head_bucket));
    return tm;
}

// blocks: grid size (0 = full occupancy, every SM's resident blocks).
template <int M, int MINB>
static Timing run_affine(const g1_affine_t* pts, const Problem& pr, g1_xyzz_t* buckets,
                         int reps, uint32_t blocks) {
    Timing tm;
    auto k = accumulate_affine_kernel<fp_t, M, MINB>;
    kernel_info(k, tm);
    if (blocks == 0) blocks = (uint32_t)g_sms * std::max(tm.blocks_per_sm, 1);
    const uint32_t T = blocks * 128;
    const uint64_t V = (uint64_t)M * T;
    tm.threads = T;
    tm.seg_len = (uint32_t)std::max<uint64_t>(1, (pr.total + V - 1) / V);
    tm.segments = (uint32_t)std::max<uint64_t>(1, (pr.total + tm.seg_len - 1) / tm.seg_len);
    constexpr int NG = sizeof(fp_t) / 16;
    affine_acc_args<fp_t> a;
    a.points = pts;
    a.sorted = pr.sorted;
    a.offsets = pr.offsets;
    a.nb = pr.nb;
    a.total = pr.total;
    a.seg_len = tm.seg_len;
    CK(cudaMalloc(&a.acc_x, V * NG * sizeof(aff_chunk_t)));
    CK(cudaMalloc(&a.acc_y, V * NG * sizeof(aff_chunk_t)));
    CK(cudaMalloc(&a.pre, V * NG * sizeof(aff_chunk_t)));
    CK(cudaMalloc(&a.state, V * sizeof(aff_chunk_t)));
    // Only segments that start inside the list can write a head: V caps it, so does total.
    CK(cudaMalloc(&a.head_sum, (size_t)tm.segments * sizeof(g1_xyzz_t)));
    CK(cudaMalloc(&a.head_bucket, (size_t)tm.segments * 4));
    a.buckets = buckets;
    JoinScratch js(tm.segments);
    timed_reps(reps, tm, pr, buckets, a.head_bucket, tm.segments, [&](cudaEvent_t b) {
        k<<<blocks, 128>>>(a);
        CK(cudaGetLastError());
        CK(cudaEventRecord(b));
        join_levels(a.head_bucket, a.head_sum, tm.segments, js, buckets);
    });
    CK(cudaFree(a.acc_x));
    CK(cudaFree(a.acc_y));
    CK(cudaFree(a.pre));
    CK(cudaFree(a.state));
    CK(cudaFree(a.head_sum));
    CK(cudaFree(a.head_bucket));
    return tm;
}

// Buckets (xyzz) of two runs that differ in affine form.
static long long diff_buckets(const g1_xyzz_t* x, const g1_xyzz_t* y, uint32_t nb) {
    g1_affine_t *ax, *ay;
    unsigned long long* d;
    CK(cudaMalloc(&ax, (size_t)nb * sizeof(g1_affine_t)));
    CK(cudaMalloc(&ay, (size_t)nb * sizeof(g1_affine_t)));
    CK(cudaMalloc(&d, 8));
    CK(cudaMemset(d, 0, 8));
    k_to_affine<<<(nb + 127) / 128, 128>>>(x, ax, nb);
    k_to_affine<<<(nb + 127) / 128, 128>>>(y, ay, nb);
    k_count_diff<<<(nb + 127) / 128, 128>>>(ax, ay, nb, d);
    CK(cudaGetLastError());
    unsigned long long h;
    CK(cudaMemcpy(&h, d, 8, cudaMemcpyDeviceToHost));
    CK(cudaFree(ax));
    CK(cudaFree(ay));
    CK(cudaFree(d));
    return (long long)h;
}

static long g_checks = 0, g_fail = 0;

static void record(const char* what, const char* variant, long long bad) {
    g_checks++;
    g_fail += bad != 0;
    printf("  %-34s %-28s %s (%lld buckets differ)\n", what, variant, bad ? "FAIL" : "PASS", bad);
    fflush(stdout);
}

// One case: XYZZ reference, then every affine variant at one block and at full occupancy.
static void check_case(const char* name, const g1_affine_t* pts, Problem pr) {
    g1_xyzz_t *ref, *got;
    CK(cudaMalloc(&ref, (size_t)pr.nb * sizeof(g1_xyzz_t)));
    CK(cudaMalloc(&got, (size_t)pr.nb * sizeof(g1_xyzz_t)));
    run_xyzz(pts, pr, ref, 0);
    char v[64];
#define V(M, MINB)                                                                    \
    for (uint32_t blocks : {1u, 0u}) {                                                \
        Timing t = run_affine<M, MINB>(pts, pr, got, 0, blocks);                      \
        snprintf(v, sizeof v, "M=%d/%d T=%u seg_len=%u", M, MINB, t.threads, t.seg_len); \
        record(name, v, diff_buckets(ref, got, pr.nb));                               \
    }
    AFFINE_VARIANTS
#undef V
    CK(cudaFree(ref));
    CK(cudaFree(got));
    free_problem(pr);
}

static void correctness(const g1_affine_t* pts, uint32_t npts) {
    printf("== correctness (affine vs XYZZ, both + join_heads, buckets compared in affine form)\n");
    uint64_t st = 12345;
    auto rnd = [&](uint32_t n) { return (uint32_t)(mix64(st++) % n); };
    auto sgn = [&]() { return (uint32_t)(mix64(st++) >> 63) << 31; };
    typedef std::vector<std::vector<uint32_t>> B;
    const uint32_t NEG = 1u << 31;
    check_case("one entry", pts, upload(B{{5}}));
    check_case("one infinity entry", pts, upload(B{{}, {0}}));
    {
        B b(1);
        for (uint32_t i = 1; i < 5000; i++) b[0].push_back(i | sgn());
        check_case("one bucket, 4999 distinct", pts, upload(b));
    }
    {
        B b(4);
        for (int i = 0; i < 40; i++) b[0].push_back(7);
        for (int i = 0; i < 33; i++) b[1].push_back(9 | NEG);
        for (int i = 0; i < 20; i++) b[2].push_back(i % 2 ? 3 : 4);
        for (int i = 0; i < 50; i++) b[3].push_back(rnd(3) + 1);
        check_case("doubling runs", pts, upload(b));
    }
    {
        B b(3);
        for (uint32_t i = 0; i < 30; i++) b[0].push_back(11 | (i & 1) << 31);
        b[1] = {12, 12, 12 | NEG, 12 | NEG, 12 | NEG, 13};
        b[2] = {14, 15, 14 | NEG, 15 | NEG, 16};
        check_case("cancellation", pts, upload(b));
    }
    check_case("infinity entries", pts,
               upload(B{{0, 0, 0}, {0, 1, 0, 1}, {2, 0, 2 | NEG, 0}, {0}, {}}));
    {
        B b(3000);
        for (int i = 0; i < 1200; i++) b[rnd(3000)].push_back(rnd(200) | sgn());
        check_case("sparse (empty buckets)", pts, upload(b));
    }
    {
        B b(40);
        for (int i = 0; i < 100000; i++) b[rnd(40)].push_back(rnd(4) | sgn());
        check_case("tiny pool (0..3), 1e5 entries", pts, upload(b));
    }
    {
        B b(64);
        for (int i = 0; i < 200000; i++) b[i % 3 ? 17 : rnd(64)].push_back(rnd(npts) | sgn());
        check_case("skewed (one giant bucket)", pts, upload(b));
    }
    {
        B b(1 << 14);
        for (int i = 0; i < (1 << 20); i++) b[rnd(1 << 14)].push_back(rnd(1000) | sgn());
        check_case("2^20 entries, pool 1000", pts, upload(b));
    }
    check_case("uniform 2^20 entries, 2^16 buckets", pts, make_uniform(1u << 20, 1u << 16, 77));
}

struct Row {
    uint32_t nb_log;
    std::string name;
    Timing t;
    long long diff;
};

static std::vector<uint32_t> parse_list(const char* s) {
    std::vector<uint32_t> v;
    for (const char* p = s; *p;) {
        v.push_back((uint32_t)strtoul(p, (char**)&p, 10));
        if (*p == ',') p++;
    }
    return v;
}

int main(int argc, char** argv) {
    const uint32_t log_n = argc > 1 ? atoi(argv[1]) : 26;
    const std::vector<uint32_t> nb_logs = parse_list(argc > 2 ? argv[2] : "22,20");
    const int reps = argc > 3 ? atoi(argv[3]) : 5;
    const std::vector<uint32_t> bpsm = parse_list(argc > 4 ? argv[4] : "0,1");
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    g_sms = prop.multiProcessorCount;
    printf("%s, %d SMs, %.1f GiB\n", prop.name, g_sms, prop.totalGlobalMem / 1073741824.0);

    if (log_n < 20 || log_n > 30) {
        fprintf(stderr, "log_n must be in [20, 30] (the correctness cases index 2^20 points)\n");
        return 2;
    }
    const uint32_t n = 1u << log_n;
    g1_affine_t* pts;
    CK(cudaMalloc(&pts, (size_t)n * sizeof(g1_affine_t)));
    const float points_ms =
        once_ms([&] { k_points<<<(n + 127) / 128, 128>>>(pts, n, sqrt_exponent(), 0x5eed); });
    printf("2^%u curve points in %.0f ms\n", log_n, points_ms);
    correctness(pts, std::min(n, 1u << 20));

    std::vector<Row> rows;
    printf("== timing: 2^%u entries (one per point), median of %d\n", log_n, reps);
    for (uint32_t nbl : nb_logs) {
        Problem pr = make_uniform(n, 1u << nbl, 1000 + nbl);
        g1_xyzz_t *ref, *got;
        CK(cudaMalloc(&ref, (size_t)pr.nb * sizeof(g1_xyzz_t)));
        CK(cudaMalloc(&got, (size_t)pr.nb * sizeof(g1_xyzz_t)));
        auto report = [&](const std::string& name, const Timing& t, long long d) {
            printf("NB=2^%u %-22s acc %8.2f ms  +join %8.2f ms  %6.3f G add/s  T=%u segs=%u "
                   "seg_len=%u  regs %d spill %d B  %d blk/SM  diff %lld\n",
                   nbl, name.c_str(), t.acc_ms, t.total_ms, pr.total / (t.acc_ms * 1e6), t.threads,
                   t.segments, t.seg_len, t.regs, t.spill, t.blocks_per_sm, d);
            fflush(stdout);
            rows.push_back({nbl, name, t, d});
        };
        report("xyzz (crate)", run_xyzz(pts, pr, ref, reps), 0);
        for (uint32_t bp : bpsm) {
#define V(M, MINB)                                                                        \
    {                                                                                     \
        Timing t = run_affine<M, MINB>(pts, pr, got, reps, bp * (uint32_t)g_sms);         \
        const long long d = diff_buckets(ref, got, pr.nb);                                \
        g_checks++;                                                                       \
        g_fail += d != 0;                                                                 \
        report("affine M=" + std::to_string(M) + "/" + std::to_string(MINB) +                   \
               (bp ? " " + std::to_string(bp) + "blk/SM" : " occ"), t, d);                    \
    }
            AFFINE_VARIANTS
#undef V
        }
        CK(cudaFree(ref));
        CK(cudaFree(got));
        free_problem(pr);
    }
    CK(cudaFree(pts));

    printf("\n| NB | kernel | acc ms | acc+join ms | G add/s | vs xyzz (acc) | vs xyzz (+join) | T x seg_len | regs/spill | diff |\n");
    printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    Timing base;
    for (const Row& r : rows) {
        if (r.name == "xyzz (crate)") base = r.t;
        printf("| 2^%u | %s | %.2f | %.2f | %.3f | %.3f | %.3f | %u x %u | %d/%d | %lld |\n", r.nb_log,
               r.name.c_str(), r.t.acc_ms, r.t.total_ms, (double)n / (r.t.acc_ms * 1e6),
               base.acc_ms / r.t.acc_ms, base.total_ms / r.t.total_ms, r.t.threads, r.t.seg_len,
               r.t.regs, r.t.spill, r.diff);
    }
    printf("\nchecks: %ld, FAIL: %ld -> %s\n", g_checks, g_fail, g_fail ? "FAIL" : "PASS");
    return g_fail ? 1 : 0;
}

// Standalone NTT harness for the device machine (which has nvcc but no Rust): builds the
// same kernels as the crate (it includes cuda/ntt.cu), checks the register-radix passes
// bit for bit against the radix-2 shared-memory passes (themselves checked against the CPU
// backend by cuzk-core/tests/cuda_ntt.rs), and times variants with CUDA events.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 [-DNTT_REG_LOG_RADIX=3 -DNTT_REG_MIN_BLOCKS=4] \
//        kernels/bench/ntt_harness.cu -o ntt_harness
//   ./ntt_harness [check_max_log=22] [time_logs=20,22,24,26] [reps=10] [pinned=1]
//
// Checks: forward NTT (natural in and out) at every size 2^1..2^check_max_log, and a DIT
// transform with a coset scale on its input; each with the two-table and the direct
// four-step twiddles. Timings: old (radix-2 passes + permutation pass), new with the
// permutation separate or folded, with or without the direct table; and the NTT from and
// back to pinned host memory, serial and with the upload overlapped with the first pass.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../cuda/ntt.cu"

#include "cuda_check.cuh"

// BLS12-381 Fr: the 2^32-th root of unity 7^((r-1)/2^32) and the generator 7, Montgomery.
static const uint32_t ROOT32[8] = {0x5f0e466a, 0xb9b58d8c, 0x1819d7ec, 0x5b1b4c80,
                                   0x52a31e64, 0x0af53ae3, 0x19e9b27b, 0x5bf3adda};
static const uint32_t GEN[8] = {0xfffffff1, 0x0000000e, 0x00189c0f, 0x17e363d3,
                                0x6f8457b0, 0xff9c5787, 0x8fc5a8c4, 0x35133220};

__global__ void k_root(fr_t* out, fr_t root32, uint32_t log_n, int invert)
{
    fr_t w = root32;
    for (uint32_t i = log_n; i < 32; i++) w = w.sqr();
    if (invert) w = w.inverse();
    *out = w;
}

// out[i] = factor * base^(i * step_exp), i < n
__global__ void k_powers(fr_t* out, const fr_t* base, uint32_t n, uint32_t step_exp)
{
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        base->pow(i * step_exp).store(out + i);
}

__global__ void k_gather_bitrev(fr_t* out, const fr_t* in, uint32_t L, uint32_t j0, uint32_t cnt)
{
    for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < cnt; k += gridDim.x * blockDim.x) {
        uint32_t j = j0 + k;
        fr_t::load(in + bit_rev(j, L)).store(out + j);
    }
}

struct Tables {
    fr_t *roots, *roots_inv;
    fr_t *tw_lo, *tw_hi;  // forward w_L, two tables
    uint32_t tw_bits;
    fr_t *direct;  // w_N^e, N = 2^direct_log
    uint32_t direct_log;
    fr_t *sc_lo, *sc_hi;  // g^i
};

static fr_t* dalloc(size_t n)
{
    fr_t* p;
    CK(cudaMalloc(&p, n * sizeof(fr_t)));
    return p;
}

static fr_t from_words(const uint32_t* w)
{
    fr_t r;
    memcpy(r.w, w, 32);
    return r;
}

static fr_t* powers(const fr_t* base_dev, uint32_t n, uint32_t step)
{
    fr_t* t = dalloc(n);
    k_powers<<<(n + 255) / 256, 256>>>(t, base_dev, n, step);
    CK(cudaGetLastError());
    return t;
}

// w = the 2^log root
static fr_t* root_dev(uint32_t log, int inv)
{
    fr_t* w = dalloc(1);
    k_root<<<1, 1>>>(w, from_words(ROOT32), log, inv);
    CK(cudaGetLastError());
    return w;
}

struct Pass {
    uint32_t lo, m, c;
};

static std::vector<Pass> plan_old(uint32_t L)
{
    std::vector<Pass> p;
    uint32_t last = std::min(L, 10u), rest = L - last;
    if (rest) {
        uint32_t k = (rest + 8) / 9, lo = L;
        for (uint32_t i = 0; i < k; i++) {
            uint32_t m = rest / k + (i < rest % k);
            lo -= m;
            p.push_back({lo, m, std::min(10 - m, lo)});
        }
    }
    p.push_back({0, last, 0});
    return p;
}

// Register passes: every m >= R (the thread's window), the last <= 10, the others <= 9.
static std::vector<Pass> plan_new(uint32_t L)
{
    const uint32_t R = NTT_REG_LOG_RADIX;
    std::vector<Pass> p;
    // NTT_PLAN_<L>=m0,m1,..: override the pass sizes (top first) for a size.
    std::string key = "NTT_PLAN_" + std::to_string(L);
    if (const char* e = getenv(key.c_str())) {
        uint32_t lo = L;
        for (const char* q = e; *q;) {
            uint32_t m = strtoul(q, (char**)&q, 10);
            lo -= m;
            p.push_back({lo, m, std::min(10 - m, lo)});
            if (*q == ',') q++;
        }
        return p;
    }
    uint32_t P = L <= 10 ? 1 : 1 + (L - 10 + 8) / 9;
    uint32_t last = std::min(10u, L - R * (P - 1)), rest = L - last;
    uint32_t k = P - 1, lo = L;
    for (uint32_t i = 0; i < k; i++) {
        uint32_t m = rest / k + (i < rest % k);
        lo -= m;
        p.push_back({lo, m, std::min(10 - m, lo)});
    }
    p.push_back({0, last, 0});
    return p;
}

struct Opts {
    bool direct = true;  // direct table on the boundary whose N <= 2^18
    bool fold = true;    // bit reversal in the last pass
};

static void old_ntt(fr_t* d, fr_t* out, uint32_t L, const Tables& t, cudaStream_t s = 0)
{
    for (auto p : plan_old(L)) {
        ntt_pass_dif<<<1u << (L - p.m - p.c), NTT_THREADS, 0, s>>>(
            d, L, p.lo, p.m, p.c, t.roots, t.tw_lo, t.tw_hi, t.tw_bits, nullptr, nullptr, 0);
    }
    ntt_bit_reverse<<<std::min((1u << L) / 256 + 1, 132u * 16), 256, 0, s>>>(out, d, L, nullptr,
                                                                             nullptr, 0);
}

static void new_pass(bool dit, fr_t* in, fr_t* out, uint32_t L, Pass p, const Tables& t,
                     const fr_t* direct, bool scale, bool bitrev, uint32_t block0,
                     uint32_t blocks, cudaStream_t s)
{
    uint32_t threads = 1u << (p.m + p.c - NTT_REG_LOG_RADIX);
    auto k = dit ? ntt_regs_dit : ntt_regs_dif;
    k<<<blocks, threads, 0, s>>>(in, out, L, p.lo, p.m, p.c, t.roots, t.tw_lo, t.tw_hi,
                                 t.tw_bits, direct, scale ? t.sc_lo : nullptr,
                                 scale ? t.sc_hi : nullptr, t.tw_bits, nullptr, nullptr, 0,
                                 bitrev, block0);
}

static const fr_t* direct_for(uint32_t L, Pass p, const Tables& t, const Opts& o)
{
    return (o.direct && p.lo != 0 && p.lo + p.m == t.direct_log) ? t.direct : nullptr;
}

static void new_ntt(fr_t* d, fr_t* out, uint32_t L, const Tables& t, const Opts& o,
                    cudaStream_t s = 0, int skip_first = 0)
{
    auto pl = plan_new(L);
    for (size_t i = skip_first; i < pl.size(); i++) {
        Pass p = pl[i];
        bool last = i + 1 == pl.size();
        new_pass(false, d, last && o.fold ? out : d, L, p, t, direct_for(L, p, t, o), false,
                 last && o.fold, 0, 1u << (L - p.m - p.c), s);
    }
    if (!o.fold)
        ntt_bit_reverse<<<std::min((1u << L) / 256 + 1, 132u * 16), 256, 0, s>>>(out, d, L,
                                                                                 nullptr, nullptr, 0);
}

static void old_dit(fr_t* d, uint32_t L, const Tables& t)
{
    auto pl = plan_old(L);
    for (int i = (int)pl.size() - 1; i >= 0; i--) {
        Pass p = pl[i];
        bool first = i == (int)pl.size() - 1;
        ntt_pass_dit<<<1u << (L - p.m - p.c), NTT_THREADS>>>(
            d, L, p.lo, p.m, p.c, t.roots, t.tw_lo, t.tw_hi, t.tw_bits, first ? t.sc_lo : nullptr,
            first ? t.sc_hi : nullptr, t.tw_bits);
    }
}

static void new_dit(fr_t* d, uint32_t L, const Tables& t, const Opts& o)
{
    auto pl = plan_new(L);
    for (int i = (int)pl.size() - 1; i >= 0; i--) {
        Pass p = pl[i];
        bool first = i == (int)pl.size() - 1;
        new_pass(true, d, d, L, p, t, direct_for(L, p, t, o), first, false, 0,
                 1u << (L - p.m - p.c), 0);
    }
}

static Tables make_tables(uint32_t L)
{
    Tables t{};
    fr_t* w1024 = root_dev(10, 0);
    fr_t* w1024i = root_dev(10, 1);
    t.roots = powers(w1024, 512, 1);
    t.roots_inv = powers(w1024i, 512, 1);
    fr_t* w = root_dev(L, 0);
    t.tw_bits = (L + 1) / 2;
    t.tw_lo = powers(w, 1u << t.tw_bits, 1);
    t.tw_hi = powers(w, 1u << (L - t.tw_bits), 1u << t.tw_bits);
    // The boundary after the second DIF pass (if any) has N = 2^(L - m_first).
    auto pl = plan_new(L);
    t.direct = nullptr;
    t.direct_log = 0;
    if (pl.size() >= 3 && L - pl[0].m <= 18) {
        t.direct_log = L - pl[0].m;
        t.direct = powers(w, 1u << t.direct_log, 1u << (L - t.direct_log));
    }
    fr_t* g = dalloc(1);
    fr_t gh = from_words(GEN);
    CK(cudaMemcpy(g, &gh, 32, cudaMemcpyHostToDevice));
    t.sc_lo = powers(g, 1u << t.tw_bits, 1);
    t.sc_hi = powers(g, 1u << (L - t.tw_bits), 1u << t.tw_bits);
    CK(cudaDeviceSynchronize());
    return t;
}

static void free_tables(Tables& t)
{
    for (fr_t* p : {t.roots, t.roots_inv, t.tw_lo, t.tw_hi, t.direct, t.sc_lo, t.sc_hi})
        if (p) cudaFree(p);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd()
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void random_fill(std::vector<uint32_t>& h)
{
    for (size_t i = 0; i < h.size(); i += 8) {
        for (int j = 0; j < 8; j += 2) {
            uint64_t r = rnd();
            h[i + j] = (uint32_t)r;
            h[i + j + 1] = (uint32_t)(r >> 32);
        }
        h[i + 7] %= 0x73eda753u;  // below r
    }
}

static int check(uint32_t L, const Opts& o)
{
    size_t n = 1ull << L;
    Tables t = make_tables(L);
    std::vector<uint32_t> h(8 * n), a(8 * n), b(8 * n);
    random_fill(h);
    fr_t *d0 = dalloc(n), *d1 = dalloc(n), *o0 = dalloc(n), *o1 = dalloc(n);
    CK(cudaMemcpy(d0, h.data(), 32 * n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d1, h.data(), 32 * n, cudaMemcpyHostToDevice));
    CK(cudaMemset(o1, 0xff, 32 * n));  // poison
    old_ntt(d0, o0, L, t);
    new_ntt(d1, o1, L, t, o);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(a.data(), o0, 32 * n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b.data(), o1, 32 * n, cudaMemcpyDeviceToHost));
    int bad = a != b;
    // DIT with a coset scale on a fresh input.
    random_fill(h);
    CK(cudaMemcpy(d0, h.data(), 32 * n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d1, h.data(), 32 * n, cudaMemcpyHostToDevice));
    old_dit(d0, L, t);
    new_dit(d1, L, t, o);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(a.data(), d0, 32 * n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b.data(), d1, 32 * n, cudaMemcpyDeviceToHost));
    bad |= (a != b) << 1;
    for (fr_t* p : {d0, d1, o0, o1}) cudaFree(p);
    free_tables(t);
    return bad;
}

// Host Montgomery product (R = 2^256, 64-bit limbs, CIOS): an independent reference for the
// device's fr_t multiplication, which the old and new NTT kernels share.
static void host_mont_mul(const uint64_t* a, const uint64_t* b, uint64_t* r)
{
    static const uint64_t P[4] = {0xffffffff00000001ull, 0x53bda402fffe5bfeull,
                                  0x3339d80809a1d805ull, 0x73eda753299d7d48ull};
    const uint64_t INV = 0xfffffffeffffffffull;  // -p^-1 mod 2^64
    typedef unsigned __int128 u128;
    uint64_t t[5] = {0, 0, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        uint64_t C = 0;
        for (int j = 0; j < 4; j++) {
            u128 x = (u128)a[j] * b[i] + t[j] + C;
            t[j] = (uint64_t)x;
            C = (uint64_t)(x >> 64);
        }
        u128 x = (u128)t[4] + C;
        t[4] = (uint64_t)x;
        uint64_t t5 = (uint64_t)(x >> 64);
        uint64_t m = t[0] * INV;
        x = (u128)m * P[0] + t[0];
        C = (uint64_t)(x >> 64);
        for (int j = 1; j < 4; j++) {
            x = (u128)m * P[j] + t[j] + C;
            t[j - 1] = (uint64_t)x;
            C = (uint64_t)(x >> 64);
        }
        x = (u128)t[4] + C;
        t[3] = (uint64_t)x;
        t[4] = t5 + (uint64_t)(x >> 64);
    }
    // t < 2p: subtract p once if t >= p.
    uint64_t d[4], borrow = 0;
    for (int j = 0; j < 4; j++) {
        u128 x = (u128)t[j] - P[j] - borrow;
        d[j] = (uint64_t)x;
        borrow = (uint64_t)(x >> 64) ? 1 : 0;
    }
    bool ge = t[4] || !borrow;
    for (int j = 0; j < 4; j++) r[j] = ge ? d[j] : t[j];
}

// fr_t multiplication on the device against host_mont_mul: random pairs and edge values.
static int check_mul()
{
    const size_t n = 1 << 16;
    std::vector<uint32_t> a(8 * n), b(8 * n), got(8 * n);
    random_fill(a);
    random_fill(b);
    const uint32_t edges[6][8] = {
        {0, 0, 0, 0, 0, 0, 0, 0},
        {1, 0, 0, 0, 0, 0, 0, 0},
        {0xfffffffe, 0x00000001, 0x00034802, 0x5884b7fa, 0xecbc4ff5, 0x998c4fef, 0xacc5056f,
         0x1824b159},  // R mod p (one)
        {0x00000000, 0xffffffff, 0xfffe5bfe, 0x53bda402, 0x09a1d805, 0x3339d808, 0x299d7d48,
         0x73eda753},  // p - 1
        {0xffffffff, 0xffffffff, 0, 0, 0, 0, 0, 0},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
         0x73eda752}};
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            memcpy(&a[8 * (i * 6 + j)], edges[i], 32);
            memcpy(&b[8 * (i * 6 + j)], edges[j], 32);
        }
    fr_t *da = dalloc(n), *db = dalloc(n), *dout = dalloc(n);
    CK(cudaMemcpy(da, a.data(), 32 * n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b.data(), 32 * n, cudaMemcpyHostToDevice));
    fr_elementwise<<<256, 256>>>(dout, da, db, 2, n);
    CK(cudaGetLastError());
    CK(cudaMemcpy(got.data(), dout, 32 * n, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x[4], y[4], r[4];
        memcpy(x, &a[8 * i], 32);
        memcpy(y, &b[8 * i], 32);
        host_mont_mul(x, y, r);
        if (memcmp(r, &got[8 * i], 32)) bad++;
    }
    for (fr_t* p : {da, db, dout}) cudaFree(p);
    return bad;
}

template <class F>
static float time_ms(int reps, F f, cudaStream_t s = 0)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    f();
    f();
    std::vector<float> v;
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(e0, s));
        f();
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        v.push_back(ms);
    }
    CK(cudaGetLastError());
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char** argv)
{
    uint32_t check_max = argc > 1 ? atoi(argv[1]) : 22;
    std::string tl = argc > 2 ? argv[2] : "20,22,24,26";
    int reps = argc > 3 ? atoi(argv[3]) : 10;
    int pinned = argc > 4 ? atoi(argv[4]) : 1;
    printf("R=%d minblocks=%d twiddle_inline=%d streaming=%d p0_is_one=%d\n",
           NTT_REG_LOG_RADIX, NTT_REG_MIN_BLOCKS, NTT_REG_TWIDDLE_INLINE, NTT_REG_STREAMING,
           FR_P0_IS_ONE);

    int fails = 0;
    int bad_mul = check_mul();
    printf("fr mul vs host reference (2^16 pairs + edges): %s\n",
           bad_mul ? "MISMATCH" : "identical");
    fails += bad_mul != 0;
    for (uint32_t L = NTT_REG_LOG_RADIX; L <= check_max; L++) {
        for (int v = 0; v < 2; v++) {
            Opts o;
            o.direct = v;
            o.fold = v;
            int r = check(L, o);
            if (r) {
                printf("MISMATCH L=%u direct=%d fold=%d (%s)\n", L, v, v,
                       r == 1 ? "ntt" : r == 2 ? "dit" : "both");
                fails++;
            }
        }
    }
    printf("check 2^%d..2^%u: %s\n", NTT_REG_LOG_RADIX, check_max, fails ? "FAIL" : "identical");

    std::vector<uint32_t> logs;
    for (size_t i = 0; i < tl.size();) {
        size_t j = tl.find(',', i);
        if (j == std::string::npos) j = tl.size();
        if (j > i) logs.push_back(atoi(tl.substr(i, j - i).c_str()));
        i = j + 1;
    }
    printf("%-5s %9s %9s %9s %9s %9s | %9s %9s %9s\n", "log", "old", "new", "no-fold",
           "no-direct", "new-dit", "pin-ser", "pin-ovl", "check");
    for (uint32_t L : logs) {
        size_t n = 1ull << L;
        Tables t = make_tables(L);
        std::vector<uint32_t> h(8 * n);
        random_fill(h);
        fr_t *d = dalloc(n), *out = dalloc(n);
        CK(cudaMemcpy(d, h.data(), 32 * n, cudaMemcpyHostToDevice));
        Opts base, nofold, nodirect;
        nofold.fold = false;
        nodirect.direct = false;
        float t_old = time_ms(reps, [&] { old_ntt(d, out, L, t); });
        float t_new = time_ms(reps, [&] { new_ntt(d, out, L, t, base); });
        float t_nofold = time_ms(reps, [&] { new_ntt(d, out, L, t, nofold); });
        float t_nodir = time_ms(reps, [&] { new_ntt(d, out, L, t, nodirect); });
        float t_dit = time_ms(reps, [&] { new_dit(d, L, t, base); });
        float t_ps = 0, t_po = 0;
        const char* pc = "-";
        if (pinned) {
            uint32_t *hin, *hout;
            CK(cudaMallocHost(&hin, 32 * n));
            CK(cudaMallocHost(&hout, 32 * n));
            memcpy(hin, h.data(), 32 * n);
            cudaStream_t cs, xs;
            CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
            CK(cudaStreamCreateWithFlags(&xs, cudaStreamNonBlocking));
            cudaEvent_t ev[64];
            for (auto& e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
            t_ps = time_ms(reps, [&] {
                CK(cudaMemcpyAsync(d, hin, 32 * n, cudaMemcpyHostToDevice, cs));
                new_ntt(d, out, L, t, base, cs);
                CK(cudaMemcpyAsync(hout, out, 32 * n, cudaMemcpyDeviceToHost, cs));
            }, cs);
            // Overlapped: the first DIF pass covers the top m bits, so its blocks are column
            // chunks of 2^c columns over all 2^m rows; upload columns in K slices as 2-D copies
            // and start the first pass on each slice as it lands.
            auto pl = plan_new(L);
            Pass p0 = pl[0];
            const uint32_t K = pl.size() > 1 ? 16 : 1;
            t_po = time_ms(reps, [&] {
                if (pl.size() == 1) {
                    CK(cudaMemcpyAsync(d, hin, 32 * n, cudaMemcpyHostToDevice, cs));
                    new_ntt(d, out, L, t, base, cs);
                } else {
                    size_t cols = 1ull << p0.lo, w = cols / K;
                    uint32_t blocks = (1u << (L - p0.m - p0.c)) / K;
                    CK(cudaEventRecord(ev[K], cs));  // order after the previous rep's work
                    CK(cudaStreamWaitEvent(xs, ev[K], 0));
                    for (uint32_t k = 0; k < K; k++) {
                        CK(cudaMemcpy2DAsync(d + k * w, 32 * cols, hin + 8 * k * w, 32 * cols,
                                             32 * w, 1ull << p0.m, cudaMemcpyHostToDevice, xs));
                        CK(cudaEventRecord(ev[k], xs));
                        CK(cudaStreamWaitEvent(cs, ev[k], 0));
                        new_pass(false, d, d, L, p0, t, nullptr, false, false, k * blocks,
                                 blocks, cs);
                    }
                    new_ntt(d, out, L, t, base, cs, 1);
                }
                CK(cudaMemcpyAsync(hout, out, 32 * n, cudaMemcpyDeviceToHost, cs));
            }, cs);
            CK(cudaStreamSynchronize(cs));
            // The overlapped result against the resident one.
            CK(cudaMemcpy(d, hin, 32 * n, cudaMemcpyHostToDevice));
            new_ntt(d, out, L, t, base);
            CK(cudaDeviceSynchronize());
            std::vector<uint32_t> r(8 * n);
            CK(cudaMemcpy(r.data(), out, 32 * n, cudaMemcpyDeviceToHost));
            pc = memcmp(r.data(), hout, 32 * n) ? "MISMATCH" : "same";
            if (pc[0] == 'M') fails++;
            CK(cudaFreeHost(hin));
            CK(cudaFreeHost(hout));
            cudaStreamDestroy(cs);
            cudaStreamDestroy(xs);
        }
        printf("2^%-3u %9.3f %9.3f %9.3f %9.3f %9.3f | %9.3f %9.3f %9s\n", L, t_old, t_new,
               t_nofold, t_nodir, t_dit, t_ps, t_po, pc);
        fflush(stdout);
        cudaFree(d);
        cudaFree(out);
        free_tables(t);
    }
    return fails ? 1 : 0;
}

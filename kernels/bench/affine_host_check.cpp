// Host check (no GPU) of the affine bucket accumulation with batched inversion
// (cuda/msm/accumulate_affine.cuh): its field and curve code compiles for the host with an
// emulated carry flag, so the kernel's per-thread function runs here thread by thread (the
// threads share no state) and its bucket sums, after a plain join of the head slots, are
// compared in affine form with sequential XYZZ sums (add_affine, the formula the crate's
// bucket pass uses). Cases: one entry, everything in one bucket, long runs of one point
// (doubling chains), a point and its negation (cancellation), infinity entries, empty
// buckets, a tiny point pool (many equal / opposite pairs), and random spreads; each with
// several M and thread counts, so that segments are long, short, and cut by the list's end.
//
//   g++ -O2 -std=c++17 kernels/bench/affine_host_check.cpp -o /tmp/affine_host_check && /tmp/affine_host_check
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "../cuda/msm/accumulate_affine.cuh"

typedef affine_t<fp_t> aff;
typedef xyzz_t<fp_t> xyzz;

static fp_t pow_words(const fp_t& x, const uint32_t (&e)[12]) {
    fp_t r = fp_t::one();
    for (int i = 11; i >= 0; i--)
        for (int b = 31; b >= 0; b--) {
            r = r * r;
            if ((e[i] >> b) & 1) r = r * x;
        }
    return r;
}

// Points of y^2 = x^3 + 4 (p = 3 mod 4: sqrt(a) = a^((p+1)/4)). Not necessarily in the
// prime-order subgroup, which the formulas do not care about; E(Fp)'s order is odd (odd
// cofactor), so no point has y = 0 either way. Index 0 is infinity.
static std::vector<aff> make_points(int n, std::mt19937_64& rng) {
    uint32_t e[12];
    uint64_t c = 1;
    for (int i = 0; i < 12; i++) {
        uint64_t s = (uint64_t)fp_t::P(i) + c;
        e[i] = (uint32_t)s;
        c = s >> 32;
    }
    for (int i = 0; i < 12; i++) e[i] = (e[i] >> 2) | (i < 11 ? e[i + 1] << 30 : 0);
    const fp_t four = fp_t::one().dbl().dbl();
    std::vector<aff> pts(n);
    pts[0] = {fp_t::zero(), fp_t::zero()};
    for (int i = 1; i < n; i++) {
        fp_t x;
        for (int k = 0; k < 12; k++) x.v[k] = (uint32_t)rng();
        x.v[11] &= 0x0fffffff;
        for (;;) {
            const fp_t rhs = x * x * x + four;
            const fp_t y = pow_words(rhs, e);
            if (y * y == rhs) {
                pts[i] = {x, y};
                break;
            }
            x = x + fp_t::one();
        }
    }
    return pts;
}

static aff to_affine(const xyzz& q) {
    if (q.is_inf()) return {fp_t::zero(), fp_t::zero()};
    const fp_t izzz = q.ZZZ.inv();
    const fp_t iz = q.ZZ * izzz;  // 1/Z = ZZ / ZZZ
    return {q.X * (iz * iz), q.Y * izzz};
}

struct Case {
    const char* name;
    uint32_t nb;
    std::vector<std::vector<uint32_t>> buckets;  // entries per bucket
};

static long g_cases = 0, g_bad = 0;

template <int M>
static void run_case(const Case& c, const std::vector<aff>& pts, uint32_t T) {
    std::vector<uint32_t> sorted, offsets;
    for (const auto& b : c.buckets) {
        offsets.push_back((uint32_t)sorted.size());
        sorted.insert(sorted.end(), b.begin(), b.end());
    }
    offsets.push_back((uint32_t)sorted.size());
    const uint32_t total = (uint32_t)sorted.size();
    if (total == 0) return;
    // Reference: each bucket summed in order, XYZZ.
    std::vector<aff> ref(c.nb);
    for (uint32_t b = 0; b < c.nb; b++) {
        xyzz acc = xyzz::inf();
        for (uint32_t e : c.buckets[b]) acc.add_affine(pts[e & 0x7fffffff], e >> 31);
        ref[b] = to_affine(acc);
    }
    const uint64_t V = (uint64_t)M * T;
    const uint32_t seg_len = (uint32_t)((total + V - 1) / V);
    const size_t slots = (size_t)M * T;
    std::vector<aff_chunk_t> ax(slots * 3), ay(slots * 3), pre(slots * 3), st(slots);
    std::vector<xyzz> buckets(c.nb, xyzz::inf()), head_sum(V);
    std::vector<uint32_t> head_bucket(V, 0);
    affine_acc_args<fp_t> a{pts.data(), sorted.data(), offsets.data(), c.nb, total, seg_len,
                            ax.data(), ay.data(), pre.data(), st.data(), buckets.data(),
                            head_sum.data(), head_bucket.data()};
    for (uint32_t t = 0; t < T; t++) accumulate_affine_thread<fp_t, M>(t, T, a);
    // Join: addition is commutative, so any order of the heads gives the same point.
    for (uint64_t v = 0; v < V; v++)
        if (head_bucket[v]) buckets[head_bucket[v] - 1].add(head_sum[v]);
    long bad = 0;
    for (uint32_t b = 0; b < c.nb; b++) {
        const aff got = to_affine(buckets[b]);
        bad += !(got.x == ref[b].x && got.y == ref[b].y);
    }
    g_cases++;
    g_bad += bad != 0;
    printf("%-28s M=%-3d T=%-4u entries %-6u seg_len %-5u buckets %-5u  %s (%ld bad)\n",
           c.name, M, T, total, seg_len, c.nb, bad ? "FAIL" : "ok", bad);
}

// The mixed addition with Y3 reduced once (fp_t::FIOS_LAZY, KARA_LAZY: mul_sub_mul) must
// give the same XYZZ words as the crate's product in every case (doublings, cancellations,
// infinity): the same formula, only fewer reductions.
static long g_lazy_bad = 0;
template <int U>
static xyzz bucket_sum(const std::vector<uint32_t>& entries, const std::vector<aff>& pts) {
    xyzz acc = xyzz::inf();
    for (uint32_t e : entries) acc.add_affine<U>(pts[e & 0x7fffffff], e >> 31);
    return acc;
}
// The full addition (the bucket reduction's) under product U, folding the bucket sums of a
// case left to right: every pair an addition of two XYZZ points with ZZ != 1 in general, and
// the cases' equal and opposite sums its doubling and cancellation branches.
template <int U>
static xyzz fold_sums(const std::vector<xyzz>& sums, std::vector<xyzz>& steps) {
    xyzz acc = xyzz::inf();
    steps.clear();
    for (const xyzz& s : sums) {
        acc = xyzz::sum_inline<U>(acc, s);
        acc = xyzz::sum_inline<U>(acc, s);  // doubles where acc was infinity or equal to s
        steps.push_back(acc);
    }
    return acc;
}
static void check_lazy_y3(const Case& c, const std::vector<aff>& pts) {
    auto same = [](const xyzz& a, const xyzz& b) {
        return a.X == b.X && a.Y == b.Y && a.ZZ == b.ZZ && a.ZZZ == b.ZZZ;
    };
    long bad = 0;
    std::vector<xyzz> sums;
    for (const auto& b : c.buckets) {
        const xyzz want = bucket_sum<fp_t::FIOS_ROWS + 12>(b, pts);
        bad += !same(bucket_sum<fp_t::FIOS_LAZY>(b, pts), want);
        bad += !same(bucket_sum<fp_t::KARA_LAZY>(b, pts), want);
        bad += !same(bucket_sum<fp_t::FIOS_CALL_LAZY>(b, pts), want);
        sums.push_back(want);
    }
    // Both signs of every sum, so that the fold also meets p + (-p).
    for (size_t i = 0, n = sums.size(); i < n; i++)
        sums.push_back({sums[i].X, sums[i].Y.neg(), sums[i].ZZ, sums[i].ZZZ});
    std::vector<xyzz> want_steps, lazy_steps;
    fold_sums<fp_t::FIOS_ROWS + 12>(sums, want_steps);
    for (int u : {0, 1}) {
        if (u == 0)
            fold_sums<fp_t::FIOS_LAZY>(sums, lazy_steps);
        else
            fold_sums<fp_t::FIOS_CALL_LAZY>(sums, lazy_steps);
        for (size_t i = 0; i < want_steps.size(); i++) bad += !same(lazy_steps[i], want_steps[i]);
    }
    g_lazy_bad += bad;
    printf("%-28s lazy Y3 (mixed: FIOS_LAZY, KARA_LAZY, FIOS_CALL_LAZY; full: FIOS_(CALL_)LAZY) vs FIOS: %s (%ld bad)\n",
           c.name, bad ? "FAIL" : "ok", bad);
}

static void run_all(const Case& c, const std::vector<aff>& pts) {
    check_lazy_y3(c, pts);
    for (uint32_t T : {1u, 3u, 32u}) {
        run_case<1>(c, pts, T);
        run_case<4>(c, pts, T);
        run_case<16>(c, pts, T);
    }
    run_case<64>(c, pts, 5);
}

int main() {
    std::mt19937_64 rng(7);
    const uint32_t NP = 200;
    const std::vector<aff> pts = make_points(NP, rng);
    auto rnd = [&](uint32_t n) { return (uint32_t)(rng() % n); };
    auto sgn = [&]() { return (uint32_t)(rng() & 1) << 31; };
    std::vector<Case> cases;

    cases.push_back({"one entry", 1, {{5}}});
    cases.push_back({"one infinity entry", 2, {{}, {0}}});
    {
        Case c{"one bucket, distinct", 1, {{}}};
        for (uint32_t i = 1; i < NP; i++) c.buckets[0].push_back(i | sgn());
        cases.push_back(c);
    }
    {
        Case c{"doubling runs", 4, {{}, {}, {}, {}}};
        for (int i = 0; i < 40; i++) c.buckets[0].push_back(7);            // 40 P
        for (int i = 0; i < 33; i++) c.buckets[1].push_back(9 | 1u << 31);  // 33 (-P)
        for (int i = 0; i < 20; i++) c.buckets[2].push_back(i % 2 ? 3 : 4);
        for (int i = 0; i < 50; i++) c.buckets[3].push_back(rnd(3) + 1);
        cases.push_back(c);
    }
    {
        Case c{"cancellation", 3, {{}, {}, {}}};
        for (int i = 0; i < 30; i++) c.buckets[0].push_back(11 | (uint32_t)(i & 1) << 31);
        c.buckets[1] = {12, 12, 12 | 1u << 31, 12 | 1u << 31, 12 | 1u << 31, 13};
        c.buckets[2] = {14, 15, 14 | 1u << 31, 15 | 1u << 31, 16};  // back to infinity, then 16
        cases.push_back(c);
    }
    {
        Case c{"infinity entries", 5, {{0, 0, 0}, {0, 1, 0, 1}, {2, 0, 2 | 1u << 31, 0}, {0}, {}}};
        cases.push_back(c);
    }
    {
        Case c{"sparse (empty buckets)", 300, {}};
        c.buckets.resize(300);
        for (int i = 0; i < 120; i++) c.buckets[rnd(300)].push_back(rnd(NP) | sgn());
        cases.push_back(c);
    }
    {
        Case c{"tiny pool, many equal", 40, {}};
        c.buckets.resize(40);
        for (int i = 0; i < 1500; i++) c.buckets[rnd(40)].push_back(rnd(4) | sgn());
        cases.push_back(c);
    }
    {
        Case c{"random spread", 256, {}};
        c.buckets.resize(256);
        for (int i = 0; i < 3000; i++) c.buckets[rnd(256)].push_back(rnd(NP) | sgn());
        cases.push_back(c);
    }
    {
        Case c{"skewed (one giant bucket)", 64, {}};
        c.buckets.resize(64);
        for (int i = 0; i < 2000; i++)
            c.buckets[i % 3 ? 17 : rnd(64)].push_back(rnd(NP) | sgn());
        cases.push_back(c);
    }
    for (const Case& c : cases) run_all(c, pts);
    printf("affine host check: %ld runs, %ld failed; lazy Y3: %ld buckets differ\n", g_cases,
           g_bad, g_lazy_bad);
    return g_bad != 0 || g_lazy_bad != 0;
}

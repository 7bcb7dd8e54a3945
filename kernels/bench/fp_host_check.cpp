// Host check of the Fp products (no GPU): field/fp.cuh compiles for the host with an emulated
// carry flag, so the even/odd FIOS product (every rows-per-iteration choice and the
// out-of-line copy) and the dedicated squaring are compared here with the CIOS product on
// random elements and edge values before any device time is spent.
//
// (and the Fp / Fp2 inversions against a * a^-1 = 1)
//   g++ -O2 -std=c++17 kernels/bench/fp_host_check.cpp -o fp_host_check && ./fp_host_check
#include <cstdio>
#include <random>
#include <vector>

#include "../cuda/field/fp.cuh"
#include "../cuda/field/fp2.cuh"
#include "random_fp.h"

int main() {
    std::mt19937_64 rng(1);
    auto element = [&]() { return random_fp(rng); };
    fp_t p_minus_1;
    for (int i = 0; i < 12; i++) p_minus_1.v[i] = fp_t::P(i);
    p_minus_1.v[0] -= 1;
    std::vector<fp_t> edge = {fp_t::zero(), fp_t::one(), p_minus_1, fp_t::one() + fp_t::one()};
    for (int i = 0; i < 11; i++) {
        fp_t b = fp_t::zero();
        b.v[i] = 0xffffffff;
        edge.push_back(b);
    }
    long checked = 0, bad = 0;
    auto check = [&](const fp_t& a, const fp_t& b) {
        const fp_t ref = fp_t::mul_cios<1>(a, b);
        const fp_t got[] = {fp_t::mul_fios<2>(a, b), fp_t::mul_fios<4>(a, b),
                            fp_t::mul_fios<6>(a, b), fp_t::mul_fios<12>(a, b),
                            fp_t::mul<fp_t::FIOS_CALL>(a, b)};
        for (const fp_t& g : got) bad += !(g == ref);
        checked++;
        if (&a == &b || a == b) {
            bad += !(fp_t::sqr_fios(a) == ref);
            bad += !(fp_t::square<fp_t::FIOS_SQR>(a) == ref);
        }
    };
    for (const fp_t& a : edge)
        for (const fp_t& b : edge) check(a, b);
    for (int k = 0; k < 200000; k++) {
        const fp_t a = element(), b = element();
        check(a, b);
        check(a, a);
        check(a, p_minus_1);
    }
    printf("Fp products: %ld pairs checked against CIOS, %ld mismatches\n", checked, bad);
    // Inversions (the fold kernel's): a * a^-1 = 1, and 0^-1 = 0.
    long inv_bad = !(fp_t::zero().inv() == fp_t::zero());
    for (const fp_t& a : edge)
        if (!a.is_zero()) inv_bad += !(a * a.inv() == fp_t::one());
    for (int k = 0; k < 2000; k++) {
        const fp_t a = element();
        inv_bad += !(a * a.inv() == fp_t::one());
        const fp2_t b{element(), k % 7 == 0 ? fp_t::zero() : element()};
        inv_bad += !(b * b.inv() == fp2_t::one());
    }
    printf("Fp / Fp2 inversions: %ld mismatches\n", inv_bad);
    return bad != 0 || inv_bad != 0;
}

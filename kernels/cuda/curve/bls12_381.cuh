// The two groups of BLS12-381 the prover's MSMs run in.
#pragma once
#include "../field/fp.cuh"
#include "../field/fp2.cuh"
#include "xyzz.cuh"

typedef affine_t<fp_t> g1_affine_t;   // == blst_p1_affine, 96 bytes
typedef xyzz_t<fp_t> g1_xyzz_t;       // 192 bytes
typedef affine_t<fp2_t> g2_affine_t;  // == blst_p2_affine, 192 bytes
typedef xyzz_t<fp2_t> g2_xyzz_t;      // 384 bytes

// Helpers shared by pullback's CUDA kernels. The Python loader pastes this file in place of
// `#include "common.cuh"`, so that NVRTC (CuPy) and nvcc (the tests) compile the same text and
// CuPy's kernel cache, keyed by source text, never serves a kernel built from an older header.
//
// No CUDA headers are included: half and bfloat16 values travel as their 16-bit patterns and are
// converted with PTX or bit arithmetic, so the kernels build with NVRTC even where the CUDA
// toolkit headers (cuda_fp16.h, cuda_bf16.h) are not installed.

#define PB_WARP 32
#define PB_FULL_MASK 0xffffffffu
// NVRTC has no <math.h>: INFINITY and NAN are spelled as their bit patterns.
#define PB_NEG_INF __uint_as_float(0xff800000u)
#define PB_NAN __uint_as_float(0x7fffffffu)

// -- element types: load as float, store from float ------------------------------------------

struct F32 {
    typedef float T;
    static __device__ __forceinline__ float load(const float* p) { return *p; }
    static __device__ __forceinline__ void store(float* p, float v) { *p = v; }
};

struct F16 {
    typedef unsigned short T;
    static __device__ __forceinline__ float load(const unsigned short* p) {
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(*p));
        return f;
    }
    static __device__ __forceinline__ void store(unsigned short* p, float v) {
        unsigned short h;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
        *p = h;
    }
};

struct BF16 {
    typedef unsigned short T;
    static __device__ __forceinline__ float load(const unsigned short* p) {
        return __uint_as_float(((unsigned int)*p) << 16);
    }
    static __device__ __forceinline__ void store(unsigned short* p, float v) {
        unsigned int u = __float_as_uint(v);
        if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it a (quiet) NaN
            *p = (unsigned short)((u >> 16) | 0x40u);
            return;
        }
        u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
        *p = (unsigned short)(u >> 16);
    }
};

// -- block reductions (blockDim.x a multiple of 32, at most 1024) ----------------------------

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = PB_WARP / 2; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(PB_FULL_MASK, v, offset);
    return v;
}

// Sum of `v` over the block, returned to every thread. `scratch` holds 32 floats; the
// __syncthreads at the start makes a second call with the same scratch safe.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x % PB_WARP;
    const int warp = threadIdx.x / PB_WARP;
    const int warps = blockDim.x / PB_WARP;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < warps ? scratch[lane] : 0.0f;
    return warp_sum(v);
}

// Two sums at once (one pair of barriers instead of two).
__device__ __forceinline__ float2 block_sum2(float2 v, float2* scratch) {
    const int lane = threadIdx.x % PB_WARP;
    const int warp = threadIdx.x / PB_WARP;
    const int warps = blockDim.x / PB_WARP;
    v.x = warp_sum(v.x);
    v.y = warp_sum(v.y);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < warps ? scratch[lane] : make_float2(0.0f, 0.0f);
    v.x = warp_sum(v.x);
    v.y = warp_sum(v.y);
    return v;
}

// Tiled matrix product C[b] = A[b] @ B[b] with float32 accumulation (no tensor cores).
//
// Each block of 256 threads computes a 128x128 tile of C; each thread an 8x8 micro-tile held in
// registers (two 4x4 quadrants 64 rows/columns apart, so that the shared-memory reads of a warp
// fall on distinct banks). The K dimension advances 8 at a time through shared memory, double
// buffered: while the block multiplies tile t out of one buffer, each thread has already loaded
// its share of tile t+1 into registers, and stores it into the other buffer afterwards, so one
// barrier per K step suffices.
//
// Layouts (row-major, element strides): A is M x K, read as A[m*lda + k], or, transposed
// (A_T), as A[k*lda + m]; B is K x N, read as B[k*ldb + n], or (B_T) as B[n*ldb + k]; C is
// M x N, written as C[m*ldc + n]. blockIdx.z is the batch index; a batch stride of 0
// broadcasts an operand over the batch.
//
// VEC kernels read and write float4: the host (pullback/cuda/_kernels/matmul.py) launches them
// only when every contiguous extent and leading dimension is a multiple of 4 and the pointers
// are 16-byte aligned. Edge tiles are handled in both variants: out-of-range loads read 0,
// out-of-range stores are skipped.

#include "common.cuh"

#define MM_BM 128
#define MM_BN 128
#define MM_BK 8
#define MM_THREADS 256

// Load this thread's share (4 values) of the next K tile of one operand into registers.
// Two access patterns exist, chosen by whether the operand is contiguous along K:
//   along K:   thread t reads row r = t/2, k = 4*(t%2) .. +3         (A, or B transposed)
//   along M/N: thread t reads k = t/32, columns c = 4*(t%32) .. +3    (A transposed, or B)
template <typename IO, bool ALONG_K, bool VEC>
__device__ __forceinline__ void load_tile(const typename IO::T* __restrict__ src, long long ld,
                                          int rows, int K, int row0, int k0, float (&out)[4]) {
    const int t = threadIdx.x;
    if (ALONG_K) {
        const int r = row0 + (t >> 1);
        const int k = k0 + ((t & 1) << 2);
        if (VEC) {
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (r < rows && k < K)  // K % 4 == 0: the 4 values are all in range or all out
                v = *reinterpret_cast<const float4*>(
                    reinterpret_cast<const float*>(src) + (long long)r * ld + k);
            out[0] = v.x; out[1] = v.y; out[2] = v.z; out[3] = v.w;
        } else {
#pragma unroll
            for (int i = 0; i < 4; ++i)
                out[i] = (r < rows && k + i < K) ? IO::load(src + (long long)r * ld + k + i) : 0.0f;
        }
    } else {
        const int k = k0 + (t >> 5);
        const int c = row0 + ((t & 31) << 2);
        if (VEC) {
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (k < K && c < rows)  // rows % 4 == 0
                v = *reinterpret_cast<const float4*>(
                    reinterpret_cast<const float*>(src) + (long long)k * ld + c);
            out[0] = v.x; out[1] = v.y; out[2] = v.z; out[3] = v.w;
        } else {
#pragma unroll
            for (int i = 0; i < 4; ++i)
                out[i] = (k < K && c + i < rows) ? IO::load(src + (long long)k * ld + c + i) : 0.0f;
        }
    }
}

// Store the 4 registers loaded by load_tile into a shared tile laid out [k][row or column].
template <bool ALONG_K>
__device__ __forceinline__ void store_tile(float (*tile)[MM_BM], const float (&v)[4]) {
    const int t = threadIdx.x;
    if (ALONG_K) {
        const int r = t >> 1;
        const int k = (t & 1) << 2;
#pragma unroll
        for (int i = 0; i < 4; ++i) tile[k + i][r] = v[i];
    } else {
        const int k = t >> 5;
        const int c = (t & 31) << 2;
        *reinterpret_cast<float4*>(&tile[k][c]) = make_float4(v[0], v[1], v[2], v[3]);
    }
}

template <typename IO, bool A_T, bool B_T, bool VEC>
__device__ __forceinline__ void matmul_body(
    const typename IO::T* __restrict__ A, const typename IO::T* __restrict__ B,
    typename IO::T* __restrict__ C, int M, int N, int K, long long lda, long long ldb,
    long long ldc, long long batch_a, long long batch_b, long long batch_c) {
    __shared__ __align__(16) float As[2][MM_BK][MM_BM];
    __shared__ __align__(16) float Bs[2][MM_BK][MM_BN];

    const long long z = blockIdx.z;
    A += z * batch_a;
    B += z * batch_b;
    C += z * batch_c;
    const int row0 = blockIdx.y * MM_BM;
    const int col0 = blockIdx.x * MM_BN;
    const int ty = threadIdx.x >> 4;  // 0..15: rows ty*4 .. +3 and 64 + ty*4 .. +3 of the tile
    const int tx = threadIdx.x & 15;  // 0..15: the same for columns

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

    float a_next[4], b_next[4];
    load_tile<IO, !A_T, VEC>(A, lda, M, K, row0, 0, a_next);
    load_tile<IO, B_T, VEC>(B, ldb, N, K, col0, 0, b_next);
    store_tile<!A_T>(As[0], a_next);
    store_tile<B_T>(Bs[0], b_next);
    __syncthreads();

    const int tiles = (K + MM_BK - 1) / MM_BK;
    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1;
        const bool more = t + 1 < tiles;
        if (more) {
            load_tile<IO, !A_T, VEC>(A, lda, M, K, row0, (t + 1) * MM_BK, a_next);
            load_tile<IO, B_T, VEC>(B, ldb, N, K, col0, (t + 1) * MM_BK, b_next);
        }
#pragma unroll
        for (int k = 0; k < MM_BK; ++k) {
            const float4 a0 = *reinterpret_cast<const float4*>(&As[cur][k][ty * 4]);
            const float4 a1 = *reinterpret_cast<const float4*>(&As[cur][k][64 + ty * 4]);
            const float4 b0 = *reinterpret_cast<const float4*>(&Bs[cur][k][tx * 4]);
            const float4 b1 = *reinterpret_cast<const float4*>(&Bs[cur][k][64 + tx * 4]);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (more) {
            // The other buffer was last read in step t-1, which every thread finished before
            // the barrier that ended it.
            store_tile<!A_T>(As[cur ^ 1], a_next);
            store_tile<B_T>(Bs[cur ^ 1], b_next);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int r = row0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
        if (r >= M) continue;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int c = col0 + half * 64 + tx * 4;
            typename IO::T* out = C + (long long)r * ldc + c;
            if (VEC) {
                if (c < N)  // N % 4 == 0
                    *reinterpret_cast<float4*>(reinterpret_cast<float*>(out)) = make_float4(
                        acc[i][half * 4], acc[i][half * 4 + 1], acc[i][half * 4 + 2],
                        acc[i][half * 4 + 3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (c + j < N) IO::store(out + j, acc[i][half * 4 + j]);
            }
        }
    }
}

#define PB_MATMUL_KERNEL(NAME, IO, A_T, B_T, VEC)                                               \
    extern "C" __global__ void __launch_bounds__(MM_THREADS) NAME(                            \
        const IO::T* __restrict__ A, const IO::T* __restrict__ B, IO::T* __restrict__ C,        \
        int M, int N, int K, long long lda, long long ldb, long long ldc, long long batch_a,   \
        long long batch_b, long long batch_c) {                                                 \
        matmul_body<IO, A_T, B_T, VEC>(A, B, C, M, N, K, lda, ldb, ldc, batch_a, batch_b,      \
                                       batch_c);                                                \
    }

// Names: matmul_<dtype>_<a layout><b layout>[_vec], n = as stored, t = transposed.
PB_MATMUL_KERNEL(matmul_f32_nn_vec, F32, false, false, true)
PB_MATMUL_KERNEL(matmul_f32_nt_vec, F32, false, true, true)
PB_MATMUL_KERNEL(matmul_f32_tn_vec, F32, true, false, true)
PB_MATMUL_KERNEL(matmul_f32_tt_vec, F32, true, true, true)
PB_MATMUL_KERNEL(matmul_f32_nn, F32, false, false, false)
PB_MATMUL_KERNEL(matmul_f32_nt, F32, false, true, false)
PB_MATMUL_KERNEL(matmul_f32_tn, F32, true, false, false)
PB_MATMUL_KERNEL(matmul_f32_tt, F32, true, true, false)
PB_MATMUL_KERNEL(matmul_f16_nn, F16, false, false, false)
PB_MATMUL_KERNEL(matmul_f16_nt, F16, false, true, false)
PB_MATMUL_KERNEL(matmul_f16_tn, F16, true, false, false)
PB_MATMUL_KERNEL(matmul_f16_tt, F16, true, true, false)
PB_MATMUL_KERNEL(matmul_bf16_nn, BF16, false, false, false)
PB_MATMUL_KERNEL(matmul_bf16_nt, BF16, false, true, false)
PB_MATMUL_KERNEL(matmul_bf16_tn, BF16, true, false, false)
PB_MATMUL_KERNEL(matmul_bf16_tt, BF16, true, true, false)

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), the
// counter-based generator cuRAND and PyTorch's CUDA generator use. Block j of a stream with key
// (seed) is philox(counter = (j_lo, j_hi, 0, 0), key = (seed_lo, seed_hi)): four 32-bit words.
// A generator's whole state is (seed, offset in blocks): JSON-serializable, and any part of the
// stream can be recomputed on any device (the tests compare with a NumPy implementation).

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

__device__ __forceinline__ uint4 philox_round(uint4 c, uint2 k) {
    const unsigned int hi0 = __umulhi(PHILOX_M0, c.x);
    const unsigned int lo0 = PHILOX_M0 * c.x;
    const unsigned int hi1 = __umulhi(PHILOX_M1, c.z);
    const unsigned int lo1 = PHILOX_M1 * c.z;
    return make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
}

// out[4*i .. 4*i+3] = block (offset + i) of the stream, for i < blocks.
extern "C" __global__ void __launch_bounds__(256)
philox4x32_10(unsigned int* __restrict__ out, long long blocks, unsigned long long seed,
              unsigned long long offset) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= blocks) return;
    const unsigned long long j = offset + (unsigned long long)i;
    uint4 c = make_uint4((unsigned int)j, (unsigned int)(j >> 32), 0u, 0u);
    uint2 k = make_uint2((unsigned int)seed, (unsigned int)(seed >> 32));
#pragma unroll
    for (int r = 0; r < 10; ++r) {
        if (r > 0) {
            k.x += PHILOX_W0;
            k.y += PHILOX_W1;
        }
        c = philox_round(c, k);
    }
    reinterpret_cast<uint4*>(out)[i] = c;
}

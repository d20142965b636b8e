/* Batched outer products for float32: out[b, i, j] = a[b, i] * c[b, j].
 *
 * This is the per-sample weight gradient of a linear layer under vmap(grad) (each sample's
 * output gradient times its input): the largest array a per-sample gradient writes (256 x 256 x
 * 784 floats, 206 MB, for an MLP's first layer at batch 256), so it is written once, row by
 * row, with plain stores. NumPy's broadcast multiply of (B, m, 1) by (B, 1, n) measured 1.7-1.8x
 * this loop's time on one thread (benchmarks/func_per_sample_grads.py, its func_outer_kernel
 * record); non-temporal stores were slower into freshly allocated
 * memory, which is what every call writes (the kernel's page zeroing leaves the lines cached).
 *
 * What the caller guarantees (pullback/func/_outer.py checks it before every call; nothing here
 * checks it again):
 *   - a holds rows*m floats, c rows*n floats, out rows*m*n floats, all C-contiguous, out not
 *     overlapping a or c; 0 <= lo <= hi <= rows;
 *   - m, n >= 0 and rows*m*n is the size of a NumPy array (so no index below overflows).
 * IEEE products throughout (no fast-math): NaN and infinities come out as NumPy's. */
#include <stdint.h>

void outer_f32(int64_t lo, int64_t hi, const float *a, const float *c, float *out, int64_t m,
               int64_t n) {
    for (int64_t b = lo; b < hi; b++) {
        const float *restrict ab = a + b * m;
        const float *restrict cb = c + b * n;
        float *restrict ob = out + b * m * n;
        for (int64_t i = 0; i < m; i++) {
            const float s = ab[i];
            float *restrict row = ob + i * n;
            for (int64_t j = 0; j < n; j++) row[j] = s * cb[j];
        }
    }
}

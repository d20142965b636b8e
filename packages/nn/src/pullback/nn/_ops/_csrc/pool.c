/* 2-d max pooling on float32 NCHW arrays: the forward and its backward.
 *
 * Window (i, j) of a plane covers input positions (i*sh - pt + p*dh, j*sw - pl + q*dw) for
 * p < kh, q < kw; positions in the padding count as -infinity, as in the NumPy kernel of
 * pool.py (which pads with -inf), so that both route every gradient alike: g[i, j] is added to
 * the first position in raster order whose value equals the window's maximum y[i, j]
 * (PyTorch's choice for ties); when that position is in the padding (a window of -inf) or none
 * equals it (NaN), the gradient goes nowhere. One pass per plane, where the NumPy kernel makes
 * four passes over strided views per window offset (1.5-2.1x this kernel's time on a small
 * CNN's activations: benchmarks/func_max_pool_backward.py). Each call handles planes (n, c) lo..hi.
 * The forward takes each window's maximum offset by offset in raster order with NumPy's
 * maximum (a NaN wins), so it gives the NumPy kernel's values bit for bit; it pays where the
 * NumPy kernel's Python (a padded copy, a strided view, one call per offset) costs more than
 * the arithmetic: small inputs (pool.py's MAX_NATIVE_POOLED; batch-1 inference: 8x28x28 in
 * about 4 us against 12 us), not large ones, where NumPy's strided loops are as fast.
 *
 * What the callers guarantee (pullback/nn/_ops/pool.py checks it with geometry.py, through
 * _native.py's _geometry, before every call; nothing here checks it again):
 *   - x / dx hold N*C planes of h*w floats, y / g N*C planes of ho*wo floats, C-contiguous, dx
 *     overlapping none of the others; 0 <= lo <= hi <= N*C;
 *   - kh, kw, sh, sw, dh, dw >= 1, pt, pl >= 0;
 *   - ho, wo >= 1 and equal to (size + pad_before + pad_after - dilation*(k-1) - 1)/stride + 1,
 *     so every window starts inside the padded image;
 *   - the padded sizes are below 2^62 and the stride along an axis with one window is 1, so that
 *     no index below overflows int64. */
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The value at padded position (r, c) of a plane: -inf in the padding. */
static inline float at(const float *plane, int64_t r, int64_t c, int64_t h, int64_t w) {
    return (r >= 0 && r < h && c >= 0 && c < w) ? plane[r * w + c] : -INFINITY;
}

/* np.maximum's float rule: a when a >= b or a is NaN, else b (so a NaN in either wins, a's
 * when both are). Written without a data-dependent branch: (b > a ? b : a) is one MAXSS, and
 * the case it gets wrong (b NaN, a not) is patched with a bit mask; the plain ternaries
 * compiled to branches that random data mispredicted about every other window (4.6x slower). */
static inline float maximum(float a, float b) {
    union { float f; uint32_t u; } m = {(b > a) ? b : a}, nan_b = {b};
    uint32_t take_b = -(uint32_t)((b != b) & (a == a));
    m.u = (m.u & ~take_b) | (nan_b.u & take_b);
    return m.f;
}

/* One pooled row's windows j_lo..j_hi, all inside the image, whose first offset starts at
 * row r0, column j*sw + c: offset by offset over the row (loops over j that vectorize), in the
 * raster order of the NumPy kernel. */
static void max_row(float *restrict yrow, const float *restrict xp, int64_t w, int64_t r0,
                    int64_t c, int64_t j_lo, int64_t j_hi, int64_t kh, int64_t kw, int64_t sw,
                    int64_t dh, int64_t dw) {
    const float *first = xp + r0 * w + c;
    if (kh == 2 && kw == 2 && sw == 2 && dw == 1) { /* the common 2x2 pooling, in one pass */
        const float *below = first + dh * w;
        for (int64_t j = j_lo; j < j_hi; j++)
            yrow[j] = maximum(maximum(maximum(first[2 * j], first[2 * j + 1]), below[2 * j]),
                              below[2 * j + 1]);
        return;
    }
    for (int64_t j = j_lo; j < j_hi; j++) yrow[j] = first[j * sw];
    for (int64_t p = 0; p < kh; p++)
        for (int64_t q = (p == 0); q < kw; q++) {
            const float *src = xp + (r0 + p * dh) * w + c + q * dw;
            if (sw == 2)
                for (int64_t j = j_lo; j < j_hi; j++) yrow[j] = maximum(yrow[j], src[2 * j]);
            else
                for (int64_t j = j_lo; j < j_hi; j++) yrow[j] = maximum(yrow[j], src[j * sw]);
        }
}

/* The forward's sizes come as one array, geometry = {h, w, kh, kw, ho, wo, sh, sw, pt, pl, dh,
 * dw}, built once per geometry by pool.py: as twelve ctypes arguments they cost about 1.5 us a
 * call, a third of a batch-1 pooling. */
void max_pool2d_f32(int64_t lo, int64_t hi, const float *x, float *y, const int64_t *geometry) {
    const int64_t h = geometry[0], w = geometry[1], kh = geometry[2], kw = geometry[3],
                  ho = geometry[4], wo = geometry[5], sh = geometry[6], sw = geometry[7],
                  pt = geometry[8], pl = geometry[9], dh = geometry[10], dw = geometry[11];
    /* the windows j_lo..j_hi of a row lie inside the image's columns */
    int64_t j_lo = pl > 0 ? (pl + sw - 1) / sw : 0;
    int64_t j_hi = w - 1 - (kw - 1) * dw + pl < 0 ? 0 : (w - 1 - (kw - 1) * dw + pl) / sw + 1;
    if (j_lo > wo) j_lo = wo;
    if (j_hi > wo) j_hi = wo;
    if (j_hi < j_lo) j_hi = j_lo;
    for (int64_t plane = lo; plane < hi; plane++) {
        const float *xp = x + plane * h * w;
        float *yp = y + plane * ho * wo;
        for (int64_t i = 0; i < ho; i++) {
            int64_t r0 = i * sh - pt;
            int rows_inside = r0 >= 0 && r0 + (kh - 1) * dh < h;
            float *yrow = yp + i * wo;
            if (rows_inside) max_row(yrow, xp, w, r0, -pl, j_lo, j_hi, kh, kw, sw, dh, dw);
            for (int64_t j = 0; j < wo; j++) {
                if (rows_inside && j == j_lo) j = j_hi; /* done by max_row */
                if (j >= wo) break;
                int64_t c0 = j * sw - pl;
                float best = at(xp, r0, c0, h, w);
                for (int64_t p = 0; p < kh; p++)
                    for (int64_t q = (p == 0); q < kw; q++)
                        best = maximum(best, at(xp, r0 + p * dh, c0 + q * dw, h, w));
                yrow[j] = best;
            }
        }
    }
}

/* Window by window: the first offset in raster order whose value equals the maximum. Windows
 * inside the image skip the padding test and scan every offset backwards with a conditional
 * move, no branch (which offset holds a window's maximum is as good as random: an early exit
 * mispredicted about once per window, most of the time this kernel took). */
void max_pool2d_backward_f32(int64_t lo, int64_t hi, const float *g, const float *x,
                             const float *y, float *dx, int64_t h, int64_t w, int64_t kh,
                             int64_t kw, int64_t ho, int64_t wo, int64_t sh, int64_t sw,
                             int64_t pt, int64_t pl, int64_t dh, int64_t dw) {
    for (int64_t plane = lo; plane < hi; plane++) {
        const float *xp = x + plane * h * w;
        const float *gp = g + plane * ho * wo, *yp = y + plane * ho * wo;
        float *dp = dx + plane * h * w;
        memset(dp, 0, (size_t)(h * w) * sizeof(float));
        for (int64_t i = 0; i < ho; i++) {
            int64_t r0 = i * sh - pt;
            int rows_inside = r0 >= 0 && r0 + (kh - 1) * dh < h;
            for (int64_t j = 0; j < wo; j++) {
                const float target = yp[i * wo + j];
                int64_t c0 = j * sw - pl;
                if (rows_inside && c0 >= 0 && c0 + (kw - 1) * dw < w) {
                    int64_t first = -1;
                    for (int64_t p = kh - 1; p >= 0; p--)
                        for (int64_t q = kw - 1; q >= 0; q--) {
                            int64_t k = (r0 + p * dh) * w + c0 + q * dw;
                            /* first = (xp[k] == target) ? k : first, as arithmetic (gcc
                             * turned the ternary into a branch) */
                            first ^= (first ^ k) & -(int64_t)(xp[k] == target);
                        }
                    if (first >= 0) dp[first] += gp[i * wo + j];
                    continue;
                }
                for (int64_t p = 0; p < kh; p++)
                    for (int64_t q = 0; q < kw; q++) {
                        int64_t r = r0 + p * dh, c = c0 + q * dw;
                        if (at(xp, r, c, h, w) == target) {
                            /* a first maximum in the padding (a window of -inf) takes the
                             * gradient out of the image, as the NumPy kernel's crop does */
                            if (r >= 0 && r < h && c >= 0 && c < w) dp[r * w + c] += gp[i * wo + j];
                            goto next_window;
                        }
                    }
            next_window:;
            }
        }
    }
}

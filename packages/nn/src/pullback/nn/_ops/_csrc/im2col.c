/* im2col and col2im for 2-d convolution on float32 NCHW arrays.
 *
 * cols has the layout (N, C, kh, kw, Ho, Wo): element (n, c, p, q, i, j) is input pixel
 * (n, c, i*sh - pt + p*dh, j*sw - pl + q*dw), 0 where that falls in the padding. im2col writes
 * it; col2im adds each element back into its pixel (the adjoint, used by the input gradient).
 * Each call handles planes (n, c) lo..hi. NumPy does both through strided views whose inner
 * dimension is one output row (a dozen elements for small images), where its loops spend more
 * time on bookkeeping than on data.
 *
 * What the callers guarantee (pullback/nn/_ops/_native.py checks it with geometry.py before
 * every call; nothing here checks it again):
 *   - x / dx hold N*C planes of h*w floats, cols N*C planes of kh*kw*ho*wo floats, C-contiguous,
 *     not overlapping each other; 0 <= lo <= hi <= N*C;
 *   - kh, kw, sh, sw, dh, dw >= 1 (sw is a divisor below: 0 would trap with SIGFPE), pt, pl >= 0;
 *   - ho, wo >= 1 and equal to (size + pad_before + pad_after - dilation*(k-1) - 1)/stride + 1,
 *     so every window starts inside the padded image;
 *   - the padded sizes are below 2^62 and the stride along an axis with one window is 1, so that
 *     no index below (i*sh - pt + p*dh, j*sw + c0, -c0 + sw - 1) overflows int64.
 * Rows and columns that fall in the padding are never read: they are skipped (col2im) or written
 * as zeros (im2col). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* the j range [*j_lo, *j_hi) whose column j*sw + c0 lies in 0..w-1 */
static void valid_columns(int64_t c0, int64_t sw, int64_t w, int64_t wo, int64_t *j_lo,
                          int64_t *j_hi) {
    int64_t lo = c0 < 0 ? (-c0 + sw - 1) / sw : 0;
    int64_t hi = c0 > w - 1 ? 0 : (w - 1 - c0) / sw + 1;
    *j_lo = lo < wo ? lo : wo;
    *j_hi = hi < wo ? hi : wo;
    if (*j_hi < *j_lo) *j_hi = *j_lo;
}

/* cols row (p, q, i) from image row r: its columns j_lo..j_hi, zeros around them */
static inline void copy_row(float *restrict dst, const float *restrict src, int64_t c0,
                            int64_t sw, int64_t j_lo, int64_t j_hi, int64_t wo) {
    for (int64_t j = 0; j < j_lo; j++) dst[j] = 0.0f;
    if (sw == 1)
        for (int64_t j = j_lo; j < j_hi; j++) dst[j] = src[j + c0];
    else
        for (int64_t j = j_lo; j < j_hi; j++) dst[j] = src[j * sw + c0];
    for (int64_t j = j_hi; j < wo; j++) dst[j] = 0.0f;
}

/* cols row (p, q, i) added back into image row r */
static inline void add_row(float *restrict dst, const float *restrict src, int64_t c0,
                           int64_t sw, int64_t j_lo, int64_t j_hi) {
    if (sw == 1)
        for (int64_t j = j_lo; j < j_hi; j++) dst[j + c0] += src[j];
    else
        for (int64_t j = j_lo; j < j_hi; j++) dst[j * sw + c0] += src[j];
}

/* Walks the rows (p, q, i) of cols for planes lo..hi and meets each with the image row it reads:
 * im2col copies (zeros where the row falls in the padding), col2im adds back into a zeroed
 * image. */
static void walk(int64_t lo, int64_t hi, float *image, float *cols, int64_t h, int64_t w,
                 int64_t kh, int64_t kw, int64_t ho, int64_t wo, int64_t sh, int64_t sw,
                 int64_t pt, int64_t pl, int64_t dh, int64_t dw, int to_image) {
    for (int64_t plane = lo; plane < hi; plane++) {
        float *ip = image + plane * h * w;
        float *cp = cols + plane * kh * kw * ho * wo;
        if (to_image) memset(ip, 0, (size_t)(h * w) * sizeof(float));
        for (int64_t p = 0; p < kh; p++)
            for (int64_t q = 0; q < kw; q++) {
                int64_t c0 = q * dw - pl, j_lo, j_hi;
                valid_columns(c0, sw, w, wo, &j_lo, &j_hi);
                for (int64_t i = 0; i < ho; i++, cp += wo) {
                    int64_t r = i * sh - pt + p * dh;
                    int in_image = r >= 0 && r < h;
                    if (to_image) {
                        if (in_image) add_row(ip + r * w, cp, c0, sw, j_lo, j_hi);
                    } else if (in_image) {
                        copy_row(cp, ip + r * w, c0, sw, j_lo, j_hi, wo);
                    } else {
                        memset(cp, 0, (size_t)wo * sizeof(float));
                    }
                }
            }
    }
}

void im2col_f32(int64_t lo, int64_t hi, const float *x, float *cols, int64_t h, int64_t w,
                int64_t kh, int64_t kw, int64_t ho, int64_t wo, int64_t sh, int64_t sw,
                int64_t pt, int64_t pl, int64_t dh, int64_t dw) {
    walk(lo, hi, (float *)x, cols, h, w, kh, kw, ho, wo, sh, sw, pt, pl, dh, dw, 0);
}

void col2im_f32(int64_t lo, int64_t hi, const float *cols, float *dx, int64_t h, int64_t w,
                int64_t kh, int64_t kw, int64_t ho, int64_t wo, int64_t sh, int64_t sw,
                int64_t pt, int64_t pl, int64_t dh, int64_t dw) {
    walk(lo, hi, dx, (float *)cols, h, w, kh, kw, ho, wo, sh, sw, pt, pl, dh, dw, 1);
}

/* Convolution as one GEMM per image, with the image's columns built (or read back) in a buffer
 * that stays in the core's cache: im2col of a whole batch writes and then reads an array of
 * N*C*kh*kw*Ho*Wo floats (42 MB for pytorch/examples' mnist conv2 at batch 64), which took as
 * long as the products themselves. `gemm` is CBLAS's sgemm (MKL's, pullback/_gemm.py); groups
 * are 1. Each call handles "chunks" lo..hi of the batch: chunk k is images n*k/chunks ..
 * n*(k+1)/chunks. A buffer that cannot be allocated sets failed[lo] and leaves the outputs
 * unwritten (the caller raises MemoryError). Same geometry guarantees as above; w is
 * (O, C, kh, kw), y and g (N, O, Ho, Wo), all C-contiguous.
 *
 * Their sizes come as one array, dims = {n, chunks, c, o, h, w, kh, kw, ho, wo, sh, sw, pt, pl,
 * dh, dw}, which the caller builds once per geometry (_native_conv.py): as sixteen ctypes
 * arguments they cost about 2 us a call, as much as a batch-1 image's whole convolution. */
typedef void (*sgemm_t)(int, int, int, int, int, int, float, const float *, int, const float *,
                        int, float, float *, int);
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

#define CONV_DIMS(d)                                                                         \
    const int64_t n = (d)[0], chunks = (d)[1], c = (d)[2], o = (d)[3], h = (d)[4],           \
                  wd = (d)[5], kh = (d)[6], kw = (d)[7], ho = (d)[8], wo = (d)[9],             \
                  sh = (d)[10], sw = (d)[11], pt = (d)[12], pl = (d)[13], dh = (d)[14],        \
                  dw = (d)[15]

#define CHUNK_IMAGES(k) (n * (k) / chunks)

/* y[b] = w (O x C*kh*kw) @ im2col(x[b]), then + bias[o] on each output channel's plane when
 * bias is not NULL (the float32 sums NumPy's y += b makes, on the product while it is in the
 * cache) */
void conv_forward_f32(int64_t lo, int64_t hi, void *gemm, const float *x, const float *w,
                      const float *bias, float *y, int64_t *failed, const int64_t *dims) {
    CONV_DIMS(dims);
    const int64_t ckk = c * kh * kw, hw = ho * wo;
    float *cols = malloc((size_t)(ckk * hw) * sizeof(float));
    if (!cols) {
        failed[lo] = 1; /* one flag per call: lo is its first chunk */
        return;
    }
    for (int64_t b = CHUNK_IMAGES(lo); b < CHUNK_IMAGES(hi); b++) {
        walk(0, c, (float *)x + b * c * h * wd, cols, h, wd, kh, kw, ho, wo, sh, sw, pt, pl, dh,
             dw, 0);
        float *yb = y + b * o * hw;
        ((sgemm_t)gemm)(ROW_MAJOR, NO_TRANS, NO_TRANS, (int)o, (int)hw, (int)ckk, 1.0f, w,
                        (int)ckk, cols, (int)hw, 0.0f, yb, (int)hw);
        if (bias)
            for (int64_t k = 0; k < o; k++)
                for (int64_t i = 0; i < hw; i++) yb[k * hw + i] += bias[k];
    }
    free(cols);
}

/* dx[b] = col2im(w^T (C*kh*kw x O) @ g[b]) */
void conv_input_grad_f32(int64_t lo, int64_t hi, void *gemm, const float *g, const float *w,
                         float *dx, int64_t *failed, const int64_t *dims) {
    CONV_DIMS(dims);
    const int64_t ckk = c * kh * kw, hw = ho * wo;
    float *cols = malloc((size_t)(ckk * hw) * sizeof(float));
    if (!cols) {
        failed[lo] = 1; /* one flag per call: lo is its first chunk */
        return;
    }
    for (int64_t b = CHUNK_IMAGES(lo); b < CHUNK_IMAGES(hi); b++) {
        ((sgemm_t)gemm)(ROW_MAJOR, TRANS, NO_TRANS, (int)ckk, (int)hw, (int)o, 1.0f, w,
                        (int)ckk, g + b * o * hw, (int)hw, 0.0f, cols, (int)hw);
        walk(0, c, dx + b * c * h * wd, cols, h, wd, kh, kw, ho, wo, sh, sw, pt, pl, dh, dw, 1);
    }
    free(cols);
}

/* dw_parts[k] (O x C*kh*kw) = sum over chunk k's images b of g[b] @ im2col(x[b])^T, the
 * images added in order into one product (GEMM's beta = 1) */
void conv_weight_grad_f32(int64_t lo, int64_t hi, void *gemm, const float *x, const float *g,
                          float *dw_parts, int64_t *failed, const int64_t *dims) {
    CONV_DIMS(dims);
    const int64_t ckk = c * kh * kw, hw = ho * wo;
    float *cols = malloc((size_t)(ckk * hw) * sizeof(float));
    if (!cols) {
        failed[lo] = 1; /* one flag per call: lo is its first chunk */
        return;
    }
    for (int64_t k = lo; k < hi; k++) {
        float *part = dw_parts + k * o * ckk;
        for (int64_t b = CHUNK_IMAGES(k); b < CHUNK_IMAGES(k + 1); b++) {
            walk(0, c, (float *)x + b * c * h * wd, cols, h, wd, kh, kw, ho, wo, sh, sw, pt, pl,
                 dh, dw, 0);
            ((sgemm_t)gemm)(ROW_MAJOR, NO_TRANS, TRANS, (int)o, (int)ckk, (int)hw, 1.0f,
                            g + b * o * hw, (int)hw, cols, (int)hw,
                            b == CHUNK_IMAGES(k) ? 0.0f : 1.0f, part, (int)ckk);
        }
    }
    free(cols);
}

/* Exact (erf) GELU and its derivative, and ReLU's derivative, on float32, one pass per element
 * range.
 * gelu(x) = x Phi(x); gelu'(x) = Phi(x) + x phi(x), Phi and phi the standard normal CDF and
 * density.
 *
 * What the callers guarantee (pullback/_cpu_native.py, which returns NotImplemented for anything
 * else; nothing here checks it again): every array is C-contiguous float32 with at least hi
 * elements, inputs of one call have one shape, the output is a fresh array that overlaps none of
 * them (the pointers are restrict), and 0 <= lo <= hi. */
#include "pullback_math.h"

#define INV_SQRT_2PI 0.39894228040143268f

void gelu_f32(int64_t lo, int64_t hi, const float *restrict x, float *restrict y) {
    for (int64_t i = lo; i < hi; i++) {
        float v = x[i];
        y[i] = v * pb_phi32(v);
    }
}

void gelu_backward_f32(int64_t lo, int64_t hi, const float *restrict g, const float *restrict x,
                       float *restrict out) {
    for (int64_t i = lo; i < hi; i++) {
        float v = x[i];
        float slope = pb_phi32(v) + v * (INV_SQRT_2PI * pb_exp32(-0.5f * v * v));
        out[i] = g[i] * slope;
    }
}

/* out = g where y > 0, else 0 (a blend: no per-element branch on a random mask) */
void relu_backward_f32(int64_t lo, int64_t hi, const float *restrict g, const float *restrict y,
                       float *restrict out) {
    for (int64_t i = lo; i < hi; i++) out[i] = y[i] > 0.0f ? g[i] : 0.0f;
}

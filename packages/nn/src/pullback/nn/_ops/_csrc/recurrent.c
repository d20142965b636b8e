/* One LSTM time step of pullback.nn's recurrent layer (float32), forward and backward, each one
 * pass over the batch rows lo..hi: the gate nonlinearities, the cell update and the output, or
 * the gradients of the four gate pre-activations and of the previous cell state. The step's
 * GEMM with the hidden weights stays in BLAS (the caller's); these replace the dozen NumPy calls
 * per step around it, each of which cost more in call overhead than its 20k-element work.
 *
 * Gate order and weights are PyTorch's: the 4H gate columns are (i, f, g, o), i, f and o
 * sigmoids, g a tanh; c' = f c + i g, h' = o tanh(c').
 *
 * What the callers guarantee (pullback/nn/_ops/_native_recurrent.py; nothing here checks it):
 * every array is C-contiguous float32: gates, hw, acts and dgates hold rows x 4H elements, the
 * others rows x H, except g_out, whose rows are g_stride >= H elements apart; outputs do not
 * overlap inputs, except gc (read, then written, element by element); 0 <= lo <= hi <= rows. */
#include "pullback_math.h"

/* 1 / (1 + exp(-x)): no cancellation anywhere (within 4 ulp), 0 below x = -88.7, 1 above 17. */
static inline float sigmoid32(float x) { return 1.0f / (1.0f + pb_exp32(-x)); }

/* tanh from exp(-2|x|) = e as (1 - e) / (1 + e) from |x| = 0.4 on (1 - e >= 0.55 there: no
 * cancellation), and by its Taylor polynomial to x^13 below (truncation under 1e-8 relative);
 * within 4 float32 ulp of the exact value. NaN stays NaN, +-inf gives +-1, -0 gives -0. */
static inline float tanh32(float x) {
    float a = __builtin_fabsf(x), a2 = a * a;
    float e = pb_exp32(-2.0f * a);
    float far = (1.0f - e) / (1.0f + e);
    float p = 21844.0f / 6081075.0f;
    p = p * a2 - 1382.0f / 155925.0f;
    p = p * a2 + 62.0f / 2835.0f;
    p = p * a2 - 17.0f / 315.0f;
    p = p * a2 + 2.0f / 15.0f;
    p = p * a2 - 1.0f / 3.0f;
    float near = a + a * a2 * p;
    return __builtin_copysignf(a < 0.4f ? near : far, x);
}

/* gates = activations of (gates + hw) in place; c_new = f c + i g, tanh_c = tanh(c_new),
 * h_new = o tanh_c. */
void lstm_forward_step_f32(int64_t lo, int64_t hi, float *restrict gates,
                           const float *restrict hw, const float *restrict c,
                           float *restrict c_new, float *restrict tanh_c, float *restrict h_new,
                           int64_t hidden) {
    for (int64_t r = lo; r < hi; r++) {
        float *a = gates + r * 4 * hidden;
        const float *w = hw + r * 4 * hidden, *cr = c + r * hidden;
        float *cn = c_new + r * hidden, *tc = tanh_c + r * hidden, *hn = h_new + r * hidden;
        for (int64_t j = 0; j < 2 * hidden; j++) a[j] = sigmoid32(a[j] + w[j]); /* i, f */
        for (int64_t j = 2 * hidden; j < 3 * hidden; j++) a[j] = tanh32(a[j] + w[j]);
        for (int64_t j = 3 * hidden; j < 4 * hidden; j++) a[j] = sigmoid32(a[j] + w[j]);
        const float *i = a, *f = a + hidden, *g = a + 2 * hidden, *o = a + 3 * hidden;
        for (int64_t j = 0; j < hidden; j++) cn[j] = f[j] * cr[j] + i[j] * g[j];
        for (int64_t j = 0; j < hidden; j++) tc[j] = tanh32(cn[j]);
        for (int64_t j = 0; j < hidden; j++) hn[j] = o[j] * tc[j];
    }
}

/* The reverse step from gh = gh_rec + g_out (the gradient reaching h' through the next step's
 * GEMM and from the layer's output) and gc (reaching c'): with gc' = gc + gh o (1 - tanh_c^2),
 * dgates = (gc' g i(1-i), gc' c_prev f(1-f), gc' i (1-g^2), gh tanh_c o(1-o)), and gc becomes
 * gc' f, the gradient of c_prev. */
void lstm_backward_step_f32(int64_t lo, int64_t hi, const float *restrict gh_rec,
                            const float *restrict g_out, float *restrict gc,
                            const float *restrict acts, const float *restrict c_prev,
                            const float *restrict tanh_c, float *restrict dgates,
                            int64_t hidden, int64_t g_stride) {
    for (int64_t r = lo; r < hi; r++) {
        const float *a = acts + r * 4 * hidden, *go = g_out + r * g_stride;
        const float *ghr = gh_rec + r * hidden, *cp = c_prev + r * hidden;
        const float *tc = tanh_c + r * hidden;
        const float *i = a, *f = a + hidden, *g = a + 2 * hidden, *o = a + 3 * hidden;
        float *gcr = gc + r * hidden, *d = dgates + r * 4 * hidden;
        for (int64_t j = 0; j < hidden; j++) {
            float gh = ghr[j] + go[j];
            float gct = gcr[j] + gh * (o[j] * (1.0f - tc[j] * tc[j]));
            d[j] = gct * (g[j] * ((1.0f - i[j]) * i[j]));
            d[hidden + j] = gct * (cp[j] * ((1.0f - f[j]) * f[j]));
            d[2 * hidden + j] = gct * (i[j] * (1.0f - g[j] * g[j]));
            d[3 * hidden + j] = gh * (tc[j] * ((1.0f - o[j]) * o[j]));
            gcr[j] = gct * f[j];
        }
    }
}

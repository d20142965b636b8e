/* In-place optimizer updates on float32, one pass where NumPy's kernels take two.
 *
 * What the caller guarantees (pullback/optim/_native.py, which declines anything else): both
 * arrays are C-contiguous float32 with at least hi elements and do not overlap (restrict), and
 * 0 <= lo <= hi.
 *
 * Each product is rounded to float32 before the add, as NumPy's multiply-into-scratch then add
 * rounds it: the build's -std=c99 turns off gcc's contraction into a fused multiply-add, so an
 * eager step gives the same bits as a compiled one, which records the two ops. */
#include <math.h>
#include <stdint.h>

/* target += alpha * source */
void add_scaled_f32(int64_t lo, int64_t hi, float *restrict target, const float *restrict source,
                    float alpha) {
    for (int64_t i = lo; i < hi; i++) {
        float scaled = alpha * source[i];
        target[i] = target[i] + scaled;
    }
}

/* Adadelta's whole update (pullback/optim/adadelta.py's passes, in their order and roundings):
 *   v = rho * v + (1 - rho) * g**2
 *   delta = g / sqrt(v + eps) * sqrt(u + eps)
 *   u = rho * u + (1 - rho) * delta**2
 *   p = p + (-lr) * delta
 * one_minus_rho and neg_lr come rounded to float32 by the caller, as NumPy rounds a Python float
 * it multiplies a float32 array by. g may not alias p, v or u. */
void adadelta_f32(int64_t lo, int64_t hi, float *restrict p, const float *restrict g,
                  float *restrict v, float *restrict u, float rho, float one_minus_rho,
                  float eps, float neg_lr) {
    for (int64_t i = lo; i < hi; i++) {
        float gi = g[i];
        float sq = gi * gi;
        sq = sq * one_minus_rho;
        float vi = v[i] * rho;
        vi = vi + sq;
        v[i] = vi;
        float delta = gi / sqrtf(vi + eps);
        delta = delta * sqrtf(u[i] + eps);
        float dsq = delta * delta;
        dsq = dsq * one_minus_rho;
        float ui = u[i] * rho;
        u[i] = ui + dsq;
        float scaled = neg_lr * delta;
        p[i] = p[i] + scaled;
    }
}

/* Adam's and AdamW's update without AMSGrad (pullback/optim/adam.py's passes, in their order
 * and roundings), t the step:
 *   p = p * decay                                    (decoupled weight decay: AdamW)
 *   g = p * l2 + grad                                (coupled L2 decay: Adam's weight_decay)
 *   m = m + (g - m) * (1 - beta1)
 *   v = v + (g * g - v) * (1 - beta2)
 *   p = p + (-step_size) * (m / (sqrt(v) / bias2_sqrt + eps))
 * with step_size = lr / (1 - beta1**t) and bias2_sqrt = sqrt(1 - beta2**t) computed in double by
 * the caller and every constant rounded to float32 there, as NumPy rounds a Python float it
 * combines with a float32 array. grad may not alias p, m or v. */
void adam_f32(int64_t lo, int64_t hi, float *restrict p, const float *restrict grad,
              float *restrict m, float *restrict v, int64_t decoupled, int64_t coupled,
              float decay, float l2, float one_minus_beta1, float one_minus_beta2,
              float bias2_sqrt, float eps, float neg_step_size) {
    for (int64_t i = lo; i < hi; i++) {
        float pi = p[i];
        if (decoupled) pi = pi * decay;
        float g = grad[i];
        if (coupled) {
            float decayed = pi * l2;
            g = decayed + g;
        }
        float dm = g - m[i];
        dm = dm * one_minus_beta1;
        float mi = m[i] + dm;
        m[i] = mi;
        float sq = g * g;
        float dv = sq - v[i];
        dv = dv * one_minus_beta2;
        float vi = v[i] + dv;
        v[i] = vi;
        float denom = sqrtf(vi);
        denom = denom / bias2_sqrt;
        denom = denom + eps;
        float ratio = mi / denom;
        float scaled = neg_step_size * ratio;
        p[i] = pi + scaled;
    }
}

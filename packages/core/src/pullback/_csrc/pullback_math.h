/* Float32 exp and erf for pullback's native kernels, written so that gcc -O3 vectorizes the loops
 * that call them (libm's expf and erff are scalar calls that block vectorization).
 *
 * exp32: exp(x) = 2^n * exp(r), n = round(x / ln 2), |r| <= ln(2) / 2, exp(r) by its degree-6
 * Taylor polynomial (relative error under 2e-7, about 1.5 float32 ulp). Below -87.3 the result
 * is 0 (also for -inf: masked attention scores); above 88.7 it is +inf; NaN stays NaN.
 *
 * erf32: x P(x^2) / Q(x^2) with the coefficients of pullback/_ops/_erf32.py (fitted by
 * tools/fit_erf32.py), within 7.2 ulp of the exact value, and exactly +-1 from |x| = 3.9 on
 * (where float32's correctly rounded erf is +-1 and the fit would overshoot).
 */
#ifndef PULLBACK_MATH_H
#define PULLBACK_MATH_H

#include <stdint.h>
#include <string.h>

static inline float pb_exp32(float x) {
    const float log2e = 1.44269504088896341f;
    const float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    float clamped = x > 88.7f ? 88.7f : (x < -87.3f ? -87.3f : x);
    /* NaN goes through the arithmetic as 0 (its result is replaced below): converting a NaN n
     * to int32 and shifting the negative result is undefined behaviour */
    clamped = clamped != clamped ? 0.0f : clamped;
    float n = __builtin_floorf(clamped * log2e + 0.5f);
    float r = clamped - n * ln2_hi - n * ln2_lo;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120
                        + r * (1.0f / 720))))));
    uint32_t bits = (uint32_t)((int32_t)n + 127) << 23; /* n + 127 in 1..255 */
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    float y = p * scale;
    y = x < -87.3f ? 0.0f : y;
    y = x > 88.7f ? __builtin_inff() : y;
    return x != x ? x : y;
}

#define ERF32_ONE 3.9f

static inline float pb_erf32(float x) {
    float c = x > 4.0f ? 4.0f : (x < -4.0f ? -4.0f : x);
    float t = c * c;
    float p = t * -6.302634e-08f;
    p = (p + 1.4642305e-05f) * t;
    p = (p + 0.0007453728f) * t;
    p = (p + 0.004386852f) * t;
    p = (p + 0.060953032f) * t;
    p = (p + 0.1703032f) * t;
    p = p + 1.1283792f;
    float q = t * 0.00015809332f;
    q = (q + 0.0019138246f) * t;
    q = (q + 0.017770348f) * t;
    q = (q + 0.11542941f) * t;
    q = (q + 0.484262f) * t;
    q = q + 1.0f;
    float y = c * p / q;
    y = c >= ERF32_ONE ? 1.0f : (c <= -ERF32_ONE ? -1.0f : y);
    return x != x ? x : y;
}

/* The standard normal CDF Phi(x) = (1 + erf(x / sqrt 2)) / 2. For x below about -3 the sum
 * cancels: erf32's absolute error (a few 1e-7) stays absolute, as in every float32 GELU built on
 * erf (PyTorch's too); an erfc branch would keep it relative but measured 2.3x slower. */
static inline float pb_phi32(float x) {
    return 0.5f * (1.0f + pb_erf32(x * 0.70710678118654752f));
}

#endif

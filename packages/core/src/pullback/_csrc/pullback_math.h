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
    float n = __builtin_floorf(clamped * log2e + 0.5f);
    float r = clamped - n * ln2_hi - n * ln2_lo;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120
                        + r * (1.0f / 720))))));
    int32_t bits = ((int32_t)n + 127) << 23;
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

/* erfc(z) for z >= 0 as t exp(-z^2 + R(t)), t = 1 / (1 + z/2), R a degree-9 polynomial (the
 * Chebyshev fit of Numerical Recipes' erfcc, relative error under 1.2e-7 in exact arithmetic;
 * about 36 float32 ulp after rounding for z < 3.5). z^2 is split so that its rounding does not
 * enter the exponent. */
static inline float pb_erfc32_pos(float z) {
    z = z > 10.5f ? 10.5f : z; /* erfc(10.5) = 1e-49 rounds to 0; keeps inf - inf out */
    float t = 1.0f / (1.0f + 0.5f * z);
    float r = 0.17087277f;
    r = r * t - 0.82215223f;
    r = r * t + 1.48851587f;
    r = r * t - 1.13520398f;
    r = r * t + 0.27886807f;
    r = r * t - 0.18628806f;
    r = r * t + 0.09678418f;
    r = r * t + 0.37409196f;
    r = r * t + 1.00002368f;
    r = r * t - 1.26551223f;
    uint32_t bits;
    memcpy(&bits, &z, sizeof bits);
    bits &= 0xFFFFF000u;
    float hi;
    memcpy(&hi, &bits, sizeof hi);
    return t * pb_exp32(-hi * hi) * pb_exp32(r - (z - hi) * (z + hi));
}

/* The standard normal CDF Phi(x) = (1 + erf(x / sqrt 2)) / 2. Below x = -1, 1 + erf cancels
 * (its absolute error becomes a relative error that grows without bound in the tail), so
 * there it is erfc(-x / sqrt 2) / 2 instead. */
static inline float pb_phi32(float x) {
    float z = x * 0.70710678118654752f;
    float upper = 0.5f * (1.0f + pb_erf32(z));
    float lower = 0.5f * pb_erfc32_pos(-z);
    return x < -1.0f ? lower : upper;
}

#endif

/* Float32 functions for the compiler's fused loops, branch-free so that gcc -O3 vectorizes the
 * loops that call them (libm's tanhf is a scalar call, about 18 ns an element; NumPy's own
 * SIMD loops are much faster, and a fused loop must not lose to them).
 *
 * pbc_tanh32: below |x| = 0.625 the odd polynomial of Cephes' tanhf; above it
 * 1 - 2 / (exp(2|x|) + 1) with pullback_math.h's exp32 (exact to 1 at large |x|: exp32 is
 * +inf there). NaN stays NaN, -0.0 stays -0.0. Within 2 float32 ulp of the exact value.
 */
static inline float pbc_tanh32(float x) {
    float a = x < 0.0f ? -x : x;
    float z = x * x;
    float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z
                    + 1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
    float large = 1.0f - 2.0f / (pb_exp32(2.0f * a) + 1.0f);
    large = x < 0.0f ? -large : large;
    float y = a < 0.625f ? small : large;
    return x != x ? x : y;
}

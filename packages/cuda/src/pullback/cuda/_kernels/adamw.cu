// Fused Adam/AdamW step on float32 parameters: one pass over memory instead of the ten or so
// elementwise kernels of the generic optimizer step. The arithmetic follows pullback.optim's
// Adam step, operation for operation, so that the fused and generic steps agree to rounding:
//
//     p   *= decay_factor = 1 - lr * weight_decay   (decoupled decay: AdamW)
//     g    = (maximize ? -grad : grad) [+ weight_decay * p]   (coupled L2 decay: Adam)
//     m   += (1 - beta1) * (g - m)
//     v   += (1 - beta2) * (g * g - v)
//     vmax = max(vmax, v)                            (amsgrad; vmax replaces v below)
//     p   -= step_size * m / (sqrt(v) / bias2_sqrt + eps)
//
// with 1 - beta1, 1 - beta2, step_size = lr / (1 - beta1^t) and bias2_sqrt = sqrt(1 - beta2^t)
// computed on the host in double precision, then rounded to float32 once, as the generic step
// rounds them when it hands them to its ufuncs.
// A grid-stride loop covers any n with a bounded grid. The gradient is only read.

extern "C" __global__ void __launch_bounds__(256)
adam_step(float* __restrict__ p, const float* __restrict__ grad, float* __restrict__ m,
          float* __restrict__ v, float* __restrict__ vmax, long long n, float one_minus_beta1,
          float one_minus_beta2, float eps, float weight_decay, float decay_factor,
          float step_size, float bias2_sqrt, int decoupled, int maximize, int amsgrad) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float param = p[i];
        float g = maximize ? -grad[i] : grad[i];
        if (weight_decay != 0.0f) {
            if (decoupled)
                param *= decay_factor;
            else
                g += weight_decay * param;
        }
        float mi = m[i];
        mi += one_minus_beta1 * (g - mi);
        float vi = v[i];
        vi += one_minus_beta2 * (g * g - vi);
        m[i] = mi;
        v[i] = vi;
        float second = vi;
        if (amsgrad) {
            second = fmaxf(vmax[i], vi);
            vmax[i] = second;
        }
        const float denom = sqrtf(second) / bias2_sqrt + eps;
        p[i] = param - step_size * (mi / denom);
    }
}

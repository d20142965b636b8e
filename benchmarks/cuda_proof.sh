#!/usr/bin/env bash
# The GPU proof of pullback-cuda: one run of a few minutes on a machine with an NVIDIA GPU.
#
#   bash benchmarks/cuda_proof.sh [OUT_DIR]          (from anywhere; OUT_DIR defaults to $OUT,
#                                                     else runs/cuda_proof in the repository)
#
# 1. env.txt       the GPU, driver, Python, NumPy, CuPy, PyTorch, JAX versions
# 2. CuPy          used as installed; else installed from $WHEELS (a folder of wheels, for
#                  machines without network) or from PyPI (cupy-cuda12x, or cupy-cuda13x when
#                  nvidia-smi reports a CUDA 13 driver)
# 3. pullback      imported from this checkout (packages/*/src on PYTHONPATH, with generated
#                  .dist-info entry points, so nothing is built and no network is needed)
# 4. tests.log     pytest packages/cuda/tests: every test, the cuda-marked ones included
# 5. matmul.jsonl, matmul.png   benchmarks/cuda_matmul.py: custom kernel vs cuBLAS, n=256..8192
#    step.jsonl    benchmarks/cuda_step.py: GPT training step vs PyTorch eager CUDA, fp32 and amp
#    bench.log     the benchmarks' output and errors (and benchmarks/gpt_step.py --device cuda)
#    conformance.log   the backend conformance suite (cuda against cpu), in the time left
# 6. summary.txt   pass/fail counts, the matmul ratios (target at n=4096), the step ratios
#
# Each stage has a time limit, so the whole run ends within about 10 minutes (the device
# tool's limit for one command): run it with timeout_s=600.
set -u -o pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-${OUT:-$ROOT/runs/cuda_proof}}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
cd "$ROOT"
export PYTHONUNBUFFERED=1 CUPY_TF32=0 XLA_PYTHON_CLIENT_PREALLOCATE=false

# -- 1. environment -------------------------------------------------------------------------
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
  nvcc --version 2>&1 | tail -1
  $PY - <<'EOF'
import importlib, sys
print("python", sys.version.split()[0])
for name in ("numpy", "cupy", "torch", "jax", "scipy", "pluggy", "ml_dtypes"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as exc:  # report, do not stop: the proof says what is missing
        print(name, "MISSING", type(exc).__name__, exc)
EOF
} > "$OUT/env.txt" 2>&1

# -- 2. CuPy --------------------------------------------------------------------------------
if ! $PY -c "import cupy" 2>/dev/null; then
  wheel=cupy-cuda12x
  nvidia-smi 2>/dev/null | grep -q "CUDA Version: 13" && wheel=cupy-cuda13x
  if [ -n "${WHEELS:-}" ]; then
    $PY -m pip install -q --no-index --find-links "$WHEELS" "$wheel" >> "$OUT/env.txt" 2>&1
  else
    $PY -m pip install -q "$wheel" >> "$OUT/env.txt" 2>&1
  fi
fi

# -- 3. pullback from this checkout -----------------------------------------------------------
SITE=$(mktemp -d)
$PY - "$SITE" <<'EOF' >> "$OUT/env.txt" 2>&1
"""Write a .dist-info per package (name, version, entry points), as pip would install them."""
import pathlib, re, sys, tomllib
site = pathlib.Path(sys.argv[1])
for folder in ("core", "cuda", "nn", "optim", "gpt"):
    root = pathlib.Path("packages") / folder
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    about = next(root.glob("src/pullback/**/__about__.py"))
    version = re.search(r'__version__ = "([^"]+)"', about.read_text()).group(1)
    info = site / f"{project['name'].replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {version}\n")
    points = project.get("entry-points", {}).get("pullback", {})
    if points:
        lines = "".join(f"{k} = {v}\n" for k, v in points.items())
        (info / "entry_points.txt").write_text("[pullback]\n" + lines)
    print("pullback package", project["name"], version)
EOF
PACKAGES_SRC="$ROOT/packages/core/src:$ROOT/packages/cuda/src:$ROOT/packages/nn/src"
PACKAGES_SRC="$PACKAGES_SRC:$ROOT/packages/optim/src:$ROOT/packages/gpt/src"
export PYTHONPATH="$SITE:$PACKAGES_SRC${PYTHONPATH:+:$PYTHONPATH}"
$PY -c "import pullback.cuda as c; print('pullback.cuda available:', c.is_available(), c.unavailable_reason() or '', 'devices:', c.device_count())" >> "$OUT/env.txt" 2>&1

# -- 4. tests -------------------------------------------------------------------------------
timeout 170 $PY -m pytest -p no:cacheprovider -q -rs packages/cuda/tests > "$OUT/tests.log" 2>&1
echo "exit status $?" >> "$OUT/tests.log"

# -- 5. benchmarks ---------------------------------------------------------------------------
rm -f "$OUT/step.jsonl"
(
  cd benchmarks
  timeout 90 $PY cuda_matmul.py --out "$OUT"
  timeout 90 $PY cuda_step.py --out "$OUT"
  timeout 60 $PY cuda_step.py --amp --out "$OUT"
  timeout 60 $PY gpt_step.py --device cuda  # pullback.gpt's own benchmark, where it exists
) > "$OUT/bench.log" 2>&1

# -- 6. the conformance suite (7000+ cases; last, with the time that is left) ----------------
if $PY -c "import pullback.cuda as c, pullback.testing.conformance; assert c.is_available()" \
    2>/dev/null; then
  workers=""
  $PY -c "import xdist" 2>/dev/null && workers="-n 8"
  timeout 110 $PY -m pytest -p no:cacheprovider -q $workers -p pullback.testing.conformance \
    --backend cuda > "$OUT/conformance.log" 2>&1
  echo "exit status $? (124: stopped at the time limit; the counts above are partial)" \
    >> "$OUT/conformance.log"
fi

# -- 7. summary -----------------------------------------------------------------------------
$PY - "$OUT" <<'EOF' > "$OUT/summary.txt" 2>&1
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
for log in ("tests.log", "conformance.log"):
    path = out / log
    if path.exists():
        lines = [l for l in path.read_text().splitlines() if l.strip()]
        print(f"{log}: {lines[-2] if len(lines) > 1 else lines}  ({lines[-1]})")
for name in ("matmul.jsonl", "step.jsonl"):
    path = out / name
    if not path.exists():
        print(f"{name}: missing (see bench.log)")
        continue
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if name == "matmul.jsonl":
            print(f"matmul {r['dtype']} n={r['n']}: custom {r['custom_gflops']:.0f} GFLOP/s, "
                  f"cuBLAS {r['cublas_gflops']:.0f}, ratio {r['ratio']:.2f}, "
                  f"max rel err {r['max_rel_err']:.1e}"
                  + (f"  target >= {r['target_ratio']}: {r['meets_target']}" if "target_ratio" in r else ""))
        else:
            print(f"step amp={r['amp']} custom_kernels={r['custom_kernels']}: pullback "
                  f"{r['pullback_ms']:.1f} ms, torch {r['torch_ms']:.1f} ms, ratio {r['ratio']:.2f} "
                  f"(target <= {r['target']}: {r['meets_target']}), first losses "
                  f"{r['first_loss_pullback']:.4f} / {r['first_loss_torch']:.4f}")
EOF
cat "$OUT/summary.txt"

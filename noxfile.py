"""Development sessions of the pullback monorepo (``nox -l`` lists them).

    nox -s tests              every package installed editable in one environment: the whole suite
    nox -s tests-<package>    one package and its pullback dependencies, editable (3.11, 3.12, 3.13)
    nox -s isolated-<package> one package alone, installed from wheels: it installs and works alone
    nox -s lint               ruff on everything, mypy on core
    nox -s docs               the documentation site, built with --strict
    nox -s bench              every script in benchmarks/
    nox -s report             regenerate docs/gradcheck.md and docs/errors.md
    nox -s demo               the main job: train the char-level GPT on TinyShakespeare, sample
    nox -s demo-mnist         a one-minute job: train a small MLP on Fashion-MNIST

Add ``-r`` to reuse the environments between runs while iterating.
"""

from __future__ import annotations

import os
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

import nox
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent
PYTHONS = ["3.11", "3.12", "3.13"]
# torch==2.13.0, the test oracle, is installed for 3.11 only (see each [test] extra); elsewhere
# the tests that need it skip and say so.
ORACLE_PYTHON = "3.11"
FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")


nox.options.sessions = ["tests"]


@dataclass(frozen=True)
class Package:
    """One distribution of the monorepo, as its pyproject.toml declares it."""

    folder: str
    name: str
    requires: tuple[Requirement, ...]
    test_requires: tuple[Requirement, ...]

    @property
    def path(self) -> str:
        return f"packages/{self.folder}"


def _read_packages() -> dict[str, Package]:
    packages = {}
    for pyproject in sorted((ROOT / "packages").glob("*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text())["project"]
        extras = project.get("optional-dependencies", {})
        packages[pyproject.parent.name] = Package(
            folder=pyproject.parent.name, name=project["name"],
            requires=tuple(map(Requirement, project.get("dependencies", []))),
            test_requires=tuple(map(Requirement, extras.get("test", []))))
    return packages


PACKAGES = _read_packages()
_FOLDER_OF = {canonicalize_name(p.name): p.folder for p in PACKAGES.values()}


def _is_ours(requirement: Requirement) -> bool:
    return canonicalize_name(requirement.name) in _FOLDER_OF


def _with_dependencies(folder: str, tests: bool) -> list[str]:
    """``folder`` and the folders of every pullback distribution it needs (runtime, and for its
    tests when ``tests``), dependencies before dependents."""
    order: list[str] = []

    def visit(name: str, include_tests: bool) -> None:
        package = PACKAGES[name]
        requirements = package.requires + (package.test_requires if include_tests else ())
        for requirement in requirements:
            if _is_ours(requirement):
                dependency = _FOLDER_OF[canonicalize_name(requirement.name)]
                if dependency not in order:
                    visit(dependency, False)
        if name not in order:
            order.append(name)

    visit(folder, tests)
    return order


def _editable(folders: list[str], extras: str = "[test]") -> list[str]:
    """pip arguments installing ``folders`` editable, all in one resolution."""
    return [arg for folder in folders for arg in ("-e", f"{PACKAGES[folder].path}{extras}")]


def _use_pyenv_interpreters() -> None:
    # pyenv's shims only run the active version; put the installed interpreters nox asks for
    # (python3.12, ...) on PATH so that every version in PYTHONS is found where pyenv has it.
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = [str(v / "bin") for python in PYTHONS
             for v in sorted(versions.glob(f"{python}.*"))[-1:] if (v / "bin").is_dir()]
    if found:
        os.environ["PATH"] = os.pathsep.join([*found, os.environ.get("PATH", "")])


_use_pyenv_interpreters()


# Test oracles whose metadata pins what the suite cannot accept: dp-accounting (Google's privacy
# accountants, pullback.dp's oracle) declares numpy~=1.21 but imports and runs on NumPy 2. In a
# [test] extra it would make the one pip resolution of every extra downgrade NumPy for the whole
# suite, so it is installed afterwards without its dependencies, and those (its real ones, all
# NumPy-2 clean) by name. Tests that need it skip where it is missing.
UNPINNED_ORACLES = {
    "vmap-dp": (["dp-accounting==0.4.4"], ["absl-py>=1.0", "attrs>=22", "dm-tree>=0.1.8",
                                           "mpmath>=1.2"]),
}


def _install_unpinned_oracles(session: nox.Session, folder: str) -> None:
    if folder in UNPINNED_ORACLES and session.python == ORACLE_PYTHON:
        oracles, dependencies = UNPINNED_ORACLES[folder]
        session.install("--no-deps", *oracles)
        session.install(*dependencies)


# -- tests ---------------------------------------------------------------------------------------

@nox.session(python=ORACLE_PYTHON)
def tests(session: nox.Session) -> None:
    """Every package installed editable in one environment; the whole test suite."""
    session.log(f"installing the {len(PACKAGES)} pullback packages editable with their test "
                "extras (requirements-dev.txt): PyTorch, the test oracle, is a large download "
                "the first time; a few minutes then, about a minute with -r")
    session.install("-r", "requirements-dev.txt")
    for folder in UNPINNED_ORACLES:
        _install_unpinned_oracles(session, folder)
    # One worker per core, each test file on one worker (a file's tests share module-level
    # fixtures): serially the suite took 23 minutes on a slow 2-core VM, near CI's 30-minute
    # limit. pytest-xdist is a runner, not a test dependency, so it is installed here and not
    # listed in requirements-dev.txt; a -n in the posargs comes later and wins.
    session.install("pytest-xdist>=3.5")
    session.run("python", "-m", "pytest", "-n", "auto", "--dist", "loadfile", *session.posargs)


# transformers' BERT encoder and GPT-2 decoder through the ONNX importer (issue 42's real models)
# need an environment of their own: transformers imports torchvision whenever it is installed,
# and the one resolution of every package's test extra installs torchvision (memcnn, avyaya's
# oracle, pulls it) from the only wheels the index has, CUDA builds that cannot load beside torch
# 2.13.0+cpu; there `BertModel` fails to import and those tests skip.
TRANSFORMERS = "transformers==5.25.0"
_NOTHING_SKIPPED = """
import sys, xml.etree.ElementTree as ET
suite = ET.parse(sys.argv[1]).getroot().iter("testsuite").__next__()
ran, skipped = int(suite.get("tests")), int(suite.get("skipped"))
if ran == 0 or skipped:
    sys.exit(f"{ran} tests, {skipped} skipped: every transformers test must run here")
print(f"{ran} transformers tests ran, none skipped")
"""


@nox.session(name="tests-onnx-transformers", python=ORACLE_PYTHON)
def tests_onnx_transformers(session: nox.Session) -> None:
    """ONNX import of transformers' BERT and GPT-2 (exported by torch.onnx) against onnxruntime,
    in an environment without torchvision; fails when any of those tests skips."""
    folders = [f for f in _with_dependencies("compiler", tests=True) if f != "compiler"]
    # the packages compiler's tests need without their own test extras (avyaya's pulls
    # torchvision), compiler's test extra (torch, onnx, onnxruntime), and transformers
    session.install(*_editable(folders, extras=""), *_editable(["compiler"]), TRANSFORMERS)
    report = Path(session.create_tmp()) / "transformers.xml"
    session.run("python", "-m", "pytest", "packages/compiler/tests/test_onnx_real_models.py",
                "-k", "transformers", f"--junitxml={report}", *session.posargs)
    session.run("python", "-c", _NOTHING_SKIPPED, str(report))


def _tests_session(folder: str) -> None:
    def run_tests(session: nox.Session) -> None:
        session.install(*_editable(_with_dependencies(folder, tests=True)))
        _install_unpinned_oracles(session, folder)
        session.run("python", "-m", "pytest", f"packages/{folder}/tests", *session.posargs)

    run_tests.__doc__ = f"{PACKAGES[folder].name}'s tests; it and its dependencies editable."
    nox.session(name=f"tests-{folder}", python=PYTHONS)(run_tests)


# Run in the environment, after installing: the loaded plugins must be exactly the installed
# pullback distributions, none may fail, and pullback must come from site-packages (the wheel).
_CHECK_INSTALLED = """
import sys, pullback
from pullback import plugins
loaded = {r.distribution for r in plugins.records().values()}
failed = {n: r.error for n, r in plugins.failed().items()}
expected = set(sys.argv[1:])
if "site-packages" not in pullback.__file__:
    sys.exit(f"pullback was imported from {pullback.__file__}, not from the installed wheel")
if loaded != expected or failed:
    sys.exit(f"plugins loaded: {sorted(loaded)}, expected {sorted(expected)}; failed: {failed}")
print("plugins loaded:", ", ".join(sorted(loaded)))
"""


def _isolated_session(folder: str) -> None:
    def run_isolated(session: nox.Session) -> None:
        needed = _with_dependencies(folder, tests=True)
        wheels = Path(session.create_tmp()) / "wheels"
        shutil.rmtree(wheels, ignore_errors=True)
        # Build first (pip builds each wheel in an isolated build environment), so that no
        # build tool ends up in the environment under test.
        session.run("python", "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
                    str(wheels), *(PACKAGES[f].path for f in needed))
        built = {f: str(next(wheels.glob(f"{PACKAGES[f].name.replace('-', '_')}-*.whl")))
                 for f in needed}
        # pullback's distributions from these wheels only; then their third-party dependencies
        # and the [test] extra, as the wheels' own metadata declares them, from the index.
        session.install("--no-index", "--no-deps", *built.values())
        session.install(*(w for f, w in built.items() if f != folder), f"{built[folder]}[test]")
        session.run("python", "-m", "pip", "check")
        _install_unpinned_oracles(session, folder)  # after the check, which they would fail
        session.run("python", "-c", _CHECK_INSTALLED, *(PACKAGES[f].name for f in needed))
        session.run("python", "-m", "pytest", f"packages/{folder}/tests", *session.posargs)

    run_isolated.__doc__ = f"{PACKAGES[folder].name} alone, from its wheel (and its dependencies')."
    nox.session(name=f"isolated-{folder}", python=ORACLE_PYTHON)(run_isolated)


for _folder in PACKAGES:
    _tests_session(_folder)
    _isolated_session(_folder)


# -- quality and docs ----------------------------------------------------------------------------

@nox.session(python=ORACLE_PYTHON)
def lint(session: nox.Session) -> None:
    """ruff on every Python file; mypy on core (configured in pyproject.toml)."""
    session.install("ruff>=0.6", "mypy>=1.10", "-e", PACKAGES["core"].path)
    session.run("ruff", "check", ".")
    session.run("mypy")


@nox.session(python=ORACLE_PYTHON)
def docs(session: nox.Session) -> None:
    """The mkdocs site (API reference from docstrings), built with --strict into site/."""
    session.install("-r", "docs/requirements.txt")
    session.run("mkdocs", "build", "--strict", "--site-dir", "site", *session.posargs)


# -- measurements and the main job -------------------------------------------------------------

@nox.session(python=ORACLE_PYTHON)
def bench(session: nox.Session) -> None:
    """Every benchmark script (side by side with PyTorch; JSON lines on stdout)."""
    session.install(*_editable(list(PACKAGES)))
    scripts = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))
    if not scripts:
        session.error("no benchmark scripts in benchmarks/")
    for script in scripts:
        session.run("python", str(script.relative_to(ROOT)), *session.posargs)


@nox.session(python=ORACLE_PYTHON)
def report(session: nox.Session) -> None:
    """Regenerate docs/gradcheck.md (gradcheck and PyTorch parity of every registered op) and
    docs/errors.md (every error case: bad input, error raised, message), from one run."""
    session.install(*_editable(list(PACKAGES)))
    session.run("python", "-m", "pullback.testing.report", *session.posargs)


# demo-mnist's length on two cores: about a minute (pass other arguments after --).
DEMO_ARGUMENTS = ["--epochs", "2"]


@nox.session(python=ORACLE_PYTHON)
def demo(session: nox.Session) -> None:
    """The main job: train the char-level GPT on TinyShakespeare (nanoGPT's CPU configuration
    with the warmup-stable-decay schedule: loss curve, CSV log and checkpoints in
    runs/gpt-demo/), then sample from it. The corpus is the copy embedded in pullback-gpt
    (offline; $PULLBACK_DATA or the user cache override it); extra arguments go to
    `pullback-gpt train` (e.g. -- --steps 500, or -- --schedule cosine for nanoGPT's own
    schedule). CI runs it with -- --steps 30."""
    folders = _with_dependencies("gpt", tests=False)
    session.log(f"installing {', '.join(PACKAGES[f].name for f in folders)} editable, with "
                "NumPy, SciPy and matplotlib: a minute or more the first time (pip builds each "
                "package; nox -r -s demo reuses the environment)")
    session.install(*_editable(folders, extras=""))
    # A second demo replaces the first one's run (only what train writes), unless it resumes it.
    overwrite = [] if "--resume" in session.posargs else ["--overwrite"]
    session.run("pullback-gpt", "train", "--config", "nano-cpu", "--schedule", "wsd",
                "--out", "runs/gpt-demo", *overwrite, *session.posargs)
    session.run("pullback-gpt", "sample", "--checkpoint", "runs/gpt-demo", "--prompt", "ROMEO:",
                "--max-new-tokens", "300")
    session.log("pullback-gpt lives in nox's environment; to have it on your PATH, install "
                "pullback into yours: pip install -r requirements.txt (README, Quick start)")


@nox.session(python=ORACLE_PYTHON, name="demo-mnist")
def demo_mnist(session: nox.Session) -> None:
    """A one-minute job: train an MLP on Fashion-MNIST (curves and metrics into runs/)."""
    _ensure_fashion_mnist(session)
    # The example's own needs besides pullback: a progress bar and the plot of its curves.
    session.install(*_editable(["core", "nn", "optim"], extras=""), "tqdm", "matplotlib")
    session.run("python", "examples/fashion_mnist_mlp.py", *(session.posargs or DEMO_ARGUMENTS))


def _ensure_fashion_mnist(session: nox.Session) -> None:
    """Install Debian's dataset-fashion-mnist when the files are missing (as root, or with sudo
    that needs no password); otherwise stop and say how."""
    if list(FASHION_MNIST.glob("train-images-idx3-ubyte*")):
        return
    how = "apt-get install dataset-fashion-mnist (Debian/Ubuntu)"
    if shutil.which("apt-get") is None:
        session.error(f"Fashion-MNIST is not in {FASHION_MNIST}; install it: {how}")
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    if sudo and shutil.which("sudo") is None:
        session.error(f"Fashion-MNIST is not in {FASHION_MNIST}; as root: {how}")
    session.run(*sudo, "apt-get", "update", external=True)
    session.run(*sudo, "apt-get", "install", "-y", "dataset-fashion-mnist", external=True)

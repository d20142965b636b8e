"""Fixtures for the integration tests: wheels of the distributions, built on demand, and
throw-away virtual environments to install them into.

A throw-away environment is a real venv (``python -m venv --without-pip``). pullback's own
distributions and the fixture plugins are installed into it by pip, from wheels, exactly as a user
would install them. Third-party dependencies (NumPy, SciPy...) are not reinstalled each time: the
already installed copies are linked into one folder that every throw-away venv puts on its path
(a ``.pth`` file), which keeps these tests to seconds instead of minutes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

import pytest

# The suite runs with --import-mode=importlib, which puts no test folder on sys.path; the tests
# here share example_runs.py (a name no package's tests use).
sys.path.insert(0, str(Path(__file__).parent))
from example_runs import EXAMPLES, SmokeRun, run_example  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "packages"
REFCPU = ROOT / "tests-integration" / "refcpu-plugin"


def project_folders() -> dict[str, Path]:
    """Distribution name -> project folder, for every package in packages/ and the fixture."""
    folders = {}
    for pyproject in sorted(PACKAGES.glob("*/pyproject.toml")) + [REFCPU / "pyproject.toml"]:
        folders[tomllib.loads(pyproject.read_text())["project"]["name"]] = pyproject.parent
    return folders


class Wheelhouse:
    """Builds wheels (regular or editable) with hatchling, once per distribution and kind."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._built: dict[tuple[Path, bool], Path] = {}

    def wheel(self, project: str | Path, editable: bool = False) -> Path:
        """The wheel of a distribution name (see :func:`project_folders`) or a project folder.

        An editable wheel is what ``pip install -e`` builds and installs (hatchling's PEP 660
        hook): building it here saves pip a build environment per install.
        """
        folder = project_folders()[project] if isinstance(project, str) else project
        key = (folder, editable)
        if key not in self._built:
            out = self.directory / ("editable" if editable else "regular") / folder.name
            target = "wheel:editable" if editable else "wheel"
            run([sys.executable, "-m", "hatchling", "build", "-t", target, "-d", str(out)],
                cwd=folder)
            (self._built[key],) = out.glob("*.whl")
        return self._built[key]


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Wheelhouse:
    """Wheels of the distributions, built on first request (needs hatchling and editables)."""
    pytest.importorskip("hatchling", reason="building wheels needs hatchling "
                        "(pip install -r tests-integration/requirements.txt)")
    return Wheelhouse(tmp_path_factory.mktemp("wheels"))


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], SmokeRun]:
    """``smoke_run(name)``: the example's --smoke run, made once per session, so that the
    generic examples test and an example's own test read the same run."""
    runs: dict[str, SmokeRun] = {}

    def get(name: str) -> SmokeRun:
        if name not in runs:
            folder = tmp_path_factory.mktemp(f"smoke-{name}")
            runs[name] = SmokeRun(name, folder,
                                  run_example(EXAMPLES / f"{name}.py", "--smoke", cwd=folder))
        return runs[name]

    return get


def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
    """Run a command; fail the test with its output when it fails."""
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, (
        f"{' '.join(command)} exited {result.returncode}\n"
        f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def link_installed(distributions: Iterable[str], into: Path) -> None:
    """Symlink the installed files of ``distributions`` and of their dependencies into a folder,
    so that a throw-away venv can import them without installing them again."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    todo, seen = list(distributions), set()
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        dist = metadata.distribution(name)
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
        for top in {f.parts[0] for f in dist.files or []}:
            # Skip scripts (../../bin), caches and .pth files: only importable things matter.
            if top in ("..", "__pycache__") or top.endswith(".pth"):
                continue
            link = into / top
            if not link.exists():
                link.symlink_to(Path(dist.locate_file(top)).resolve())


def core_dependencies() -> list[str]:
    """The runtime dependencies core declares (read from its pyproject, not guessed)."""
    from packaging.requirements import Requirement

    pyproject = tomllib.loads((PACKAGES / "core" / "pyproject.toml").read_text())
    return [Requirement(r).name for r in pyproject["project"]["dependencies"]]


@pytest.fixture(scope="session")
def linked_dependencies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder holding links to core's third-party dependencies, and to pytest (and torch
    when installed) for running test suites inside throw-away venvs."""
    folder = tmp_path_factory.mktemp("linked-dependencies")
    wanted = core_dependencies() + ["pytest", "hypothesis"]
    try:
        metadata.distribution("torch")
        wanted.append("torch")
    except metadata.PackageNotFoundError:
        pass
    link_installed(wanted, folder)
    return folder


class Venv:
    """A throw-away virtual environment; pip installs into it from the outer environment."""

    def __init__(self, path: Path, linked_dependencies: Path) -> None:
        self.path = path
        run([sys.executable, "-m", "venv", "--without-pip", str(path)])
        self.python = path / "bin" / "python"
        site = Path(run([str(self.python), "-c", "import sysconfig; "
                         "print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
        self.site_packages = site
        (site / "_linked_dependencies.pth").write_text(f"{linked_dependencies}\n")

    def pip(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        # pip --python: the outer pip works on this venv, which has no pip of its own.
        return run([sys.executable, "-m", "pip", "--python", str(self.python),
                    "--disable-pip-version-check", *args], cwd=cwd)

    def install(self, *wheels: Path) -> None:
        """Install wheels, nothing from an index: their dependencies are already here."""
        self.pip("install", "--no-deps", "--no-index", *map(str, wheels))

    def uninstall(self, *distributions: str) -> None:
        self.pip("uninstall", "--yes", *distributions)

    def run(self, *args: str, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        """Run this venv's python; PYTHONPATH and PULLBACK_* of the outer process are dropped."""
        return self._run([str(self.python), *args], env=env, cwd=cwd)

    def _run(self, command: list[str], env: dict[str, str] | None,
             cwd: Path | None) -> subprocess.CompletedProcess:
        clean = {k: v for k, v in os.environ.items()
                 if k != "PYTHONPATH" and not k.startswith("PULLBACK_")}
        clean.update(env or {})
        return subprocess.run(command, capture_output=True, text=True, env=clean,
                              cwd=cwd or self.path, timeout=600)

    def run_script(self, name: str, *args: str) -> subprocess.CompletedProcess:
        """Run one of this venv's console scripts (bin/<name>), as an activated shell would."""
        return self._run([str(self.path / "bin" / name), *args], env=None, cwd=None)

    def python_ok(self, code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run ``code``; fail the test with its output when it exits non-zero."""
        result = self.run("-c", textwrap.dedent(code), env=env)
        assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        return result


@pytest.fixture(scope="session")
def linked_install_needs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder linking what ``pip install ./packages/...`` needs without an index: hatchling
    (the build backend, for ``--no-build-isolation``), every package's third-party runtime
    dependencies (tqdm, matplotlib, ...), read from the pyprojects, and what the integration
    tests' requirements.txt lists."""
    pytest.importorskip("hatchling", reason="building the packages needs hatchling "
                        "(pip install -r tests-integration/requirements.txt)")
    from packaging.requirements import Requirement

    ours = set(project_folders())
    third_party = {Requirement(r).name for folder in project_folders().values()
                   for r in tomllib.loads((folder / "pyproject.toml").read_text())["project"]
                   .get("dependencies", [])} - ours
    # requirements-dev.txt pulls in this folder's requirements.txt, which pip resolves even
    # under --no-deps (scikit-learn for the examples, ...)
    integration = {Requirement(line).name for line in requirement_lines(
        Path(__file__).parent / "requirements.txt")}
    folder = tmp_path_factory.mktemp("linked-install-needs")
    link_installed(sorted({"hatchling", "editables", *third_party, *integration}), folder)
    return folder


def requirement_lines(path: Path) -> list[str]:
    """The requirements a pip requirements file lists, following its ``-r`` includes."""
    lines = []
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("-r "):
            lines += requirement_lines(path.parent / line[3:].strip())
        elif line:
            lines.append(line)
    return lines


@pytest.fixture
def make_venv(tmp_path: Path, linked_dependencies: Path) -> Callable[[str], Venv]:
    """``make_venv(name)``: a new empty :class:`Venv` under this test's temporary folder."""
    return lambda name: Venv(tmp_path / name, linked_dependencies)


@pytest.fixture
def make_project(tmp_path: Path) -> Callable[..., Path]:
    """``make_project(distribution, module, source)``: a throw-away plugin project whose one
    module ``module`` (named by its entry point) holds ``source``."""

    def make(distribution: str, module: str, source: str, version: str = "0.1.0") -> Path:
        folder = tmp_path / "projects" / distribution
        (folder / "src").mkdir(parents=True)
        (folder / "src" / f"{module}.py").write_text(textwrap.dedent(source))
        (folder / "pyproject.toml").write_text(textwrap.dedent(f"""\
            [build-system]
            requires = ["hatchling"]
            build-backend = "hatchling.build"

            [project]
            name = "{distribution}"
            version = "{version}"
            dependencies = ["pullback"]

            [project.entry-points.pullback]
            {module.removesuffix('_plugin')} = "{module}"

            [tool.hatch.build.targets.wheel]
            only-include = ["src/{module}.py"]
            sources = ["src"]
            """))
        return folder

    return make


@pytest.fixture(scope="session")
def distribution_folders() -> dict[str, Path]:
    """Distribution name -> folder of every package under packages/."""
    return {name: folder for name, folder in project_folders().items() if folder != REFCPU}

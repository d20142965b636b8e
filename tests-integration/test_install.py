"""The README's install command, followed in a fresh virtual environment: it installs every
package from the clone, the README's snippet then runs from any folder, and ``pullback-gpt`` is
on the environment's PATH. Also: the requirements files list every package folder, and the
namespace-package trap the README's troubleshooting section describes is what it says.

pip runs offline here (``--no-index``): the third-party dependencies are linked in from the
outer environment, as for the other venv tests (see conftest.py), and so is hatchling, the
build backend, since building without an index needs it in the environment
(``--no-build-isolation``). Everything else is the README's command as written.
"""

from __future__ import annotations

import re
import tomllib
import shlex
import textwrap
from pathlib import Path
from typing import Any, Callable

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
OFFLINE = ["--no-index", "--no-build-isolation", "--disable-pip-version-check", "--quiet"]


def readme_blocks(language: str = "") -> list[str]:
    """The README's fenced code blocks in ``language`` ("" for the plain ones)."""
    blocks: list[tuple[str, list[str]]] = []
    inside = False
    for line in README.read_text().splitlines():
        if line.startswith("```"):
            if not inside:
                blocks.append((line[3:].strip(), []))
            inside = not inside
        elif inside:
            blocks[-1][1].append(line)
    return ["\n".join(lines) + "\n" for lang, lines in blocks if lang == language]


def readme_install_command(requirements: str) -> list[str]:
    """The README's ``pip install -r <requirements>`` line, as arguments after ``pip``."""
    lines = [line for block in readme_blocks() for line in block.splitlines()]
    lines += re.findall(r"`(pip install -r [^`]+)`", README.read_text())  # inline code
    for line in lines:
        if line.startswith("pip install -r ") and line.split()[3] == requirements:
            return shlex.split(line)[1:]
    raise AssertionError(f"the README has no `pip install -r {requirements}` command")


def package_folders() -> set[str]:
    return {f"./packages/{p.parent.name}" for p in (ROOT / "packages").glob("*/pyproject.toml")}


@pytest.mark.parametrize("requirements, editable", [("requirements.txt", False),
                                                    ("requirements-dev.txt", True)])
def test_the_requirements_files_list_every_package(requirements: str, editable: bool) -> None:
    lines = [line.split("#")[0].strip() for line in (ROOT / requirements).read_text().splitlines()]
    listed = {line.removeprefix("-e ").removesuffix("[test]") for line in lines
              if line.startswith(("./", "-e "))}
    assert listed == package_folders()
    assert all(line.startswith("-e ") == editable for line in lines if "./packages/" in line)


def fresh_venv(make_venv: Callable[[str], Any], install_needs: Path, name: str) -> Any:
    venv = make_venv(name)
    (venv.site_packages / "_install_needs.pth").write_text(f"{install_needs}\n")
    return venv


@pytest.mark.venv
def test_the_readme_install_command_gives_a_working_pullback(
        make_venv: Callable[[str], Any], linked_install_needs: Path, tmp_path: Path) -> None:
    venv = fresh_venv(make_venv, linked_install_needs, "user")
    install = readme_install_command("requirements.txt")
    assert install == ["install", "-r", "requirements.txt"]
    # the README runs it from the clone's root
    venv.pip(*install[:1], *OFFLINE, *install[1:], cwd=ROOT)

    # the README's snippet, saved as a script in a folder of its own
    (snippet,) = readme_blocks("python")[:1]
    script = tmp_path / "mine" / "snippet.py"
    script.parent.mkdir()
    script.write_text(snippet + "\nprint('loss', float(loss.item()))\n")
    ran = venv.run(str(script), cwd=script.parent)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("loss ")
    where = venv.python_ok("import pullback, pullback.gpt; print(pullback.__file__)").stdout
    assert str(venv.site_packages) in where  # a plain install, not the clone's source

    # the commands are in the environment's bin/, on its PATH once activated
    for command, args in (("pullback-gpt", ["train", "--help"]), ("pullback", ["plugins"])):
        ran = venv.run_script(command, *args)
        assert ran.returncode == 0, ran.stderr
    assert "--schedule" in venv.run_script("pullback-gpt", "train", "--help").stdout

    # a script next to a folder named "pullback" (the clone beside it) still gets the
    # installed pullback: the troubleshooting note's trap needs pullback to be missing
    (script.parent / "pullback").mkdir()
    ran = venv.run(str(script), cwd=script.parent)
    assert ran.returncode == 0, ran.stderr


@pytest.mark.venv
def test_the_namespace_trap_of_the_troubleshooting_section(
        make_venv: Callable[[str], Any], tmp_path: Path) -> None:
    """Without pullback installed, a folder named pullback beside the script is imported as an
    empty namespace package, with the error the README quotes."""
    venv = make_venv("bare")
    (tmp_path / "work" / "pullback" / "packages").mkdir(parents=True)  # a clone, as Python sees it
    script = tmp_path / "work" / "snippet.py"
    script.write_text(textwrap.dedent(readme_blocks("python")[0]))
    ran = venv.run(str(script), cwd=script.parent)
    assert ran.returncode == 1
    quoted = "cannot import name 'nn' from 'pullback' (unknown location)"
    assert quoted in ran.stderr and quoted in README.read_text()


@pytest.mark.venv
def test_the_contributors_install_is_editable(
        make_venv: Callable[[str], Any], linked_install_needs: Path) -> None:
    venv = fresh_venv(make_venv, linked_install_needs, "dev")
    install = readme_install_command("requirements-dev.txt")
    # --no-deps: the [test] extras (PyTorch...) would need an index; what is checked here is
    # that every package is installed editable from the clone
    venv.pip(install[0], *OFFLINE, "--no-deps", *install[1:], cwd=ROOT)
    where = venv.python_ok("import pullback.nn, pullback.gpt; print(pullback.__file__); "
                           "print(pullback.gpt.__file__)").stdout.split()
    assert where == [str(ROOT / "packages/core/src/pullback/__init__.py"),
                     str(ROOT / "packages/gpt/src/pullback/gpt/__init__.py")]
    assert venv.run_script("pullback-gpt", "--help").returncode == 0


def readme_lean_installs() -> list[list[str]]:
    """Every ``pip install ./packages/...`` command the README gives, as package folders."""
    text = " ".join(README.read_text().split())  # inline code may wrap over lines
    commands = re.findall(r"`pip install ((?:\./packages/[\w-]+ ?)+)`", text)
    return [command.split() for command in commands]


def imported_by(folder: str) -> list[str]:
    """The import paths a package folder's wheel provides (core's whole ``packages``, the
    others' ``only-include`` folders)."""
    pyproject = tomllib.loads((ROOT / folder / "pyproject.toml").read_text())
    wheel = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]
    included = wheel.get("only-include", wheel.get("packages"))
    return [path.removeprefix("src/").replace("/", ".") for path in included]


def test_the_readme_gives_the_lean_installs_it_promises() -> None:
    installs = readme_lean_installs()
    assert ["./packages/core", "./packages/nn", "./packages/optim"] in installs
    assert any("./packages/gpt" in folders for folders in installs)


@pytest.mark.venv
@pytest.mark.parametrize("folders", readme_lean_installs(), ids=lambda f: "+".join(
    Path(folder).name for folder in f))
def test_each_readme_lean_install_works_alone(
        folders: list[str], make_venv: Callable[[str], Any], linked_install_needs: Path) -> None:
    # pip resolves the pullback distributions only among the folders given (no index holds
    # them): a dependency the command leaves out fails here, as it failed for users.
    venv = fresh_venv(make_venv, linked_install_needs, "lean")
    venv.pip("install", *OFFLINE, *folders, cwd=ROOT)
    modules = [module for folder in folders for module in imported_by(folder)]
    venv.python_ok("import " + ", ".join(modules))
    if "./packages/gpt" in folders:
        ran = venv.run_script("pullback-gpt", "train", "--help")
        assert ran.returncode == 0, ran.stderr

"""The documentation site, built as ``nox -s docs`` builds it, read the way a user reads it: from
disk. No internal link may be broken (pages, assets, anchors), no Sphinx role may show as raw
markup, every package has an API page generated from its docstrings, and a headless Chromium
opens the landing page and a package's API page from ``file://`` (screenshots are written to
``$PULLBACK_DOCS_SCREENSHOTS`` when set, for a person to look at).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):`")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs", reason="the docs build needs docs/requirements.txt")
    pytest.importorskip("material", reason="the docs build needs docs/requirements.txt")
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                             str(out)], cwd=ROOT, capture_output=True, text=True, timeout=900,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-4000:]
    return out


class Page(HTMLParser):
    """One HTML page: the links it makes, the ids it defines, and its text outside code."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.prose: list[str] = []
        self._in_code = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"] or "")
        for attribute in ("href", "src"):
            if values.get(attribute) and not (tag == "link" and values.get("rel") == "preconnect"):
                self.links.append(values[attribute] or "")
        if tag in ("pre", "code"):
            self._in_code += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("pre", "code") and self._in_code:
            self._in_code -= 1

    def handle_data(self, data: str) -> None:
        if not self._in_code:
            self.prose.append(data)


def read_pages(site: Path) -> dict[Path, Page]:
    pages = {}
    for path in sorted(site.rglob("*.html")):
        page = Page()
        page.feed(path.read_text(encoding="utf-8"))
        pages[path] = page
    return pages


def test_no_internal_link_is_broken(site: Path) -> None:
    pages = read_pages(site)
    broken = []
    for path, page in pages.items():
        if path == site / "404.html":  # a web server's error page, with root-absolute links
            continue
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith(("//", "mailto:", "data:", "javascript:")):
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                broken.append(f"{path.relative_to(site)}: {link} is a folder (a listing from disk)")
            elif not target.is_file():
                broken.append(f"{path.relative_to(site)}: {link} (no such file)")
            elif parts.fragment and target in pages and unquote(parts.fragment) not in \
                    pages[target].ids:
                broken.append(f"{path.relative_to(site)}: {link} (no such anchor)")
    assert not broken, "\n".join(broken[:40])
    assert len(pages) > 40


def test_no_sphinx_role_shows_as_raw_markup(site: Path) -> None:
    raw = [f"{path.relative_to(site)}: ...{match.string[max(0, match.start() - 40):match.end() + 40]}..."
           for path, page in read_pages(site).items()
           for match in ROLE.finditer(" ".join(page.prose))]
    assert not raw, "\n".join(raw[:20])


def import_paths() -> list[str]:
    """Every subpackage a pullback distribution provides (``nn``, ``func``, ``dp``...)."""
    names = []
    for pyproject in sorted((ROOT / "packages").glob("*/pyproject.toml")):
        wheel = tomllib.loads(pyproject.read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
        names += [p.removeprefix("src/pullback/") for p in wheel.get("only-include", [])]
    return names


@pytest.mark.parametrize("name", import_paths())
def test_every_package_has_an_api_page_from_its_docstrings(site: Path, name: str) -> None:
    page = site / "api" / f"{name}.html"
    assert page.is_file(), f"no API page for pullback.{name}"
    parsed = Page()
    parsed.feed(page.read_text(encoding="utf-8"))
    documented = {i for i in parsed.ids if i.startswith(f"pullback.{name}.")}
    assert len(documented) >= 3, f"api/{name}.html documents {sorted(documented)}"


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.parametrize("page, expect", [("index.html", "first principles"),
                                          ("api/nn.html", "pullback.nn.Module")])
def test_chromium_opens_the_site_from_disk(site: Path, page: str, expect: str,
                                           tmp_path: Path) -> None:
    browser = chromium()
    if browser is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    url = (site / page).as_uri()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([browser, *flags, "--dump-dom", url], capture_output=True, text=True,
                         timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert expect in dom.stdout and "md-tabs" in dom.stdout  # the theme's tabs were rendered
    shots = Path(os.environ.get("PULLBACK_DOCS_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / (page.replace("/", "_").removesuffix(".html") + ".png")
    taken = subprocess.run([browser, *flags, "--window-size=1280,900", f"--screenshot={shot}",
                            url], capture_output=True, text=True, timeout=120)
    assert taken.returncode == 0 and shot.stat().st_size > 20_000, taken.stderr[-2000:]

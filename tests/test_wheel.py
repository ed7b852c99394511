"""A real package: `python -m build` makes an sdist and a wheel (the wheel built from the
sdist, so the sdist is complete), and the wheel, installed into a fresh virtual environment
away from the checkout, runs the app (`detokgui --model demo --screenshot`) and the
tutorial's first lines (`dg.load("demo")`, `dg.topk`).

The venv sees the environment's site-packages (torch, PySide6, pandas come from there) but
the detokgui it imports must be the wheel's: the checkout's editable install (a path
finder that setuptools puts on sys.meta_path) and PYTHONPATH must not shadow it, which the
tests check from inside the venv."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import isolated_environment

ROOT = Path(__file__).resolve().parent.parent
#: left out of the copy the package is built from (what .gitignore names, and .git)
NOT_SOURCES = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", "*.egg-info", "build",
                                     "dist", ".pytest_cache", ".ruff_cache", "site", ".venv",
                                     "venv", ".mypy_cache", ".ipynb_checkpoints")
RESOURCES = ("detokgui.svg", "detokgui.desktop", "demo_model/config.json",
             "demo_model/model.safetensors", "demo_model/vocab.json", "demo_model/merges.txt",
             "sample_corpus/public-domain-sample.jsonl.gz")
BUILD_TIMEOUT = 300


def version() -> str:
    """`__version__` as written in detokgui/__init__.py (the one place it is kept)."""
    tree = ast.parse((ROOT / "detokgui" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("detokgui/__init__.py sets no __version__")


def subpackages() -> list[str]:
    """Every package of the checkout's detokgui/ (a folder with an __init__.py)."""
    return sorted(".".join(p.parent.relative_to(ROOT).parts)
                  for p in (ROOT / "detokgui").rglob("__init__.py")
                  if "__pycache__" not in p.parts)


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The sdist and the wheel `python -m build` makes, from a copy of the checkout (the
    build writes its egg-info next to pyproject.toml; the checkout stays untouched).
    `--no-isolation`: the build backend (setuptools, from the test extra) is the installed
    one, so the build needs no network."""
    tmp = tmp_path_factory.mktemp("build")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=NOT_SOURCES)
    out = tmp / "dist"
    r = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out),
                        str(src)], capture_output=True, text=True, check=False,
                       timeout=BUILD_TIMEOUT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    sdists, wheels = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, sorted(p.name for p in out.iterdir())
    return sdists[0], wheels[0]


def see_environment(python: Path) -> None:
    """When the tests themselves run in a virtual environment, --system-site-packages shows
    the new venv its base interpreter's packages, not this environment's: add this
    environment's site-packages after the venv's own (as the base's would be, their .pth
    files read), so torch, PySide6 and pandas are found and the wheel's detokgui comes
    first."""
    import site

    code = "import sysconfig; print(sysconfig.get_path('purelib'))"
    r = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True,
                       timeout=60)
    lines = [f"import site; site.addsitedir({d!r})\n" for d in site.getsitepackages()]
    Path(r.stdout.strip(), "zz-outer-environment.pth").write_text("".join(lines), encoding="utf-8")


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory):
    """A fresh venv with the wheel installed (`--no-deps`: the dependencies come from the
    environment's site-packages, which the venv sees). Returns (python, bin folder, env,
    working folder outside the checkout)."""
    tmp = tmp_path_factory.mktemp("venv")
    home = tmp / "venv"
    # --without-pip: the environment's pip (visible through --system-site-packages) installs
    # into the venv when the venv's interpreter runs it; ensurepip would add seconds.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(home)], check=True, timeout=120)
    bindir = home / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    if sys.prefix != sys.base_prefix:
        see_environment(python)
    env = isolated_environment(tmp / "home")
    env.pop("PYTHONPATH", None)  # the tests' own PYTHONPATH may name the checkout
    env.pop("PYTHONHOME", None)
    env["PATH"] = str(bindir) + os.pathsep + env.get("PATH", "")
    env["PYTHONNOUSERSITE"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INDEX"] = "1"
    work = tmp / "work"
    work.mkdir()
    # --ignore-installed: the environment's own (editable) detokgui of the same version
    # would otherwise count as installed, and pip would leave the venv without it.
    r = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--ignore-installed",
                        "--no-compile", "-q", str(dist[1])], cwd=work, env=env,
                       capture_output=True, text=True, check=False, timeout=BUILD_TIMEOUT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return python, bindir, env, work


def test_version_is_kept_in_one_place():
    """pyproject.toml reads the version from detokgui/__init__.py; nothing else states it."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in text
    assert 'version = { attr = "detokgui.__version__" }' in text
    v = version()
    hits = [f"{p.relative_to(ROOT)}:{n}"
            for p in [ROOT / "pyproject.toml", ROOT / "packaging" / "detokgui.spec",
                      *sorted((ROOT / "detokgui").rglob("*.py"))]
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if f'"{v}"' in line or f"'{v}'" in line]
    assert [h.split(":")[0] for h in hits] == ["detokgui/__init__.py"], hits


def test_changelog_names_the_version():
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## [{version()}]" in changelog


def test_sdist_holds_the_sources_and_resources(dist):
    sdist, _ = dist
    assert sdist.name == f"detokgui-{version()}.tar.gz"
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for name in ("pyproject.toml", "README.md", "CHANGELOG.md"):
        assert name in names
    for res in RESOURCES:
        assert f"resources/{res}" in names, res
    for pkg in subpackages():
        assert pkg.replace(".", "/") + "/__init__.py" in names, pkg


def test_wheel_holds_every_package_and_the_package_data(dist):
    _, wheel = dist
    assert wheel.name == f"detokgui-{version()}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        info = {n.split("/")[-1]: z.read(n).decode() for n in names
                if n.startswith(f"detokgui-{version()}.dist-info/")}
    for pkg in subpackages():
        assert pkg.replace(".", "/") + "/__init__.py" in names, f"{pkg} is not in the wheel"
    modules = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "detokgui").rglob("*.py")
                     if "__pycache__" not in p.parts)
    assert [m for m in modules if m not in names] == []
    for res in RESOURCES:
        assert f"detokgui/resources/{res}" in names, res
    for asset in ("report.js", "report.css"):  # the HTML report's script and style
        assert f"detokgui/figures/report_assets/{asset}" in names, asset
    size = next(i.file_size for i in zipfile.ZipFile(wheel).infolist()
                if i.filename == "detokgui/resources/demo_model/model.safetensors")
    assert size == (ROOT / "resources" / "demo_model" / "model.safetensors").stat().st_size
    assert not any(n.startswith(("tests/", "docs/", "benchmarks/")) for n in names)
    assert f"Version: {version()}" in info["METADATA"]
    assert "detokgui = detokgui.app:main" in info["entry_points.txt"]


def test_the_venv_imports_the_wheel_not_the_checkout(venv):
    python, _, env, work = venv
    code = ("import json, sys, importlib.metadata as md, detokgui; "
            "print(json.dumps({'file': detokgui.__file__, 'path': sys.path, "
            "'version': detokgui.__version__, "
            "'dist': md.version('detokgui'), 'prefix': sys.prefix}))")
    r = subprocess.run([str(python), "-c", code], cwd=work, env=env, capture_output=True,
                       text=True, check=False, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    info = json.loads(r.stdout.strip().splitlines()[-1])
    prefix = Path(info["prefix"]).resolve()
    assert prefix == (python.parent.parent).resolve()
    assert Path(info["file"]).resolve().is_relative_to(prefix), info["file"]
    assert not Path(info["file"]).resolve().is_relative_to(ROOT)
    # Nothing of the checkout comes before the venv's own site-packages on sys.path (an
    # editable install may append its folder after it, which the import above then skips).
    site = next(i for i, p in enumerate(info["path"])
                if p and Path(p).resolve().is_relative_to(prefix) and "site-packages" in p)
    ahead = [p for p in info["path"][:site] if Path(p or work).resolve().is_relative_to(ROOT)]
    assert ahead == [], f"the checkout is on sys.path: {ahead}"
    assert info["version"] == info["dist"] == version()


def test_the_tutorials_first_lines_run_from_the_wheel(venv):
    python, _, env, work = venv
    code = ("import detokgui as dg\n"
            "layer = dg.load('demo')\n"
            "df = dg.topk(layer, ' Korea', k=5)\n"
            "fig = df.dg.plot()\n"
            "assert type(fig).__name__ == 'Figure' and fig.axes, fig\n"
            "print(dg.__file__)\n"
            "print(df.to_json(orient='split'))\n")
    r = subprocess.run([str(python), "-c", code], cwd=work, env={**env, "MPLBACKEND": "Agg"},
                       capture_output=True, text=True, check=False, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    where, table = r.stdout.strip().splitlines()[-2:]
    assert Path(where).resolve().is_relative_to(python.parent.parent.resolve())
    got = json.loads(table)
    assert got["columns"][:7] == ["query_id", "query_token", "head", "rank", "key_id",
                                  "key_token", "score"]
    # the same table as the checkout's API computes (the wheel carries the same model)
    import detokgui as dg

    want = dg.topk(dg.load("demo"), " Korea", k=5, progress=False)
    assert len(got["data"]) == len(want) == 5 * want["head"].nunique()
    for row, (_, w) in zip(got["data"], want.iterrows()):
        rec = dict(zip(got["columns"], row))
        assert (rec["query_token"], rec["head"], rec["rank"], rec["key_id"]) == \
            (w["query_token"], w["head"], w["rank"], w["key_id"])
        assert rec["score"] == pytest.approx(float(w["score"]), rel=1e-5, abs=1e-6)


@pytest.mark.gui  # the window, in a subprocess
def test_the_installed_app_takes_a_screenshot(venv):
    _, bindir, env, work = venv
    exe = bindir / ("detokgui.exe" if os.name == "nt" else "detokgui")
    assert exe.is_file(), "the wheel installs no detokgui command"
    out = work / "out.png"
    r = subprocess.run([str(exe), "--model", "demo", "--screenshot", str(out)], cwd=work,
                       env=env, capture_output=True, text=True, check=False, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000
    from PIL import Image

    with Image.open(out) as im:
        assert im.width >= 400 and im.height >= 300
        assert len(set(im.convert("L").resize((64, 48)).getdata())) > 10  # not a blank window

"""Colab: every notebook's committed .ipynb is its jupytext source converted (cell ids numbered, so the
conversion is deterministic), each notebook and the README link to Colab at the repository pyproject.toml
names, and the install cell — the same in every notebook — installs a wheel built from this repository
(offline, into a temporary target) and picks jax[tpu] on a TPU runtime.

Regenerate the .ipynb files after editing a notebook: `python tests/test_colab.py`.
"""
import os
import pathlib
import re
import subprocess
import sys
import tomllib

import jupytext
import pytest

import gui_jax

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "notebooks").glob("*.py"))
REPOSITORY = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]


def notebook_json(source: pathlib.Path) -> str:
    """The .ipynb text of a jupytext percent-format source."""
    nb = jupytext.read(source)
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i}"
    return jupytext.writes(nb, fmt="ipynb")


def colab_url(source: pathlib.Path) -> str:
    owner_repo = REPOSITORY.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{owner_repo}/blob/main/notebooks/{source.stem}.ipynb"


def install_cell(source: pathlib.Path) -> str:
    return jupytext.read(source).cells[1].source


def test_there_are_notebooks():
    assert [p.stem for p in SOURCES] == ["bring_your_own_checkpoint", "quickstart", "ui_s1_reproduction"]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_ipynb_equals_its_jupytext_source(source):
    ipynb = source.with_suffix(".ipynb")
    assert ipynb.exists(), f"{ipynb.name} is missing: run `python tests/test_colab.py`"
    assert ipynb.read_text(encoding="utf-8") == notebook_json(source), \
        f"{ipynb.name} is out of date with {source.name}: run `python tests/test_colab.py`"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_each_notebook_links_to_itself_on_colab(source):
    first = jupytext.read(source).cells[0]
    assert first.cell_type == "markdown"
    assert f"]({colab_url(source)})" in first.source


def test_the_readme_links_every_notebook_to_colab():
    readme = (ROOT / "README.md").read_text()
    for source in SOURCES:
        assert f"]({colab_url(source)})" in readme, source.name
    links = re.findall(r"https://colab\.research\.google\.com/github/[^)\s]+", readme)
    assert links and all(link == colab_url(ROOT / "notebooks" / (link.rsplit("/", 1)[1][:-6] + ".py"))
                         for link in links)


def test_every_notebook_has_the_same_install_cell():
    cells = {install_cell(s) for s in SOURCES}
    assert len(cells) == 1
    cell = cells.pop()
    assert "git clone" not in cell and "github.com/gui-jax" not in cell  # no repository address baked in


def cell_namespace(monkeypatch, **env):
    """The install cell's functions (gui_jax is installed here, so the cell installs nothing)."""
    for k in ("COLAB_TPU_ADDR", "TPU_NAME", "TPU_ACCELERATOR_TYPE", "GUI_JAX_SOURCE"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    ns = {}
    exec(compile(install_cell(SOURCES[0]), "install_cell", "exec"), ns)
    return ns


def test_the_install_cell_takes_a_git_url_or_a_wheel(monkeypatch, tmp_path):
    ns = cell_namespace(monkeypatch)
    req = ns["gui_jax_requirement"]
    assert req("https://github.com/me/gui_jax.git", False) == "gui_jax @ git+https://github.com/me/gui_jax.git"
    assert req("git+https://github.com/me/gui_jax.git@v1", True) == \
        "gui_jax[tpu-aot] @ git+https://github.com/me/gui_jax.git@v1"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RuntimeError, match="upload a wheel built from the repository"):
        req("", False)
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "gui_jax-0.1.0-py3-none-any.whl").write_bytes(b"")
    assert req("", False) == f"gui_jax @ {(tmp_path / 'dist' / 'gui_jax-0.1.0-py3-none-any.whl').as_uri()}"


@pytest.mark.parametrize("var", gui_jax.TPU_ENV_VARS)
def test_the_install_cell_sees_a_tpu_as_gui_jax_does(monkeypatch, var):
    assert not cell_namespace(monkeypatch)["on_tpu"]() and not gui_jax.tpu_present({})
    assert cell_namespace(monkeypatch, **{var: "1"})["on_tpu"]() and gui_jax.tpu_present({var: "1"})


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "-w", str(out), "--no-deps", "--no-build-isolation",
                    "-q"], cwd=ROOT, check=True, capture_output=True, timeout=300)
    (whl,) = out.glob("gui_jax-*.whl")
    return whl


@pytest.mark.parametrize("tpu", [False, True], ids=["cpu", "tpu"])
def test_the_install_cell_installs_a_wheel_of_this_repository(wheel, tmp_path, tpu):
    """The cell runs as on a fresh runtime (python -S: no site-packages, so no gui_jax); pip installs offline
    (--no-index, --no-deps: the extra's jax[tpu] is named, not fetched) into a temporary target."""
    target = tmp_path / "site"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TPU_", "COLAB_", "PYTHON", "PIP_"))}
    env.update(GUI_JAX_SOURCE=str(wheel), PIP_TARGET=str(target), PIP_NO_DEPS="1", PIP_NO_INDEX="1",
               PYTHONPATH=str(target), **({"COLAB_TPU_ADDR": "10.0.0.2:8470"} if tpu else {}))
    code = install_cell(SOURCES[0]) + "\nprint('imported', gui_jax.__file__)\n"
    proc = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    extra = "[tpu-aot]" if tpu else ""
    assert f"installing gui_jax{extra} @ {wheel.as_uri()}" in proc.stdout
    assert f"imported {target / 'gui_jax' / '__init__.py'}" in proc.stdout
    assert (target / "share" / "gui_jax" / "configs" / "quickstart.py").is_file()  # the recipes come along


if __name__ == "__main__":
    for src in SOURCES:
        src.with_suffix(".ipynb").write_text(notebook_json(src), encoding="utf-8")
        print("wrote", src.with_suffix(".ipynb").relative_to(ROOT))

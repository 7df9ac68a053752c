"""Every notebook under notebooks/ (jupytext sources) runs top to bottom at small size and shows what it
promises (a table, a plot or an image)."""
import os
import pathlib

import jupytext
import nbclient
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))
PROMISES = {  # notebook → (text that must appear in an output, number of images at least)
    "quickstart": ("| stage |", 3),
    "ui_s1_reproduction": ("| offline_rl |", 1),
    "bring_your_own_checkpoint": ("model.safetensors", 1),
}


def test_every_notebook_has_a_promise():
    assert sorted(p.stem for p in NOTEBOOKS) == sorted(PROMISES)


def _outputs(nb):
    texts, images = [], 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                texts.append(out["text"])
            data = out.get("data", {})
            texts += [data[k] for k in ("text/plain", "text/markdown") if k in data]
            images += "image/png" in data
    return "\n".join(texts), images


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(path, tmp_path, monkeypatch):
    monkeypatch.setenv("GUI_JAX_SMALL", "1")
    monkeypatch.setenv("GUI_JAX_CHECKPOINT", "")
    nb = jupytext.read(path)
    assert "pip" in nb.cells[1].source and "git" in nb.cells[1].source  # Colab installs from the repository
    nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    text, images = _outputs(nb)
    needle, min_images = PROMISES[path.stem]
    assert needle in text, f"{path.name}: no output contains {needle!r}"
    assert images >= min_images, f"{path.name}: {images} images, expected ≥ {min_images}"

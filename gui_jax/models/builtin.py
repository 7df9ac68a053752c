"""Model directories shipped inside the package, loaded by name: `model.checkpoint = "builtin:tiny-base"`.

Each is a Hugging Face Qwen2.5-VL directory under gui_jax/models/assets/builtin/<folder> with a model card
(README.md) and `checksums.json` (sha256 of every other file), written by `write_checksums` when the weights
are shipped. Resolving a name checks the directory against its checksums, so a missing or damaged install
fails with one line that says which file, before any model is built.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
from typing import Optional

PREFIX = "builtin:"
BUILTIN_ROOT = os.path.join(os.path.dirname(__file__), "assets", "builtin")
# name -> (folder under BUILTIN_ROOT, the command that rebuilds it)
BUILTIN_MODELS: dict[str, tuple[str, str]] = {
    "tiny-base": ("tiny_base", "python -m gui_jax.main --config configs/pretrain_tiny.py --workdir runs/pretrain_tiny"),
}
CHECKSUMS = "checksums.json"


def is_builtin(spec: str) -> bool:
    return isinstance(spec, str) and spec.startswith(PREFIX)


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_checksums(directory: str) -> dict[str, str]:
    """Writes <directory>/checksums.json: file name -> sha256 for every file but itself; returns the map."""
    sums = {n: _sha256(os.path.join(directory, n)) for n in sorted(os.listdir(directory))
            if n != CHECKSUMS and os.path.isfile(os.path.join(directory, n))}
    with open(os.path.join(directory, CHECKSUMS), "w") as f:
        json.dump(sums, f, indent=1, sort_keys=True)
    return sums


def directory_problem(directory: str) -> Optional[str]:
    """None if `directory` holds every file its checksums.json lists, unchanged; else what is wrong."""
    listing = os.path.join(directory, CHECKSUMS)
    if not os.path.isdir(directory):
        return f"{directory} is missing"
    if not os.path.isfile(listing):
        return f"{listing} is missing"
    try:
        with open(listing) as f:
            sums = json.load(f)
    except (OSError, ValueError) as e:
        return f"{listing} is unreadable ({e})"
    if "config.json" not in sums or not any(n.endswith(".safetensors") for n in sums):
        return f"{listing} lists no config.json or no *.safetensors"
    for name, digest in sums.items():
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            return f"{path} is missing"
        if _sha256(path) != digest:
            return f"{path} is damaged (sha256 differs from {CHECKSUMS})"
    return None


def resolve_checkpoint(spec: str, root: str = BUILTIN_ROOT) -> str:
    """`builtin:<name>` -> the shipped directory (checked); any other value is returned as given."""
    if not is_builtin(spec):
        return spec
    name = spec[len(PREFIX):]
    if name not in BUILTIN_MODELS:
        raise ValueError(f"model.checkpoint {spec!r}: unknown built-in model; known: "
                         + ", ".join(PREFIX + n for n in BUILTIN_MODELS))
    folder, command = BUILTIN_MODELS[name]
    directory = os.path.join(root, folder)
    problem = directory_problem(directory)
    if problem:
        raise ValueError(f"model.checkpoint {spec!r}: {problem}; reinstall gui_jax, or rebuild it with `{command}` "
                         f"and point model.checkpoint at <workdir>/base")
    return directory


@functools.lru_cache(maxsize=None)  # a spec asks once per arm; checking the directory hashes every file
def weights_id(spec: str, root: str = BUILTIN_ROOT) -> Optional[str]:
    """`builtin:<name>` -> 'builtin:<name>@<first 12 hex of its weights' sha256>' (from checksums.json, so a
    changed base changes the id); None for any other value. Experiments key their stored results on it."""
    if not is_builtin(spec):
        return None
    directory = resolve_checkpoint(spec, root)
    with open(os.path.join(directory, CHECKSUMS)) as f:
        sums = json.load(f)
    weights = sorted(v for n, v in sums.items() if n.endswith(".safetensors"))
    digest = hashlib.sha256("".join(weights).encode()).hexdigest() if len(weights) > 1 else weights[0]
    return f"{spec}@{digest[:12]}"

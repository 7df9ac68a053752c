"""What an exported model directory says about its training (gui_jax_export.json, written by jobs/export.py): where
the weights came from, and the prompt format they were trained with, which a job starting from them must use."""
from __future__ import annotations

import json
import os

RECORD = "gui_jax_export.json"
# prompt fields that change what the model writes (a base pretrained with spaced answers writes " Sep 8")
PROMPT_FORMAT_FIELDS = ("answer_spaced",)


def prompt_format(prompt) -> dict:
    """The PROMPT_FORMAT_FIELDS a prompt block (ConfigDict, dict or PromptConfig) sets."""
    get = prompt.get if hasattr(prompt, "get") else lambda k, d=None: getattr(prompt, k, d)
    return {k: get(k) for k in PROMPT_FORMAT_FIELDS if get(k) is not None}


def exported_prompt_format(directory: str) -> dict:
    """The prompt format recorded in an export `directory` (a Hugging Face directory); {} when it records none
    (exports before the record, or directories gui_jax did not write)."""
    path = os.path.join(directory, RECORD)
    if not os.path.isfile(path):
        return {}
    with open(path) as f:
        return dict(json.load(f).get("prompt") or {})


def trained_prompt_format(checkpoint_dir: str) -> dict:
    """The prompt format of the run whose stage checkpoints are `checkpoint_dir`, from its workdir's config.json one
    or two folders up (<workdir>/checkpoints, <workdir>/<stage>/checkpoints: {job: {"saved_at", "config": {flat
    path: value}}}, jobs/common.write_snapshot), the latest job's that has a prompt; {} when none is found."""
    here = os.path.abspath(checkpoint_dir)
    for _ in (1, 2):
        here = os.path.dirname(here)
        path = os.path.join(here, "config.json")
        if os.path.isfile(path):
            with open(path) as f:
                jobs = [v for v in json.load(f).values() if isinstance(v, dict) and isinstance(v.get("config"), dict)]
            for job in sorted(jobs, key=lambda v: str(v.get("saved_at", "")), reverse=True):
                found = prompt_format({k[len("prompt."):]: v for k, v in job["config"].items()
                                       if k.startswith("prompt.")})
                if found:
                    return found
            return {}
    return {}

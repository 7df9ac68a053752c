"""Job: write a trained agent as a Hugging Face Qwen2.5-VL directory.

    python -m gui_jax.main --config configs/export.py \
        --config.export.checkpoint_dir=runs/quickstart/rl/checkpoints --config.export.out_dir=runs/export/hf

The directory holds config.json + safetensors weights (transformers' Qwen2_5_VLForConditionalGeneration
loads them), the tokenizer (tokenizer.json for Qwen2.5 vocabularies; tokenizer.model for the tiny
SentencePiece vocabulary), preprocessor_config.json (the agent's image processor) and gui_jax_export.json
(where the weights came from). `evaluate` with `--config.model.checkpoint=<out_dir>` scores the exported
directory; it gives the same numbers as the checkpoint it came from.
"""
from __future__ import annotations

import json
import os
import shutil

from gui_jax.jobs.common import load_stage_params, set_agent_params
from gui_jax.models.builtin import resolve_checkpoint
from gui_jax.models.export_record import RECORD, exported_prompt_format, trained_prompt_format
from gui_jax.rl.agent import Agent
from gui_jax.config_check import RunError


def write_tokenizer(tokenizer, out_dir: str) -> str:
    """Saves the agent's tokenizer next to the weights; returns the file name written."""
    from gui_jax.models.tokenizer import HFTokenizer, SentencePieceTokenizer, TiktokenTokenizer
    if isinstance(tokenizer, SentencePieceTokenizer):
        with open(os.path.join(out_dir, "tokenizer.model"), "wb") as f:
            f.write(tokenizer.model_proto)
        return "tokenizer.model"
    if isinstance(tokenizer, HFTokenizer):
        tokenizer._tok.save(os.path.join(out_dir, "tokenizer.json"))
        return "tokenizer.json"
    if isinstance(tokenizer, TiktokenTokenizer):
        from gui_jax.models.tokenizer import export_qwen25_tokenizer_json
        export_qwen25_tokenizer_json(os.path.join(out_dir, "tokenizer.json"))
        return "tokenizer.json"
    raise TypeError(f"cannot export a tokenizer of type {type(tokenizer).__name__}")


def write_processor_config(processor, out_dir: str) -> None:
    d = {"image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2_5_VLProcessor",
         "min_pixels": processor.min_pixels, "max_pixels": processor.max_pixels,
         "size": {"shortest_edge": processor.min_pixels, "longest_edge": processor.max_pixels},
         "patch_size": processor.patch_size, "temporal_patch_size": processor.temporal_patch_size,
         "merge_size": processor.merge_size, "image_mean": list(processor.image_mean),
         "image_std": list(processor.image_std), "do_resize": True, "do_rescale": True,
         "rescale_factor": 1 / 255, "do_normalize": True, "do_convert_rgb": True}
    with open(os.path.join(out_dir, "preprocessor_config.json"), "w") as f:
        json.dump(d, f, indent=2)


def export_agent(agent, out_dir: str, *, dtype: str | None = None, source: dict | None = None,
                 prompt: dict | None = None) -> list[str]:
    """Weights + config + tokenizer + processor config of `agent` into `out_dir`; returns the files written.
    `prompt`: the prompt format the weights were trained with (prompt_format), recorded in gui_jax_export.json."""
    from gui_jax.models.qwen2_5_vl.hf_io import save_hf_checkpoint
    if os.path.isdir(out_dir) and os.listdir(out_dir) and not os.path.exists(
            os.path.join(out_dir, RECORD)):
        raise FileExistsError(f"{out_dir} exists and is not an earlier export; choose an empty export.out_dir")
    os.makedirs(out_dir, exist_ok=True)
    files = list(save_hf_checkpoint(agent.model(), out_dir, dtype=dtype or None))
    files.append(write_tokenizer(agent.tokenizer, out_dir))
    write_processor_config(agent.processor, out_dir)
    with open(os.path.join(out_dir, RECORD), "w") as f:
        json.dump({"source": source or {}, "dtype": dtype or "params", **({"prompt": prompt} if prompt else {})},
                  f, indent=1)
    return files + ["config.json", "preprocessor_config.json", RECORD]


def run(config, workdir: str) -> None:
    ecfg = config.export
    agent = Agent(config, seed=config.seed)
    source = {"model.checkpoint": config.model.get("checkpoint", ""), "model.preset": config.model.preset}
    if ecfg.checkpoint_dir:
        params, step = load_stage_params(ecfg.checkpoint_dir, field="export.checkpoint_dir")
        set_agent_params(agent, params, ecfg.checkpoint_dir)
        source.update({"checkpoint_dir": os.path.abspath(ecfg.checkpoint_dir), "step": int(step)})
        prompt = trained_prompt_format(ecfg.checkpoint_dir)
    elif not config.model.get("checkpoint"):
        raise RunError("export needs export.checkpoint_dir (a training stage's checkpoints folder) or "
                         "model.checkpoint (a Hugging Face directory to re-export)")
    else:
        prompt = exported_prompt_format(resolve_checkpoint(config.model.checkpoint))
    out_dir = ecfg.out_dir or os.path.join(workdir, "hf")
    if ecfg.overwrite and os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    files = export_agent(agent, out_dir, dtype=ecfg.dtype or None, source=source, prompt=prompt)
    print(f"exported {agent.num_params() / 1e6:.2f}M params to {out_dir}: {', '.join(sorted(set(files)))}")

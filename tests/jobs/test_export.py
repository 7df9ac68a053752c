"""Export: a trained tiny agent → HF directory → transformers logits equal ours; evaluate(dir) = evaluate(ckpt)."""
import importlib.util
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from transformers import Qwen2_5_VLForConditionalGeneration

from gui_jax.jobs import evaluate as evaluate_job
from gui_jax.jobs import export as export_job
from gui_jax.rl.agent import Agent
from gui_jax.train.checkpoint import Checkpointer
from gui_jax.train.state import init_train_state, make_optimizer

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _config(name):
    spec = importlib.util.spec_from_file_location(f"cfg_{name}", ROOT / "configs" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    c = mod.get_config()
    c.data.num_test_episodes = 4
    c.data.num_train_episodes = 4
    c.eval.max_steps = 3
    return c


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A stage checkpoint whose params differ from any fresh init (so a silent re-init would show)."""
    tmp = tmp_path_factory.mktemp("export")
    cfg = _config("export")
    agent = Agent(cfg, seed=0)
    leaves, tree = jax.tree.flatten(agent.params)
    keys = jax.random.split(jax.random.key(7), len(leaves))
    noisy = [x + 0.05 * jax.random.normal(k, x.shape, x.dtype) for x, k in zip(leaves, keys)]
    state = init_train_state(jax.tree.unflatten(tree, noisy), make_optimizer(1e-3, warmup_steps=1), seed=0)
    ck = Checkpointer(str(tmp / "stage" / "checkpoints"))
    ck.save(state, {}, force=True)
    ck.close()
    cfg.export.checkpoint_dir = str(tmp / "stage" / "checkpoints")
    cfg.export.out_dir = str(tmp / "hf")
    export_job.run(cfg, str(tmp / "export_run"))
    return tmp, cfg, jax.tree.unflatten(tree, noisy)


def test_export_writes_a_transformers_loadable_directory_with_equal_logits(trained):
    tmp, cfg, params = trained
    out = tmp / "hf"
    assert {"config.json", "model.safetensors", "tokenizer.model", "preprocessor_config.json",
            "gui_jax_export.json"} <= {p.name for p in out.iterdir()}
    meta = json.loads((out / "gui_jax_export.json").read_text())
    assert meta["source"]["step"] == 0 and meta["source"]["checkpoint_dir"].endswith("checkpoints")
    ours = Agent(cfg, seed=0)
    ours.set_params(params)
    mc = ours.model_config
    rng = np.random.default_rng(0)
    grid = np.array([[1, 4, 6]])
    n_img = int(grid.prod() // 4)
    ids = np.concatenate([rng.integers(0, 4000, 9), [mc.vision_start_token_id], [mc.image_token_id] * n_img,
                          [mc.vision_end_token_id], rng.integers(0, 4000, 7)])[None]
    pixels = rng.standard_normal((int(grid.prod()), ours.processor.patch_dim)).astype(np.float32)
    mine = np.asarray(ours.model()(jnp.asarray(ids), pixel_values=jnp.asarray(pixels),
                                   image_grid_thw=jnp.asarray(grid)).logits, np.float32)
    hf = Qwen2_5_VLForConditionalGeneration.from_pretrained(str(out), torch_dtype=torch.float32).eval()
    t_ids = torch.from_numpy(ids)
    with torch.no_grad():
        theirs = hf(input_ids=t_ids, attention_mask=torch.ones_like(t_ids), pixel_values=torch.from_numpy(pixels),
                    image_grid_thw=torch.from_numpy(grid), mm_token_type_ids=(t_ids == mc.image_token_id).long()
                    ).logits.numpy()
    # float32 parity relative to the logits' scale: two op orders drift apart with the activations' size (base
    # G6's reach |37|: 2e-4 apart, 5.5e-6 of it; R1a's |55|: 7.1e-4, 1.3e-5); a wrong weight moves logits by O(1)
    assert np.max(np.abs(mine - theirs)) <= 5e-5 * max(1.0, float(np.max(np.abs(theirs))))


def test_evaluate_on_export_equals_evaluate_on_checkpoint(trained):
    tmp, cfg, _ = trained
    ev = _config("evaluate")
    ev.eval.checkpoint_dir = cfg.export.checkpoint_dir
    evaluate_job.run(ev, str(tmp / "eval_ckpt"))
    ev2 = _config("evaluate")
    ev2.model.checkpoint = str(tmp / "hf")
    evaluate_job.run(ev2, str(tmp / "eval_hf"))
    a = json.loads((tmp / "eval_ckpt" / "eval.json").read_text())
    b = json.loads((tmp / "eval_hf" / "eval.json").read_text())
    # the same numbers, per task too; only timings and the description of where the weights came from differ
    skip = {k for k in a if "seconds" in k or k in ("timings", "profile")} | {"weights"}
    assert set(a) == set(b) and len(a) > 5
    for k in set(a) - skip:
        same = a[k] == b[k] or (isinstance(a[k], float) and a[k] != a[k] and b[k] != b[k])
        assert same, (k, a[k], b[k])
    assert b["weights"]["kind"] == "huggingface" and a["weights"]["kind"] != "huggingface"
    assert len(a) > 5


def test_exported_agent_samples_exactly_what_the_checkpoint_agent_samples(trained):
    """Metrics of an untrained-scale model are mostly zeros; the sampled tokens and logprobs are not."""
    tmp, cfg, params = trained
    from gui_jax.jobs.common import prepare
    from gui_jax.rl.prompting import PromptConfig, build_messages
    _, _, _, test_eps = prepare(_config("evaluate"), str(tmp / "eval_ckpt"))
    pcfg = PromptConfig(**cfg.prompt.to_dict())
    prompts = [build_messages(ep.goal, [], ep.observations[0], pcfg) for ep in test_eps]
    a = Agent(cfg, seed=0)
    a.set_params(params)
    cfg_hf = _config("evaluate")
    cfg_hf.model.checkpoint = str(tmp / "hf")
    # the same sampler programs on both sides (evaluate pads every call to one batch size; another padding
    # changes XLA's reductions in the last float bits of the logprobs)
    cfg_hf.model.sample_batch_buckets = cfg.model.sample_batch_buckets
    b = Agent(cfg_hf, seed=0)
    ga = a.policy.generate(prompts, temperature=1.0, seed=3)
    gb = b.policy.generate(prompts, temperature=1.0, seed=3)
    assert [g.text for g in ga] == [g.text for g in gb]
    assert any(g.text for g in ga)
    for x, y in zip(ga, gb):
        np.testing.assert_allclose(x.logprobs, y.logprobs, atol=1e-6)

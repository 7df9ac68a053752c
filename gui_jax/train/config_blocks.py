"""Default config blocks shared by the recipes in configs/ (each recipe overrides what it needs).

Each block is declared once, field by field (name, default, check, one-line meaning) as a `Block` of
`gui_jax/core/config_schema.py`: `model_block()` & co. build their ConfigDicts from the declarations,
`gui_jax/config_check.py` validates with the same checks and `--help` prints the same docs.
Only ml_collections, os and the import-light name modules load here (no jax).
"""
from __future__ import annotations

import os

import ml_collections

from gui_jax.core.config_schema import Block
from gui_jax.core.config_schema import Field as F
from gui_jax.core.config_schema import boolean, checkpoint_dir_problem, choice, integer, number, text, unknown
from gui_jax.core.dialects import DIALECTS
from gui_jax.models.builtin import is_builtin, resolve_checkpoint
from gui_jax.rl.names import (AGGREGATIONS, BATCH_BUCKETINGS, MICRO_ROWS, HISTORY_MODES, KL_KINDS, OBSERVATION_MODES,
                              PATCH_STRATEGIES, TARGETS, TOKENIZERS)
from gui_jax.rewards.names import OFFLINE_REWARDS, REWARD_PRESETS, RM_SCORERS, TEXT_MATCH_RULES

PRESETS = ("tiny", "3b", "7b", "32b", "72b")             # models/qwen2_5_vl/config.py _PRESETS (test_cli_errors)
SCHEDULES = ("constant", "cosine")                        # train/state.py make_optimizer
DTYPES = ("float32", "bfloat16", "float16")
EPISODE_LEVELS = ("paper", "code")                        # rl/advantages.py ui_s1_semi_online
DYNAMIC_SAMPLING_SHORT = ("log", "raise")                # train/semi_online.py (imports it from here)
TEMPLATE_SAMPLINGS = ("uniform", "learnability")          # train/semi_online.py task_selector
MESH_RULES = ("default", "fsdp")                          # models/sharding.py RULE_TABLES (tests/test_config_schema.py)
DISTRIBUTED = ("auto", "on", "off")


def build(block: Block, **overrides) -> ml_collections.ConfigDict:
    """The block's ConfigDict: declared defaults in declaration order; a `nullable` field is a typed
    FieldReference, so None can be assigned to it (and back)."""
    values = block.defaults(**overrides)
    for name in values:
        f = block[name]
        if f.nullable is not None:
            values[name] = ml_collections.FieldReference(values[name], field_type=f.nullable)
    return ml_collections.ConfigDict(values)


# --------------------------------------------------------------------------------------- field checks

def _preset(v):
    if isinstance(v, str) and v.lower().removeprefix("qwen2.5-vl-") in PRESETS:
        return None
    return unknown("preset", v, PRESETS)


def _tokenizer(v):
    if isinstance(v, str) and (v in TOKENIZERS or os.path.isfile(v)):
        return None
    return unknown("tokenizer", v, TOKENIZERS) + " or a tokenizer.json / SentencePiece .model path"


def hf_dir(v):
    """'' or a Hugging Face model folder (config.json present) or a shipped 'builtin:<name>' one."""
    if v == "":
        return None
    if not isinstance(v, str):
        return "expected a directory path or ''"
    if is_builtin(v):
        try:
            resolve_checkpoint(v)
        except ValueError as e:
            return str(e).split(": ", 1)[1]
        return None
    if not os.path.isdir(v):
        return "no such directory; expected a Hugging Face model folder (config.json + *.safetensors) or ''"
    if not os.path.isfile(os.path.join(v, "config.json")):
        return "not a Hugging Face model folder (no config.json)"
    return None


def checkpoint_folder(v):
    """'' or a training stage's checkpoints folder holding a step (config_check.checkpoint_dir_problem)."""
    if v == "":
        return None
    if not isinstance(v, str):
        return "expected a checkpoints folder path or ''"
    return checkpoint_dir_problem(v)


# --------------------------------------------------------------------------------------- declarations

MODEL = Block("model", [
    F("preset", "tiny", f"model size when no checkpoint is given: {' | '.join(PRESETS)}", _preset),
    F("checkpoint", "", "Hugging Face Qwen2.5-VL folder to start from ('' = preset, random init; "
      "'builtin:<name>' = a shipped one)", hf_dir),
    F("num_hidden_layers", 0, "> 0 overrides the preset's text depth", integer(0)),
    F("intermediate_size", 0, "> 0 overrides the preset's text MLP width", integer(0)),
    F("hidden_size", 0, "> 0 overrides the preset's text residual width (with num_attention_heads: the head width "
      "hidden_size / heads must stay the preset's, 32 for tiny; the vision output follows it)", integer(0)),
    F("num_attention_heads", 0, "> 0 overrides the preset's text query heads", integer(0)),
    F("num_key_value_heads", 0, "> 0 overrides the preset's text key/value heads (a divisor of the query heads; "
      "the tiny preset's 4 undoes its grouped-query sharing of 2)", integer(0)),
    F("vision_depth", 0, "> 0 overrides the preset's vision depth", integer(0)),
    F("rope_theta", 0.0, "> 0 overrides the preset's text RoPE base (tiny 1e4; the slow rotary pairs are the ones "
      "a content match across a long screen can use)", number(0.0)),
    F("tokenizer", "auto", f"tokenizer: {' | '.join(TOKENIZERS)} | tokenizer.json or .model path", _tokenizer),
    F("min_pixels", 56 * 56, "image processor: fewest pixels per screenshot", integer(1)),
    F("max_pixels", 28 * 28 * 1280, "image processor: most pixels per screenshot", integer(1)),
    F("max_new_tokens", 48, "longest sampled response (tokens)", integer(1)),
    F("max_prompt_tokens", 8192, "longest prompt the sampler accepts (tokens; UI-S1: 12288)", integer(1)),
    F("sample_batch_size", 32, "prompts per sampler call", integer(1)),
    F("sample_batch_buckets", "powers_of_4", "batch sizes a sampler call is padded up to: powers_of_4 (1, 4, 16, "
      "... below sample_batch_size, then it) | powers_of_2 (1, 2, 4, 8, ...: least padding, most compiled "
      "programs) | full (always sample_batch_size: one compiled program per prompt length, not one per batch "
      "bucket and length)", choice(BATCH_BUCKETINGS)),
    F("prefill_chunk", 0, "> 0: prompts run through the KV cache in chunks of this many tokens", integer(0)),
    F("kv_cache_dtype", "", "sampler KV cache dtype ('' = compute dtype; 'bfloat16' halves it)",
      choice(("",) + DTYPES)),
    F("vision_per_row", False, "images batched per row (a sharded vision tower stays split with its rows)",
      boolean()),
])

PROMPT = Block("prompt", [
    F("dialect", "ui_s1", f"action dialect of responses: {' | '.join(DIALECTS)}", choice(DIALECTS)),
    F("observation", "screenshot", "what the prompt shows of the screen: screenshot | ui_text (one line per "
      "element) | xml (MobileRL's simplified UI XML, off-screen elements dropped) | both (screenshot + ui_text)",
      choice(OBSERVATION_MODES)),
    F("target", "coordinate", "how point actions are given: coordinate | element (index) | text (label words)",
      choice(TARGETS)),
    F("history_turns", 2, "K: screens in the prompt, the current one included", integer(0)),
    F("history_mode", "full", "earlier steps: full (responses as written) | compact (one line each)",
      choice(HISTORY_MODES)),
    F("max_history_lines", 10, "earlier steps kept (0 = all)", integer(0)),
    F("image_max_pixels", 0, "current screenshot resized under this area (0 = as rendered)", integer(0)),
    F("history_image_max_pixels", 0, "history screenshots resized under this area (0 = like current)", integer(0)),
    F("image_min_pixels", 56 * 56, "fewest pixels of a resized screenshot", integer(1)),
    F("ui_text_bounds", False, "UI text lists element bounds", boolean()),
    F("ui_text_class", True, "UI text lists element classes", boolean()),
    F("word_tokens", False, "goal and UI labels written so each word starts after a space", boolean()),
    F("answer_spaced", False, "an answer's text written after a leading space, so a value copied from the UI text "
      "keeps its token form there (a base pretrained so needs it)", boolean()),
    F("ui_text_skip_unlabeled", False, "UI text leaves out elements with no text or description", boolean()),
    F("ui_text_index_last", False, "UI text writes each element index after its label", boolean()),
    F("max_ui_lines", 40, "most UI elements listed", integer(1)),
    F("set_of_mark", False, "screenshots carry each listed UI element's box and index (Set-of-Mark, UI-Genie)",
      boolean()),
    F("system_prompt", True, "include the system prompt", boolean()),
    F("goal_last", False, "goal after the observation instead of before", boolean()),
])

# optimizer / checkpoint / packing fields that sft and rl share (their docs differ where the unit does)
_PACKING = [
    F("packing", False, "several trained steps per row (segment ids); needs row_length", boolean()),
    F("row_length", 0, "tokens per packed row (rounded up to a length bucket)", integer(0)),
    F("micro_rows", "fixed", "packed rows per micro-batch: fixed (micro_batch_size, the last padded: fewest "
      "compiled shapes) | even (near-equal micro-batches of at most micro_batch_size rows, rows longer than "
      "row_length apart: fewer padded tokens, a few more shapes)", choice(MICRO_ROWS)),
]

SFT = Block("sft", [
    F("seed", 0, "data order and dropout seed", integer()),
    F("num_steps", 200, "optimizer steps", integer(0)),
    F("batch_size", 16, "expert steps per optimizer step", integer(1)),
    F("micro_batch_size", 16, "rows per forward/backward (gradient accumulation)", integer(1)),
    F("learning_rate", 1e-3, "peak learning rate", number(0.0, lo_open=True)),
    F("warmup_steps", 10, "linear warm-up steps", integer(0)),
    F("weight_decay", 0.0, "AdamW weight decay", number(0.0)),
    F("max_grad_norm", 1.0, "global gradient-norm clip", number(0.0, lo_open=True)),
    F("schedule", "constant", f"learning-rate schedule after warm-up: {' | '.join(SCHEDULES)}", choice(SCHEDULES)),
    F("checkpoint_every", 50, "steps between checkpoints (0 = only the last)", integer(0)),
    F("checkpoints_kept", 3, "checkpoints kept on disk, the newest (0 = all: curves across checkpoints)", integer(0)),
    *_PACKING,
    F("grounding_fraction", 0.0, "share of SFT items that are grounding items (Tap on a label)",
      number(0.0, 1.0, hi_open=True)),
    F("grounding_instruction", "Tap on '{label}'.", "grounding item instruction, with {label}", text()),
    F("prompt_loss_weight", 0.0, "w · next-token loss on prompt tokens (0: response tokens only)", number(0.0)),
    F("prompt_loss_chunk", 1024, "prompt positions per LM-head call in that loss (0 = all at once)", integer(0)),
    F("group_by_length", False, "batches of similar prompt length (less padding; LengthGroupedSource)", boolean()),
    F("copy_warmup_steps", 0, "synthetic copy / recall steps before SFT from scratch (0 = none)", integer(0)),
    F("copy_warmup_batch", 32, "rows per copy-warm-up step", integer(1)),
    F("copy_warmup_length", 96, "tokens per copy-warm-up row", integer(1)),
    F("stop_after_steps", None, "stop (checkpointed) after this many steps this run; None = run on",
      integer(1, optional=True), nullable=int),
])

RL = Block("rl", [
    F("seed", 0, "rollout and data-order seed", integer()),
    F("iterations", 20, "RL iterations (a batch of episodes each)", integer(0)),
    F("episodes_per_iteration", 8, "expert episodes rolled out per iteration", integer(1)),
    F("num_rollouts", 4, "N: rollouts per episode (GRPO group size)", integer(1)),
    F("patch_strategy", "thought_free", f"Patch Module: how a mismatched step continues: "
      f"{' | '.join(PATCH_STRATEGIES)}", choice(PATCH_STRATEGIES)),
    F("patch_threshold", 1, "ε: patches allowed per rollout (-1 = unlimited)", integer(-1)),
    F("temperature", 1.0, "sampling temperature", number(0.0)),
    F("gamma", 0.5, "γ: discount of future step rewards", number(0.0, 1.0)),
    F("omega", 1.0, "ω: weight of the step-level advantage in A = A^E + ω·A^S", number(0.0)),
    F("cut_at_mismatch", True, "returns stop at the first mismatch", boolean()),
    F("reward_preset", "paper", f"step-reward weights: {' | '.join(REWARD_PRESETS)}", choice(REWARD_PRESETS)),
    F("require_thought", None, "responses without a thought get no format reward (None = as the dialect)",
      boolean(optional=True), nullable=bool),
    F("bbox_scale", 1.2, "matcher: expert bbox enlargement about its centre", number(0.0, lo_open=True)),
    F("dist_threshold", 0.04, "matcher: normalised distance to the expert point", number(0.0)),
    F("text_match", "substring", "matcher: text actions (type / answer / open), after lowercase + strip: "
      "substring (UI-S1: either contains the other; a truncated answer matches) | exact (equal)",
      choice(TEXT_MATCH_RULES)),
    F("offline_reward", "rule", "offline-RL baseline's step reward: rule (the check against the expert action, "
      "GUI-Shepherd's oracle) | rm (a reward model's step score: its offline GRPO with PRM reward)",
      choice(OFFLINE_REWARDS)),
    F("rm_checkpoint_dir", "", "offline_reward = rm: the reward_model job's rm/checkpoints", checkpoint_folder),
    F("rm_scorer", "policy_likelihood", f"offline_reward = rm: how that RM scores: {' | '.join(RM_SCORERS)} "
      "(its prompt settings: the reward_model recipe's defaults)", choice(RM_SCORERS)),
    F("episode_level", "paper", "episode-level advantage: paper (Eq. 11) | code (per-step rewards)",
      choice(EPISODE_LEVELS)),
    F("patch_aux_checkpoint", "", "off_policy patches: the auxiliary thought model's Hugging Face folder", text()),
    F("dynamic_sampling", True, "drop groups whose returns barely vary", boolean()),
    F("dynamic_sampling_eta", 0.3, "η: least return spread a group needs", number(0.0, 1.0)),
    F("dynamic_sampling_max_tries", 10, "rollout batches drawn to fill an iteration", integer(1)),
    F("dynamic_sampling_short", "log", "fewer groups than the batch after the tries: log | raise",
      choice(DYNAMIC_SAMPLING_SHORT)),
    F("revisit_uniform", 1.0, "selective rollouts: a task whose last k groups had no return spread (std <= η) "
      "is rolled out again with probability revisit_uniform**k, others drawn in its place (1 = every task)",
      number(0.0, 1.0)),
    F("template_sampling", "uniform", "semi-online RL's task draw: uniform | learnability (templates drawn in "
      "proportion to their rate of informative groups, so tasks SFT already solves every time are rarely rolled "
      "out)", choice(TEMPLATE_SAMPLINGS)),
    F("template_sampling_floor", 0.2, "learnability: the share of the template draw kept uniform",
      number(0.0, 1.0)),
    F("clip_low", 0.2, "PPO clip ε_low", number(0.0, 1.0, hi_open=True)),
    F("clip_high", 0.2, "PPO clip ε_high", number(0.0)),
    F("dual_clip", 3.0, "dual-clip c (> 1) for negative advantages; None = off",
      number(1.0, lo_open=True, optional=True), nullable=float),
    F("kl_coef", 1e-4, "β: KL penalty to the reference policy", number(0.0)),
    F("kl_kind", "low_var_kl", f"KL estimator: {' | '.join(KL_KINDS)}", choice(KL_KINDS)),
    F("aggregation", "token_mean", f"loss aggregation over tokens: {' | '.join(AGGREGATIONS)}",
      choice(AGGREGATIONS)),
    F("merge_duplicates", True, "an update trains identical samples (same prompt and response, same advantage "
      "sign) once, weighted by their count: the same token_mean loss and gradient in fewer tokens (token_mean "
      "only)", boolean()),
    F("drop_cancelled", False, "with one mini-batch (on-policy: ratios 1, no clipping) copies merge across advantage "
      "signs and steps whose advantages cancel (every rollout took the same action) are not trained; the others' "
      "advantages scale by kept / all tokens: the same policy gradient, their KL term left out", boolean()),
    F("learning_rate", 1e-4, "learning rate", number(0.0, lo_open=True)),
    F("warmup_steps", 0, "linear warm-up steps", integer(0)),
    F("weight_decay", 0.0, "AdamW weight decay", number(0.0)),
    F("max_grad_norm", 1.0, "global gradient-norm clip", number(0.0, lo_open=True)),
    F("micro_batch_size", 16, "rows per forward/backward", integer(1)),
    F("num_mini_batches", 1, "optimizer steps per iteration (UI-S1: 4)", integer(1)),
    F("recompute_old_logprobs", False, "π_old from the training forward instead of the sampler", boolean()),
    F("checkpoint_every", 5, "iterations between checkpoints (0 = only the last)", integer(0)),
    F("checkpoints_kept", 3, "checkpoints kept on disk, the newest (0 = all: curves across checkpoints)", integer(0)),
    *_PACKING,
    F("stop_after_steps", None, "stop (checkpointed) after this many iterations this run; None = run on",
      integer(1, optional=True), nullable=int),
])

MESH = Block("mesh", [
    F("data", 1, "data-parallel axis size (-1 = what the device count leaves)", integer(-1)),
    F("fsdp", -1, "FSDP axis size (-1 = what the device count leaves)", integer(-1)),
    F("tensor", 1, "tensor-parallel axis size", integer(-1)),
    F("rules", "default", "logical-axis rule table: default (FSDP + tensor parallel) | fsdp (FSDP only)",
      choice(MESH_RULES)),
    F("param_dtype", "float32", "master weights and optimizer state dtype", choice(DTYPES)),
    F("compute_dtype", "bfloat16", "forward/backward matmul dtype (float32 logits and loss)", choice(DTYPES)),
    F("sampler_data", 0, "sampler data axis (0 = the training mesh's)", integer(0)),
    F("sampler_fsdp", 0, "sampler FSDP axis (0 = the training mesh's)", integer(0)),
    F("sampler_tensor", 0, "sampler tensor axis (0 = the training mesh's)", integer(0)),
    F("sampler_dtype", "bfloat16", "weights dtype the sampler holds (its KV cache uses the compute dtype)",
      choice(DTYPES)),
    F("distributed", "auto", "jax.distributed initialisation: auto (multi-process env detected) | on | off",
      choice(DISTRIBUTED)),
    # checked where a recipe adds them; not part of the default block
    F("reference", "sharded", "where the KL reference params live: sharded | host", choice(("sharded", "host")),
      in_block=False),
    F("remat", False, "rematerialise layers in the backward pass", boolean(), in_block=False),
])

# The reward_model job's data engine (gui_jax/jobs/reward_model.py, docs/algorithms.md §9).
RM_DATA = Block("rm.data", [
    F("seed", 0, "record sampling seed (the held-out side uses seed + 1)", integer()),
    F("clicks_per_step", 2, "rule-verified clicks on random clickable elements per expert step", integer(0)),
    F("sibling_clicks", 0, "clicks on other labelled rows at an expert click (source 'sibling')", integer(0)),
    F("substitution", True, "same-app cross-task substitution negatives", boolean()),
    F("substitutions", 1, "substitutions per episode", integer(0)),
    F("continuation", True, "redundant-step negatives after a finished task", boolean()),
    F("hard_negative_checkpoint", "", "an earlier RM's checkpoints folder: its false positives among "
      "hard_negative_clicks become negatives (source 'hard_negative'; '' = off)", checkpoint_folder),
    F("hard_negative_clicks", 8, "element clicks per expert step the earlier RM scores for hard negatives",
      integer(1)),
    F("potential_labels", False, "label the steps of failed PhoneSim trajectories by continuation rollouts "
      "(source 'potential')", boolean()),
    F("potential_continuations", 5, "k: rollouts per step; a step is positive iff one of them succeeds",
      integer(1)),
    F("potential_slip", 0.3, "chance per step that the rollout policy (the expert) takes a random action",
      number(0.0, 1.0, hi_open=True)),
])

INIT = Block("init", [
    F("checkpoint_dir", "", "a training stage's checkpoints folder to start from, e.g. runs/quickstart/sft/checkpoints "
      "('' = train the recipe's own SFT first)", checkpoint_folder),
])

BLOCKS = {b.name: b for b in (MODEL, PROMPT, SFT, RL, MESH, RM_DATA, INIT)}


# --------------------------------------------------------------------------------------- builders

def model_block(preset: str = "tiny") -> ml_collections.ConfigDict:
    return build(MODEL, preset=preset)


def prompt_block() -> ml_collections.ConfigDict:
    return build(PROMPT)


def sft_block() -> ml_collections.ConfigDict:
    return build(SFT)


def rl_block() -> ml_collections.ConfigDict:
    """UI-S1 semi-online RL (docs/algorithms.md §3-§5) with paper defaults where the tiny run allows."""
    return build(RL)


def mesh_block() -> ml_collections.ConfigDict:
    """Device mesh and precision of training and sampling (docs: gui_jax/models/sharding.py).

    The training mesh is (data, fsdp, tensor) over all devices of all processes (-1 = whatever the
    device count leaves). Weights map to mesh axes through a logical rule table ('default': FSDP on
    the model dimension + tensor parallelism on heads / MLP / vocab; 'fsdp': FSDP only).
    The sampler uses the same devices with its own axis sizes (all 0 = the training mesh's shape);
    its weights are resharded and cast on device after every update.
    """
    return build(MESH)


def rm_data_block() -> ml_collections.ConfigDict:
    return build(RM_DATA)


def init_block() -> ml_collections.ConfigDict:
    return build(INIT)


def sibling_recipe(config_file: str, name: str):
    """The module of another recipe in the same folder (recipes build on each other, e.g. on quickstart)."""
    from gui_jax.core.recipe_files import load_python_file
    return load_python_file(os.path.join(os.path.dirname(os.path.abspath(config_file)), f"{name}.py"))

"""Option names of the rl modules, in a module that imports nothing: config validation
(gui_jax/config_check.py) and the config schema (gui_jax/train/config_blocks.py) read them without
loading JAX. The modules that use them import them from here (and re-export them under the same names).
"""
OBSERVATION_MODES = ("screenshot", "ui_text", "xml", "both")        # rl/prompting.py PromptConfig.observation
TARGETS = ("coordinate", "element", "text")                          # rl/prompting.py PromptConfig.target
HISTORY_MODES = ("full", "compact")                                  # rl/prompting.py PromptConfig.history_mode
PATCH_STRATEGIES = ("thought_free", "off_policy", "on_policy")       # rl/semi_online_rollout.py
AGGREGATIONS = ("token_mean", "step_token_mean", "seq_mean_token_mean")  # rl/losses.py
KL_KINDS = ("kl", "mse", "low_var_kl")                               # rl/losses.py
TINY_TOKENIZERS = ("tiny", "tiny_phonesim", "tiny_phonesim_num")     # rl/agent.py TINY_VOCABULARIES
TOKENIZERS = ("auto",) + TINY_TOKENIZERS + ("qwen25",)               # rl/agent.py load_tokenizer (or a path)
SEED_THOUGHTS = ("", "describe")   # train/reasoning_sft.py: round 0 samples the policy | PhoneSim describes the steps
BATCH_BUCKETINGS = ("powers_of_4", "powers_of_2", "full")           # rl/jax_policy.py policy_batch_buckets
MICRO_ROWS = ("fixed", "even")                                      # rl/batch.py make_micro_batches

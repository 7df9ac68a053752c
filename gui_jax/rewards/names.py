"""Option names of the reward modules, in a module that imports nothing: config validation reads them
without loading JAX; gui_jax/rewards/rules.py imports them from here."""
REWARD_PRESETS = ("paper", "code")                                   # rewards/rules.py
TEXT_MATCH_RULES = ("substring", "exact")                            # core/matcher.py text_match
RM_SCORERS = ("verdict", "policy_likelihood")                       # rewards/rm_scoring.py, likelihood.py
OFFLINE_REWARDS = ("rule", "rm")                                     # train/semi_online.py train_offline_rl

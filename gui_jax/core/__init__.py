"""Core data model shared by every part of gui_jax (depends on nothing else in the package)."""
from gui_jax.core.types import (ACTION_FIELDS, ACTION_TYPES, DIRECTIONS, STATUSES, SYSTEM_BUTTONS,
                                Action, ActionError, Episode, Observation, Step, Trajectory,
                                UIElement)
from gui_jax.core.dialects import (DIALECTS, ActionParseError, format_response, parse_response,
                                   scale_action_to_image, scale_action_to_screen)
from gui_jax.core.matcher import match_action
from gui_jax.core.serialize import load_episode, load_episodes, save_episode, save_episodes

__all__ = ["ACTION_FIELDS", "ACTION_TYPES", "DIRECTIONS", "STATUSES", "SYSTEM_BUTTONS", "Action", "ActionError",
           "Episode", "Observation", "Step", "Trajectory", "UIElement", "DIALECTS", "ActionParseError",
           "format_response", "parse_response", "scale_action_to_image", "scale_action_to_screen", "match_action",
           "load_episode", "load_episodes", "save_episode", "save_episodes"]

"""The "launch" pretraining objective: which app serves a goal, on PhoneSim's own home screen.

A pretrained VLM knows that a song lives in the music app and storage in the settings; the tiny base does not,
and the agent's first step (open the app) then has to be memorised from a few hundred SFT episodes per goal
phrasing, a mapping that low-rate SFT from the base learned for some templates and not others, and that one RL
update could flip (experiments/results/quickstart_from_base.md). Here goals are composed from generic frames,
topic words of each app, and generator labels ("Find the playlist 'Quiet Fire'." -> Music, "Change the
brightness." -> Settings); the expert answers with the agent's own open action, open(text=<app>). The frames are
not PhoneSim's task templates and the labels are never PhoneSim's.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Optional

import numpy as np

from gui_jax.core.types import Action, Observation

# app label (PhoneSim's launcher) -> topic words. Entity words take a label ("the song 'X'"); setting words stand
# alone ("Turn on Bluetooth.").
ENTITY_TOPICS = {
    "Clock": ("alarm", "timer", "wake-up alarm", "stopwatch lap"),
    "Contacts": ("contact", "phone number of", "email address of", "favourite contact", "company of"),
    "Messages": ("message", "conversation", "chat", "text message", "message thread"),
    "Calendar": ("event", "meeting", "appointment", "calendar entry"),
    "Notes": ("note", "memo", "written note"),
    "Expenses": ("expense", "payment", "purchase", "spending on", "receipt"),
    "Recipes": ("recipe", "dish", "servings of", "ingredients of", "preparation time of"),
    "Tasks": ("task", "to-do", "to-do item", "priority of the task", "due date of the task"),
    "Files": ("file", "folder", "document", "file size of"),
    "Recorder": ("recording", "voice memo", "audio recording", "duration of the recording"),
    "Music": ("song", "track", "playlist", "artist of the song", "album"),
}
SETTING_TOPICS = ("Wi-Fi", "Bluetooth", "brightness", "volume", "storage", "dark theme", "airplane mode",
                  "model number", "display settings", "phone settings")
ENTITY_FRAMES = ("Open the {N} '{L}'.", "Show me the {N} '{L}'.", "Find the {N} called '{L}'.",
                 "Delete the {N} '{L}'.", "What is the {N} '{L}'?", "Tell me about the {N} '{L}'.",
                 "Check the {N} '{L}'.", "Edit the {N} '{L}'.", "I need the {N} '{L}'.", "Go to the {N} '{L}'.")
SETTING_FRAMES = ("Turn on {N}.", "Turn off {N}.", "Change the {N}.", "Check the {N}.", "What is the {N}?",
                  "How is the {N} set?", "Open the {N}.", "Show me the {N}.")
APPS = tuple(ENTITY_TOPICS) + ("Settings",)


@lru_cache(maxsize=1)
def launcher_observation() -> Observation:
    """PhoneSim's home screen, as every episode starts (the launcher shows the same apps and time each time)."""
    from gui_jax.envs.sim import PhoneSim
    from gui_jax.tasks.registry import make_task
    return PhoneSim(render=False).reset(make_task("settings.wifi_on", 0))


def launch_goal(rng: np.random.Generator, label: str, app: Optional[str] = None) -> tuple[str, str]:
    """(goal, app): a goal about one of `app`'s topics (a random app when None), naming `label` when the topic is
    an entity."""
    app = APPS[int(rng.integers(len(APPS)))] if app is None else app
    if app not in APPS:
        raise ValueError(f"launch: unknown app {app!r}; known: {', '.join(APPS)}")
    if app == "Settings":
        noun = SETTING_TOPICS[int(rng.integers(len(SETTING_TOPICS)))]
        return SETTING_FRAMES[int(rng.integers(len(SETTING_FRAMES)))].format(N=noun), app
    topics = ENTITY_TOPICS[app]
    noun = topics[int(rng.integers(len(topics)))]
    frame = ENTITY_FRAMES[int(rng.integers(len(ENTITY_FRAMES)))]
    return frame.format(N=noun, L=label), app


def launch_action(app: str) -> Action:
    """The agent's first step for any goal of `app` (what PhoneSim's oracle does)."""
    return Action("open", text=app)

"""The "launch" pretraining objective: which app serves a goal, on PhoneSim's own home screen.

A pretrained VLM knows that a song lives in the music app and storage in the settings; the tiny base does not,
and the agent's first step (open the app) then has to be memorised from a few hundred SFT episodes per goal
phrasing, a mapping that low-rate SFT from the base learned for some templates and not others, and that one RL
update could flip (experiments/results/quickstart_from_base.md). Here goals are composed from generic frames,
topic words of each app, and generator labels ("Find the playlist 'Quiet Fire'." -> Music, "Change the
brightness." -> Settings); the expert answers with the agent's own open action, open(text=<app>). The frames are
not PhoneSim's task templates (style "pages" adds the goals the pretraining app pages already pose) and the labels
are never PhoneSim's.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Optional

import numpy as np

from gui_jax.core.types import Action, Observation
from gui_jax.train.pretrain_apps import alarm_time, launch_page_goals

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
# launch_goals="intents": as well, requests phrased the ways people ask an app for things (questions about a
# record, edits, counts), each with a cue word of its app; {L} is a generator label. They cover the vocabulary
# of phone requests, not PhoneSim's sentences: the topic frames alone left the base mapping "What did X say in
# their most recent message?" to Notes and "What is the model number of this phone?" to Clock
# (experiments/results/pretrain_m1.md, the annealed branch M1e). The M1f branch still opened Tasks or Notes for
# "play"/"conversation" requests: Music and Messages got play and conversation frames (none is PhoneSim's sentence).
INTENT_FRAMES = {
    "Clock": ("Wake me up with the alarm '{L}'.", "Switch off the alarm '{L}'.", "Enable the '{L}' alarm.",
              "How many alarms are set?", "Which alarms are on?", "Remove the alarm labelled '{L}'.",
              "Start the stopwatch.", "Count down a timer for '{L}'.", "Disable my alarm '{L}'."),
    "Contacts": ("What is {L}'s phone number?", "Which company is {L} with?", "Where does {L} work?",
                 "Save {L} as a new contact.", "Star {L} in my contacts.", "Email address of {L}?",
                 "Remove {L} from my contacts.", "Update the number of {L}.", "Who are my starred contacts?"),
    "Messages": ("What did {L} write to me last?", "Read the latest text from {L}.", "Text {L} that I am late.",
                 "Send {L} a quick text.", "Answer {L}'s last message.", "Open my chat with {L}.",
                 "Who sent me unread messages?", "What was the last thing {L} said?", "Show the thread with {L}.",
                 "Open the conversation with {L}.", "Bring up my texts with {L}.", "Go to my messages from {L}."),
    "Calendar": ("When is '{L}' scheduled?", "Where is '{L}' held?", "What time does '{L}' begin?",
                 "Schedule '{L}' on my calendar.", "How many events are on '{L}'?", "Cancel the event '{L}'.",
                 "Am I busy on '{L}'?", "Which day is the meeting '{L}'?", "Put '{L}' in my schedule."),
    "Notes": ("What does my note '{L}' say?", "Write down '{L}' in a new note.", "Jot down '{L}'.",
              "Add '{L}' to the end of a note.", "How many notes are saved?", "Remove the note '{L}'.",
              "Read me the note '{L}'.", "Make a memo titled '{L}'.", "What is in the memo '{L}'?"),
    "Expenses": ("How much was '{L}'?", "What did '{L}' cost me?", "What did I pay for '{L}'?",
                 "How much money went on '{L}'?", "Log '{L}' as an expense.", "What is my total spending?",
                 "Remove the expense '{L}'.", "How much have I spent on bills?", "Record a payment for '{L}'."),
    "Recipes": ("How many people does '{L}' feed?", "What goes into '{L}'?", "How long does '{L}' take to cook?",
                "Favourite the recipe '{L}'.", "Save a new recipe '{L}'.", "What do I need to cook '{L}'?",
                "How many servings is '{L}'?", "Show me how to cook '{L}'.", "Star the dish '{L}'."),
    "Tasks": ("Mark '{L}' as complete.", "Tick off the to-do '{L}'.", "What priority does '{L}' have?",
              "Add '{L}' to my to-do list.", "Which tasks are still open?", "Is the task '{L}' done?",
              "When is the task '{L}' due?", "Remove finished to-dos.", "How urgent is the to-do '{L}'?"),
    "Files": ("How big is the file '{L}'?", "Rename the document '{L}'.", "Make a folder called '{L}'.",
              "How many files does the folder '{L}' hold?", "Delete the file '{L}'.", "Move the file '{L}'.",
              "Where is the document '{L}' stored?", "Open my downloads folder.", "Find the PDF '{L}'."),
    "Recorder": ("How long does the recording '{L}' last?", "Record a voice memo.", "Start recording audio.",
                 "Save an audio clip named '{L}'.", "Delete the voice memo '{L}'.", "Play back the recording '{L}'.",
                 "Capture some audio for me.", "Rename the audio recording '{L}'.", "Make a sound recording."),
    "Music": ("Play '{L}' for me.", "Put on the track '{L}'.", "Who sings '{L}'?", "Which artist made '{L}'?",
              "Add '{L}' to a playlist.", "How many songs by {L} do I have?", "Listen to the album '{L}'.",
              "Make a playlist called '{L}'.", "Shuffle my songs.", "Play the track '{L}'.",
              "Put on the song '{L}', please.", "Start playing the album '{L}'.", "Play the tune '{L}' now."),
    "Settings": ("What is this phone's model number?", "How much storage is used on this phone?",
                 "Set the ring volume to 30%.", "Make the screen brighter.", "Switch on the dark theme.",
                 "Disable Wi-Fi on this phone.", "Enable Bluetooth.", "Put the phone in airplane mode.",
                 "Which Android version does this phone run?", "How full is the phone's storage?",
                 "Lower the volume of this phone.", "Dim the display."),
}
# topic frames only | half topic frames, half INTENT_FRAMES | as intents, but for the apps with pretraining pages
# (pretrain_apps.PAGE_GOALS) half the goals are the goals those pages pose, so the same goal opens the app here |
# as pages, with the pages' answer questions among those goals (Expenses too): with more read items on the pages,
# "pages" let the base open the wrong app for them (experiments/results/pretrain_m1.md, the segment T5)
LAUNCH_GOALS = ("topics", "intents", "pages", "answers")


def fixed_goals() -> frozenset[str]:
    """Every goal launch_goal can pose without a label (the settings' topic frames, INTENT_FRAMES without {L})."""
    return frozenset({f.format(N=n) for f in SETTING_FRAMES for n in SETTING_TOPICS}
                     | {f for frames in INTENT_FRAMES.values() for f in frames if "{L}" not in f})


@lru_cache(maxsize=1)
def phonesim_fixed_goals(seeds: int = 100) -> frozenset[str]:
    """The fixed goals that are also a PhoneSim task's goal ("Turn off Wi-Fi." is settings.wifi_off's): style
    "pages" never poses them; "topics" and "intents" do, unchanged so that their streams reproduce."""
    from gui_jax.tasks.registry import list_templates, make_task
    fixed = fixed_goals()
    return frozenset(g for t in list_templates() for s in range(seeds) if (g := make_task(t, s).goal) in fixed)


@lru_cache(maxsize=1)
def launcher_observation() -> Observation:
    """PhoneSim's home screen, as every episode starts (the launcher shows the same apps and time each time)."""
    from gui_jax.envs.sim import PhoneSim
    from gui_jax.tasks.registry import make_task
    return PhoneSim(render=False).reset(make_task("settings.wifi_on", 0))


def launch_goal(rng: np.random.Generator, label: str, app: Optional[str] = None,
                style: str = "topics") -> tuple[str, str]:
    """(goal, app): a goal about one of `app`'s topics (a random app when None), naming `label` when the topic is
    an entity; style "intents": half the goals are `app`'s INTENT_FRAMES instead; "pages": as "intents", except
    that half the goals of an app with pretraining pages are those pages' goals (an alarm's time for Clock's), and
    that it never poses a PhoneSim task's goal; "answers": as "pages", the pages' goals including their answer
    questions (pretrain_apps.launch_page_goals)."""
    if style not in LAUNCH_GOALS:
        raise ValueError(f"launch goals {style!r}: one of {', '.join(LAUNCH_GOALS)}")
    app = APPS[int(rng.integers(len(APPS)))] if app is None else app
    if app not in APPS:
        raise ValueError(f"launch: unknown app {app!r}; known: {', '.join(APPS)}")
    if style in ("pages", "answers"):
        page_goals = launch_page_goals(style == "answers")
        if app in page_goals and rng.random() < 0.5:
            goals = page_goals[app]
            return goals[int(rng.integers(len(goals)))].replace("{L}", alarm_time(rng) if app == "Clock" else label), app
        while (goal := launch_goal(rng, label, app, "intents"))[0] in phonesim_fixed_goals():
            pass
        return goal
    if style == "intents" and rng.random() < 0.5:
        frames = INTENT_FRAMES[app]
        return frames[int(rng.integers(len(frames)))].replace("{L}", label), app
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

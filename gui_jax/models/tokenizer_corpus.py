"""Deterministic GUI-agent text for training the tiny SentencePiece vocabulary.

`corpus_lines(seed, n_examples, extra_lines)` yields phone-task goals, UI trees (docs/algorithms.md §10 line
format), chat-formatted prompts, and responses in the four action dialects of docs/algorithms.md §1, with
names, numbers, dates and times. Pass simulator text as `extra_lines` to retrain on it later.

    python -m gui_jax.models.tokenizer_corpus --train gui_jax/models/assets/tiny_sp.model
"""
from __future__ import annotations

import argparse
import json
import random
from typing import Iterable, Iterator

APPS = (
    "Contacts", "Clock", "Calendar", "Simple Calendar Pro", "Markor", "Joplin", "Notes",
    "Pro Expense", "Broccoli", "Recipes", "Simple SMS Messenger", "Messages", "Settings", "Files",
    "Retro Music", "Music", "Audio Recorder", "Chrome", "Camera", "Gallery", "Simple Gallery Pro",
    "Maps", "OsmAnd", "Gmail", "YouTube", "Play Store", "Calculator", "Tasks", "VLC", "Phone",
    "Photos", "Weather", "Wikipedia", "Zoom", "Slack", "Spotify", "Amazon", "Expedia", "Booking",
)
FIRST_NAMES = (
    "Alice", "Bob", "Carol", "David", "Emma", "Frank", "Grace", "Hannah", "Ivan", "Julia", "Kevin",
    "Laura", "Mohammed", "Nina", "Oscar", "Priya", "Quentin", "Rosa", "Sam", "Tara", "Umar", "Vera",
    "Wei", "Xavier", "Yuki", "Zoe", "Liam", "Olivia", "Noah", "Sophia", "Mateo", "Aisha", "Chen",
)
LAST_NAMES = (
    "Smith", "Johnson", "Brown", "Garcia", "Miller", "Davis", "Martinez", "Lopez", "Wilson",
    "Anderson", "Taylor", "Thomas", "Moore", "Lee", "Walker", "Young", "King", "Wright", "Scott",
    "Nguyen", "Patel", "Kim", "Singh", "Müller", "Rossi", "Dubois", "Silva", "Tanaka", "Ivanova",
)
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
EXPENSE_CATEGORIES = ("Food", "Transport", "Housing", "Utilities", "Entertainment", "Health",
                      "Clothing", "Travel", "Education", "Groceries", "Other")
DISHES = ("Pasta Carbonara", "Chicken Curry", "Vegetable Stir Fry", "Tomato Soup", "Pancakes",
          "Greek Salad", "Beef Tacos", "Mushroom Risotto", "Banana Bread", "Fried Rice", "Omelette")
INGREDIENTS = ("2 eggs", "1 cup flour", "200g pasta", "3 tomatoes", "1 onion", "2 cloves garlic",
               "salt", "olive oil", "500 ml milk", "1 tbsp butter", "a pinch of pepper")
NOTE_WORDS = ("meeting", "groceries", "ideas", "todo", "project", "trip", "budget", "reading list",
              "workout", "birthday", "shopping", "homework", "recipe", "journal", "packing list")
SETTINGS = ("Wi-Fi", "Bluetooth", "Airplane mode", "Do Not Disturb", "Dark theme", "Location",
            "Mobile data", "Hotspot", "Auto-rotate", "Battery saver", "NFC", "Flashlight")
BUTTONS = ("OK", "Cancel", "Save", "Delete", "Done", "Next", "Back", "Add", "Edit", "Search", "Send",
           "Allow", "Deny", "Skip", "Continue", "Create", "Apply", "Share", "More options", "Close",
           "New contact", "New event", "Add alarm", "Start", "Stop", "Pause", "Play", "Record",
           "Navigate up", "Confirm", "Submit", "Sign in", "Settings", "Menu", "Undo", "Rename")
WIDGETS = ("TextView", "Button", "ImageButton", "EditText", "CheckBox", "Switch", "ImageView",
           "LinearLayout", "FrameLayout", "RecyclerView", "ScrollView", "ListView", "RadioButton",
           "ToggleButton", "ViewGroup", "TabWidget", "Spinner", "SeekBar", "ProgressBar")
FLAGS = ("clickable", "focusable", "checkable", "checked", "scrollable", "long-clickable",
         "selected", "password", "focused")
SCREEN_SIZES = ((1080, 2400), (1080, 2340), (720, 1280), (1440, 3120), (1080, 1920))
DIRECTIONS = ("up", "down", "left", "right")
SYSTEM_BUTTONS = ("Back", "Home", "Menu", "Enter")
THOUGHTS = (
    "I need to open the {app} app first.", "The {btn} button is visible, so I will tap it.",
    "I should scroll {d} to find more options.", "Now I will type the text into the field.",
    "The task is complete.", "I have to go back to the previous screen.",
    "The search box is at the top of the screen.", "I will long press the item to select it.",
    "Let me wait for the page to load.", "I can see {name} in the list; I'll open it.",
    "The toggle for {setting} is off, so I will switch it on.", "I will save the changes now.",
)


# Everyday words of phone UIs, settings pages, notifications and instructions.
COMMON_WORDS = tuple("""
the a an and or not of to in on at for with from by about into over after before under between
is are was were be been being have has had do does did will would can could should may might must
I you he she it we they me him her us them my your his its our their this that these those here there
what which who when where why how all any each every some many more most other such no only own same
so than too very just also now then again once still yet already always never often sometimes
open close tap press hold swipe scroll type enter select choose pick check uncheck toggle switch turn
add remove delete create edit rename move copy paste cut share send reply forward save cancel confirm
search find show hide view list sort filter clear reset update refresh download upload install
start stop pause resume play record repeat shuffle skip mute unmute volume brightness battery
set change enable disable allow deny block unblock sync backup restore sign login logout account
password email address phone number name first last middle nickname company title label note notes
message messages chat call calls missed incoming outgoing contact contacts favorite favorites group
alarm alarms timer stopwatch clock bedtime snooze dismiss ringtone vibrate daily weekdays weekends
event events calendar reminder reminders schedule meeting appointment today tomorrow yesterday week
month year day days hour hours minute minutes second seconds morning afternoon evening night noon
file files folder folders document documents downloads pictures photos images videos music audio
song songs album albums artist artists playlist playlists track tracks recording recordings
expense expenses income budget category categories amount total price cost date time currency
recipe recipes ingredient ingredients directions servings prep cook minutes description source
settings network internet connections display sound notifications storage apps privacy security
location system about device developer options language keyboard accessibility wallpaper theme
screen home lock unlock notification panel quick status bar navigation gesture button buttons
tab tabs page pages menu item items option options field fields text box dialog popup window
top bottom left right up down middle center next previous back forward first last new old recent
yes no ok done finish finished complete completed success failure error warning info loading wait
please tap the button to continue your changes have been saved are you sure you want to delete this
permission required access camera microphone storage contacts location while using only this time
goal task step steps action actions history screenshot current previous answer question result
click long press double input output value values element elements index bounds width height
""".split())


def help_sentence(rng: random.Random) -> str:
    """A loosely grammatical UI/instruction sentence built from COMMON_WORDS (word coverage)."""
    words = [rng.choice(COMMON_WORDS) for _ in range(rng.randint(4, 14))]
    if rng.random() < 0.5:
        words[0] = words[0].capitalize()
    if rng.random() < 0.1:
        words = [w.upper() for w in words]
    return " ".join(words) + rng.choice((".", "?", "!", ":", "", "..."))


def _name(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


def _date(rng: random.Random) -> str:
    y, m, d = rng.randint(2022, 2026), rng.randint(1, 12), rng.randint(1, 28)
    return rng.choice((f"{y}-{m:02d}-{d:02d}", f"{MONTHS[m - 1]} {d}, {y}", f"{d} {MONTHS[m - 1]}",
                       f"{m}/{d}/{y}", f"{WEEKDAYS[rng.randrange(7)]}, {MONTHS[m - 1]} {d}"))


def _time(rng: random.Random) -> str:
    h, mi = rng.randint(0, 23), rng.choice((0, 5, 10, 15, 20, 30, 45, rng.randint(0, 59)))
    return rng.choice((f"{h:02d}:{mi:02d}", f"{(h % 12) or 12}:{mi:02d} {'AM' if h < 12 else 'PM'}",
                       f"{(h % 12) or 12} {'am' if h < 12 else 'pm'}"))


def _phone(rng: random.Random) -> str:
    return rng.choice((f"+1 {rng.randint(200, 999)}-{rng.randint(200, 999)}-{rng.randint(1000, 9999)}",
                       f"{rng.randint(100, 999)}{rng.randint(1000000, 9999999)}"))


def _amount(rng: random.Random) -> str:
    return rng.choice((f"{rng.randint(1, 500)}.{rng.randint(0, 99):02d}", str(rng.randint(1, 2000))))


def goal(rng: random.Random) -> str:
    """One natural-language phone task in the style of AndroidWorld / AndroidControl goals."""
    name, app = _name(rng), rng.choice(APPS)
    note = rng.choice(NOTE_WORDS)
    choices = (
        f"Add a contact named {name} with phone number {_phone(rng)}.",
        f"Delete the contact {name} from my contacts.",
        f"Set an alarm for {_time(rng)} labeled {rng.choice(NOTE_WORDS).title()}.",
        f"Turn off all alarms in the Clock app.",
        f"Start a timer for {rng.randint(1, 90)} minutes.",
        f"Create a calendar event titled '{note.title()} with {name}' on {_date(rng)} at {_time(rng)}.",
        f"Delete all events on {_date(rng)} in Simple Calendar Pro.",
        f"Create a new note in Markor named {note.replace(' ', '_')}_{rng.randint(1, 99)}.md "
        f"with the text: {rng.choice(INGREDIENTS)}, {rng.choice(INGREDIENTS)}.",
        f"Add an expense of ${_amount(rng)} for {rng.choice(EXPENSE_CATEGORIES)} named "
        f"'{rng.choice(DISHES)}' in Pro Expense.",
        f"Delete the expenses with names {rng.choice(DISHES)}, {rng.choice(DISHES)} in Pro Expense.",
        f"Add the recipe '{rng.choice(DISHES)}' to Broccoli with ingredients {rng.choice(INGREDIENTS)} "
        f"and {rng.choice(INGREDIENTS)}; servings: {rng.randint(1, 8)}.",
        f"Send a text message to {_phone(rng)} saying "
        f"\"{rng.choice(THOUGHTS).format(app=app, btn='OK', d='down', name=name, setting='Wi-Fi')}\"",
        f"Reply to the most recent message from {name} with 'See you at {_time(rng)}'.",
        f"Turn {rng.choice(('on', 'off'))} {rng.choice(SETTINGS)}.",
        f"Set the screen brightness to {rng.choice(('maximum', 'minimum', str(rng.randint(0, 100)) + '%'))}.",
        f"Open {app}.", f"Open the {app} app and go to Settings.",
        f"Move the file {note.replace(' ', '_')}.txt from Downloads to Documents.",
        f"Delete the file IMG_{rng.randint(1000, 9999)}.jpg from the Pictures folder.",
        f"Play the song '{rng.choice(DISHES)}' in Retro Music.",
        f"Create a playlist called {note.title()} {rng.randint(1, 9)} with {rng.randint(2, 6)} songs.",
        f"Record an audio clip and save it as {note.replace(' ', '_')}_{_date(rng).replace(' ', '_')}.",
        f"What is the total of my expenses in {MONTHS[rng.randrange(12)]}? Answer with the number.",
        f"How many events do I have on {_date(rng)}?",
        f"Search for '{rng.choice(DISHES)}' in Chrome.",
        f"Take a photo with the Camera app.",
        f"Find the phone number of {name} and tell me.",
        f"Uninstall {app}.", f"Share the note '{note}' with {name} via Gmail.",
        f"Mark the task '{note}' as completed in Tasks.",
    )
    return rng.choice(choices)


def ui_tree(rng: random.Random, width: int, height: int, n: int) -> list[str]:
    """UI-tree lines `Class;action;flags;text;[x1,y1][x2,y2]` (docs/algorithms.md §10)."""
    lines = []
    for _ in range(n):
        x1, y1 = rng.randrange(0, width - 40), rng.randrange(0, height - 40)
        x2, y2 = rng.randint(x1 + 20, width), rng.randint(y1 + 20, min(height, y1 + 300))
        widget = rng.choice(WIDGETS)
        action = rng.choice(("click", "long-click", "scroll", "focus", "click;long-click", ""))
        flags = ",".join(sorted(rng.sample(FLAGS, rng.randint(0, 3))))
        text = rng.choice(BUTTONS + APPS + SETTINGS + (_name(rng), _date(rng), _time(rng), _phone(rng),
                                                         rng.choice(DISHES), ""))
        lines.append(f"{widget};{action};{flags};{text};[{x1},{y1}][{x2},{y2}]")
    return lines


def _action(rng: random.Random, width: int, height: int) -> dict:
    kind = rng.choice(("click",) * 6 + ("long_press", "swipe", "scroll", "scroll", "type", "type",
                                        "system_button", "open", "wait", "answer", "terminate", "key"))
    x, y = rng.randrange(width), rng.randrange(height)
    a: dict = {"action": kind}
    if kind in ("click", "long_press"):
        a["coordinate"] = [x, y]
        if kind == "long_press":
            a["time"] = rng.choice((1, 2, 1.5))
    elif kind == "swipe":
        a["coordinate"], a["coordinate2"] = [x, y], [rng.randrange(width), rng.randrange(height)]
    elif kind == "scroll":
        a["direction"] = rng.choice(DIRECTIONS)
    elif kind == "type":
        a["text"] = rng.choice((_name(rng), _phone(rng), _date(rng), _time(rng), _amount(rng),
                                rng.choice(DISHES), rng.choice(NOTE_WORDS), rng.choice(INGREDIENTS)))
    elif kind == "system_button":
        a["button"] = rng.choice(SYSTEM_BUTTONS)
    elif kind == "key":
        a["text"] = rng.choice(("Enter", "Backspace", "Tab", "Escape"))
    elif kind == "open":
        a["text"] = rng.choice(APPS)
    elif kind == "wait":
        a["time"] = rng.choice((1, 2, 3, 5))
    elif kind == "answer":
        a["text"] = rng.choice((_amount(rng), str(rng.randint(0, 20)), _name(rng), _phone(rng), "Yes", "No"))
    else:
        a["status"] = rng.choice(("success", "failure"))
    return a


def _thought(rng: random.Random) -> str:
    return rng.choice(THOUGHTS).format(app=rng.choice(APPS), btn=rng.choice(BUTTONS),
                                       d=rng.choice(DIRECTIONS), name=_name(rng), setting=rng.choice(SETTINGS))


def response_ui_s1(rng: random.Random, a: dict) -> str:
    return f"<think>{_thought(rng)}</think>\n<action>{json.dumps(a, ensure_ascii=False)}</action>"


def response_uitars(rng: random.Random, a: dict) -> str:
    k = a["action"]
    if k == "click":
        call = f"click(start_box='({a['coordinate'][0]},{a['coordinate'][1]})')"
    elif k == "long_press":
        call = f"long_press(start_box='({a['coordinate'][0]},{a['coordinate'][1]})')"
    elif k == "swipe":
        (x, y), (x2, y2) = a["coordinate"], a["coordinate2"]
        call = f"scroll(start_box='({x},{y})', end_box='({x2},{y2})')"
    elif k == "scroll":
        call = f"scroll(direction='{a['direction']}')"
    elif k in ("type", "key"):
        call = f"type(content='{a['text']}')"
    elif k == "system_button":
        call = {"Back": "press_back()", "Home": "press_home()"}.get(a["button"], "press_back()")
    elif k == "open":
        call = f"open_app(content='{a['text']}')"
    elif k == "wait":
        call = "wait()"
    elif k == "answer":
        call = f"answer(content='{a['text']}')"
    else:
        call = f"finished(content='{a['status']}')"
    return f"Thought: {_thought(rng)}\nAction: {call}"


def response_mobilerl(rng: random.Random, a: dict, width: int, height: int) -> str:
    k = a["action"]
    if k in ("click", "long_press"):
        x, y = a["coordinate"]
        box = [max(0, x - rng.randint(10, 200)), max(0, y - rng.randint(10, 80)),
               min(width, x + rng.randint(10, 200)), min(height, y + rng.randint(10, 80))]
        call = f'do(action="{"Tap" if k == "click" else "Long Press"}", element={json.dumps(box)})'
    elif k in ("swipe", "scroll"):
        call = (f'do(action="Swipe", direction="{a.get("direction", rng.choice(DIRECTIONS))}", '
                f'dist="{rng.choice(("short", "medium", "long"))}")')
    elif k in ("type", "key"):
        call = f'do(action="Type", text="{a["text"]}")'
    elif k == "system_button":
        call = f'do(action="{a["button"]}")'
    elif k == "open":
        call = f'do(action="Launch", app="{a["text"]}")'
    elif k == "wait":
        call = 'do(action="Wait")'
    else:
        call = f'finish(message="{a.get("text", a.get("status", ""))}")'
    return f"<think>{_thought(rng)}</think><answer>{call}</answer>"


def response_ui_genie(rng: random.Random, a: dict) -> str:
    args = dict(a)
    args["action_desc"] = _thought(rng).rstrip(".")
    payload = {"name": "mobile_use", "arguments": args}
    return f"<tool_call>\n{json.dumps(payload, ensure_ascii=False)}\n</tool_call>"


SYSTEM_PROMPTS = (
    "You are a helpful assistant.",
    "You are a GUI agent operating an Android phone. Given the goal, the screenshot and the UI tree, "
    "output the next action.",
    "You are a phone-use agent. Think step by step inside <think></think>, then output the action "
    "inside <action></action> as JSON.",
    "You are a reward model. Judge whether the last action makes progress towards the goal. "
    "Answer yes or no.",
)


def example(rng: random.Random) -> list[str]:
    """One chat-formatted step (system, user with UI tree and history, assistant response)."""
    width, height = rng.choice(SCREEN_SIZES)
    acts = [_action(rng, width, height) for _ in range(rng.randint(1, 4))]
    dialect = rng.randrange(4)
    fmt = (lambda a: response_ui_s1(rng, a), lambda a: response_uitars(rng, a),
           lambda a: response_mobilerl(rng, a, width, height), lambda a: response_ui_genie(rng, a))[dialect]
    history = "\n".join(f"Step {i + 1}: {fmt(a)}" for i, a in enumerate(acts[:-1]))
    user = [f"Goal: {goal(rng)}", f"Current app: {rng.choice(APPS)}",
            f"Screen size: {width}x{height}", "UI tree:"] + ui_tree(rng, width, height, rng.randint(2, 8))
    if history:
        user += ["Previous actions:", history]
    return [
        f"<|im_start|>system\n{rng.choice(SYSTEM_PROMPTS)}<|im_end|>",
        "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>" + "\n".join(user) + "<|im_end|>",
        f"<|im_start|>assistant\n{fmt(acts[-1])}<|im_end|>",
    ]


def corpus_lines(seed: int = 0, n_examples: int = 6000, extra_lines: Iterable[str] = ()) -> Iterator[str]:
    """Deterministic corpus: `n_examples` chat steps and goal lines, then `extra_lines` verbatim."""
    rng = random.Random(seed)
    for _ in range(n_examples):
        yield from example(rng)
        yield goal(rng)
        yield help_sentence(rng)
    yield from (line for line in extra_lines if line)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", required=True, help="where to write the SentencePiece .model")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n_examples", type=int, default=6000)
    ap.add_argument("--extra", action="append", default=[], help="text file(s) with extra lines (one per line)")
    args = ap.parse_args(argv)
    from gui_jax.models.tokenizer import SentencePieceTokenizer, train_sentencepiece

    extra: list[str] = []
    for path in args.extra:
        with open(path, encoding="utf-8") as f:
            extra.extend(line.rstrip("\n") for line in f)
    proto = train_sentencepiece(corpus_lines(args.seed, args.n_examples, extra), seed=args.seed)
    with open(args.train, "wb") as f:
        f.write(proto)
    tok = SentencePieceTokenizer(proto)
    print(f"wrote {args.train}: {len(proto)} bytes, vocab {tok.vocab_size}, image_pad id {tok.image_pad_id}")


if __name__ == "__main__":
    main()

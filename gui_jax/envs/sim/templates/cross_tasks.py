"""Cross-app templates: read a value in one app and use it in another."""

from __future__ import annotations

from gui_jax.envs.sim.apps.base import hhmm
from gui_jax.envs.sim.templates.base import Fill, Look, Open, Spec, Tap, answer_matches, template
from gui_jax.envs.sim.templates.people_tasks import digits


def _sent(d, peer):
    return d.apps["messages"].sent_to(peer)


@template("cross.contact_number_sms", "messages", "hard", 7, apps=("contacts",))
def contact_number_sms(dev, rng):
    threads = dev.apps["messages"].threads
    t = rng.choice(threads)
    c = rng.choice([c for c in dev.apps["contacts"].items if c.name != t.peer])
    peer, number = t.peer, c.phone
    return Spec(
        f"Send {c.name}'s phone number to {peer} in a text message.",
        lambda d, a: any(digits(number) in digits(m) for m in _sent(d, peer)),
        [
            Open("Contacts"),
            Look(rid="contact", text=c.name),
            Open("Messages"),
            Tap(rid="conversation", text=peer),
            Fill("message", number, "Message"),
            Tap(rid="send"),
        ],
        {"from": c.name, "to": peer},
    )


@template("cross.event_location_sms", "messages", "hard", 7, apps=("calendar",))
def event_location_sms(dev, rng):
    t = rng.choice(dev.apps["messages"].threads)
    e = rng.choice(dev.apps["calendar"].events)
    peer, loc = t.peer, e.location
    return Spec(
        f"Text {peer} the location of my event '{e.title}'.",
        lambda d, a: any(answer_matches(m, loc) for m in _sent(d, peer)),
        [
            Open("Calendar"),
            Look(rid="event", text=e.title),
            Open("Messages"),
            Tap(rid="conversation", text=peer),
            Fill("message", loc, "Message"),
            Tap(rid="send"),
        ],
        {"event": e.title, "to": peer},
    )


@template("cross.event_to_alarm", "clock", "hard", 9, apps=("calendar",))
def event_to_alarm(dev, rng):
    clock = dev.apps["clock"]
    taken = {a.time for a in clock.alarms}
    e = rng.choice([e for e in dev.apps["calendar"].events if e.time not in taken])
    h, m = (int(v) for v in e.time.split(":"))
    return Spec(
        f"Set an alarm for the start time of my event '{e.title}'.",
        lambda d, a: any(x.time == hhmm(h, m) and x.enabled for x in d.apps["clock"].alarms),
        [
            Open("Calendar"),
            Look(rid="event", text=e.title),
            Open("Clock"),
            Tap(desc="Add alarm"),
            Fill("hour", str(h), "Hour"),
            Fill("minute", str(m), "Minute"),
            Tap(rid="save"),
        ],
        {"event": e.title},
    )


@template("cross.model_to_note", "notes", "hard", 10, apps=("settings",))
def model_to_note(dev, rng):
    model = dev.settings.model
    title = rng.choice(["Phone model", "Device info", "My phone", "Model number", "Warranty info"])
    return Spec(
        f"Create a note titled '{title}' whose text is this phone's model number.",
        lambda d, a: any(
            n.title.lower() == title.lower() and answer_matches(n.body, model) for n in d.apps["notes"].items
        ),
        [
            Open("Settings"),
            Tap(rid="about"),
            Open("Notes"),
            Tap(desc="New note"),
            Fill("title", title, "Title"),
            Fill("body", model, "Text"),
            Tap(rid="save"),
        ],
        {"model": model, "title": title},
    )


@template("cross.ingredient_to_task", "tasks", "hard", 8, apps=("recipes",))
def ingredient_to_task(dev, rng):
    r = rng.choice(dev.apps["recipes"].items)
    want = f"Buy {r.ingredients[0]}"
    return Spec(
        f"Add a to-do task 'Buy X' where X is the first ingredient of the recipe '{r.title}'.",
        lambda d, a: any(t.title.lower() == want.lower() for t in d.apps["tasks"].items),
        [
            Open("Recipes"),
            Tap(rid="recipe", text=r.title),
            Open("Tasks"),
            Tap(desc="Add task"),
            Fill("title", want, "Title"),
            Tap(rid="save"),
        ],
        {"recipe": r.title},
    )

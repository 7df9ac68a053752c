"""Calendar, Notes, Expenses and Tasks templates."""

from __future__ import annotations

import datetime as dt

from gui_jax.envs.sim.apps.base import TOPICS, WORDS, hhmm
from gui_jax.envs.sim.apps.expenses import CATEGORIES
from gui_jax.envs.sim.templates.base import Answer, Fill, Look, Open, Spec, Tap, answer_matches, template


# ---- calendar --------------------------------------------------------------------------------
def _event(dev, rng):
    return rng.choice(dev.apps["calendar"].events)


@template("calendar.event_time", "calendar", "easy", 3, answer=True)
def event_time(dev, rng):
    e = _event(dev, rng)
    return Spec(
        f"At what time does '{e.title}' start?",
        lambda d, a: answer_matches(a, e.time),
        [Open("Calendar"), Look(rid="event", text=e.title), Answer(e.time)],
        {"title": e.title, "time": e.time},
    )


@template("calendar.event_location", "calendar", "easy", 3, answer=True)
def event_location(dev, rng):
    e = _event(dev, rng)
    return Spec(
        f"Where does '{e.title}' take place?",
        lambda d, a: answer_matches(a, e.location),
        [Open("Calendar"), Look(rid="event", text=e.title), Answer(e.location)],
        {"title": e.title, "where": e.location},
    )


@template("calendar.event_date", "calendar", "easy", 4, answer=True)
def event_date(dev, rng):
    e = _event(dev, rng)
    return Spec(
        f"On which date is '{e.title}'? Answer as YYYY-MM-DD.",
        lambda d, a: answer_matches(a, e.date),
        [Open("Calendar"), Tap(rid="event", text=e.title), Answer(e.date)],
        {"title": e.title, "date": e.date},
    )


@template("calendar.count_day", "calendar", "medium", 3, answer=True)
def count_day(dev, rng):
    e = _event(dev, rng)
    n = sum(x.date == e.date for x in dev.apps["calendar"].events)
    return Spec(
        f"How many events do I have on {e.date}?",
        lambda d, a: answer_matches(a, n, numeric=True),
        [Open("Calendar"), Look(rid="event", text=e.title), Answer(str(n))],
        {"date": e.date, "n": n},
    )


@template("calendar.create", "calendar", "hard", 10)
def create_event(dev, rng):
    cal = dev.apps["calendar"]
    title = rng.choice([t for t in TOPICS if cal.by_title(t) is None] or ["Catch-up"]) + f" {rng.randint(2, 99)}"
    date = (cal.today() + dt.timedelta(days=rng.randint(1, 30))).isoformat()
    time = hhmm(rng.randint(7, 20), rng.choice([0, 15, 30, 45]))
    return Spec(
        f"Create a calendar event '{title}' on {date} at {time}.",
        lambda d, a: any(
            e.title.lower() == title.lower() and e.date == date and e.time == time for e in d.apps["calendar"].events
        ),
        [
            Open("Calendar"),
            Tap(desc="New event"),
            Fill("title", title, "Title"),
            Fill("date", date, "Date"),
            Fill("time", time, "Time"),
            Tap(rid="save"),
        ],
        {"title": title, "date": date, "time": time},
    )


@template("calendar.delete", "calendar", "medium", 5)
def delete_event(dev, rng):
    e = _event(dev, rng)
    eid = e.id
    return Spec(
        f"Delete the event '{e.title}' from my calendar.",
        lambda d, a: all(x.id != eid for x in d.apps["calendar"].events),
        [
            Open("Calendar"),
            Tap(rid="event", text=e.title),
            Tap(rid="delete"),
            Tap(text="Delete", instr="Confirm the deletion"),
        ],
        {"title": e.title},
    )


# ---- notes ------------------------------------------------------------------------------------
def _note(dev, rng):
    return rng.choice(dev.apps["notes"].items)


@template("notes.read", "notes", "easy", 4, answer=True)
def read_note(dev, rng):
    n = _note(dev, rng)
    return Spec(
        f"What is written in my note '{n.title}'?",
        lambda d, a: answer_matches(a, n.body),
        [Open("Notes"), Tap(rid="note", text=n.title), Answer(n.body)],
        {"title": n.title, "body": n.body},
    )


@template("notes.count", "notes", "easy", 3, answer=True)
def count_notes(dev, rng):
    notes = dev.apps["notes"].items
    return Spec(
        "How many notes do I have?",
        lambda d, a: answer_matches(a, len(notes), numeric=True),
        [Open("Notes"), Answer(str(len(notes)))],
        {"titles": [n.title for n in notes]},
    )


@template("notes.create", "notes", "medium", 8)
def create_note(dev, rng):
    title = f"{rng.choice(WORDS).capitalize()} {rng.choice(['plan', 'list', 'ideas', 'log'])}"
    body = " ".join(rng.sample(WORDS, 3))
    return Spec(
        f"Create a note titled '{title}' with the text '{body}'.",
        lambda d, a: any(
            n.title.lower() == title.lower() and answer_matches(n.body, body) for n in d.apps["notes"].items
        ),
        [
            Open("Notes"),
            Tap(desc="New note"),
            Fill("title", title, "Title"),
            Fill("body", body, "Text"),
            Tap(rid="save"),
        ],
        {"title": title, "body": body},
    )


@template("notes.delete", "notes", "medium", 5)
def delete_note(dev, rng):
    n = _note(dev, rng)
    nid = n.id
    return Spec(
        f"Delete the note '{n.title}'.",
        lambda d, a: all(x.id != nid for x in d.apps["notes"].items),
        [Open("Notes"), Tap(rid="note", text=n.title), Tap(rid="delete"), Tap(text="Delete", instr="Confirm")],
        {"title": n.title},
    )


@template("notes.append", "notes", "hard", 6)
def append_note(dev, rng):
    n = _note(dev, rng)
    nid, word = n.id, rng.choice([w for w in WORDS if w not in n.body])
    want = f"{n.body} {word}"
    return Spec(
        f"Add the word '{word}' at the end of the note '{n.title}' and save it.",
        lambda d, a: any(x.id == nid and x.body.split() == want.split() for x in d.apps["notes"].items),
        [Open("Notes"), Tap(rid="note", text=n.title), Fill("body", " " + word, "Text"), Tap(rid="save")],
        {"title": n.title, "word": word},
    )


# ---- expenses ----------------------------------------------------------------------------------
def _expense(dev, rng):
    return rng.choice(dev.apps["expenses"].items)


@template("expenses.amount", "expenses", "easy", 3, answer=True)
def expense_amount(dev, rng):
    e = _expense(dev, rng)
    return Spec(
        f"How much did I spend on '{e.name}'?",
        lambda d, a: answer_matches(a, e.amount, numeric=True),
        [Open("Expenses"), Look(rid="expense", text=e.name), Answer(f"${e.amount:.2f}")],
        {"name": e.name, "amount": e.amount},
    )


@template("expenses.total", "expenses", "easy", 3, answer=True)
def expense_total(dev, rng):
    total = dev.apps["expenses"].total()
    return Spec(
        "What is the total of all my expenses?",
        lambda d, a: answer_matches(a, total, numeric=True),
        [Open("Expenses"), Answer(f"${total:.2f}")],
        {"total": total},
    )


@template("expenses.add", "expenses", "hard", 9)
def add_expense(dev, rng):
    name = rng.choice(["Snacks", "Gift", "Books", "Shoes", "Pharmacy", "Flowers", "Hardware", "Tea"])
    amount = round(rng.randint(200, 9000) / 100, 2)
    cat = rng.choice(CATEGORIES)
    return Spec(
        f"Add an expense '{name}' of ${amount:.2f} in the {cat} category.",
        lambda d, a: any(
            e.name.lower() == name.lower() and abs(e.amount - amount) < 0.005 and e.category == cat
            for e in d.apps["expenses"].items
        ),
        [
            Open("Expenses"),
            Tap(desc="Add expense"),
            Fill("name", name, "Name"),
            Fill("amount", f"{amount:.2f}", "Amount"),
            Tap(rid=f"category_{CATEGORIES.index(cat)}", instr=f"Choose the {cat} category"),
            Tap(rid="save"),
        ],
        {"name": name, "amount": amount, "cat": cat},
    )


@template("expenses.delete", "expenses", "medium", 5)
def delete_expense(dev, rng):
    e = _expense(dev, rng)
    eid = e.id
    return Spec(
        f"Delete the expense '{e.name}'.",
        lambda d, a: all(x.id != eid for x in d.apps["expenses"].items),
        [Open("Expenses"), Tap(rid="expense", text=e.name), Tap(rid="delete"), Tap(text="Delete", instr="Confirm")],
        {"name": e.name},
    )


@template("expenses.category_total", "expenses", "hard", 3, answer=True, complexity=3.5)
def category_total(dev, rng):
    app = dev.apps["expenses"]
    cat = rng.choice(sorted({e.category for e in app.items}))
    total = app.total(cat)
    return Spec(
        f"How much did I spend in total in the {cat} category?",
        lambda d, a: answer_matches(a, total, numeric=True),
        [Open("Expenses"), Answer(f"${total:.2f}")],
        {"cat": cat, "total": total},
    )


# ---- tasks (to-do) -------------------------------------------------------------------------------
def _todo(dev, rng, done=None):
    return rng.choice([t for t in dev.apps["tasks"].items if done is None or t.done == done])


@template("tasks.complete", "tasks", "easy", 3)
def complete_task(dev, rng):
    items = dev.apps["tasks"].items
    if all(t.done for t in items):
        items[0].done = False
    t = _todo(dev, rng, done=False)
    tid = t.id
    return Spec(
        f"Mark the task '{t.title}' as done.",
        lambda d, a: any(x.id == tid and x.done for x in d.apps["tasks"].items),
        [Open("Tasks"), Tap(desc=f"Done: {t.title}", instr=f"Tick the checkbox of '{t.title}'")],
        {"title": t.title},
    )


@template("tasks.count_open", "tasks", "easy", 3, answer=True)
def count_open(dev, rng):
    items = dev.apps["tasks"].items
    n = sum(not t.done for t in items)
    return Spec(
        "How many tasks on my to-do list are not done yet?",
        lambda d, a: answer_matches(a, n, numeric=True),
        [Open("Tasks"), Answer(str(n))],
        {"state": [(t.title, t.done) for t in items]},
    )


@template("tasks.priority", "tasks", "easy", 3, answer=True)
def task_priority(dev, rng):
    t = _todo(dev, rng)
    return Spec(
        f"What is the priority of the task '{t.title}'?",
        lambda d, a: answer_matches(a, t.priority),
        [Open("Tasks"), Look(rid="task", text=t.title), Answer(t.priority)],
        {"title": t.title, "p": t.priority},
    )


@template("tasks.add", "tasks", "medium", 8)
def add_task(dev, rng):
    title = (
        rng.choice(
            [
                "Buy milk",
                "Call bank",
                "Email landlord",
                "Charge scooter",
                "Print boarding pass",
                "Repot cactus",
                "Sort photos",
                "Update resume",
            ]
        )
        + f" #{rng.randint(1, 50)}"
    )
    due = f"{dev.date[0]}-05-{rng.randint(1, 28):02d}"
    return Spec(
        f"Add a task '{title}' due on {due}.",
        lambda d, a: any(t.title.lower() == title.lower() and t.due == due for t in d.apps["tasks"].items),
        [
            Open("Tasks"),
            Tap(desc="Add task"),
            Fill("title", title, "Title"),
            Fill("due", due, "Due date"),
            Tap(rid="save"),
        ],
        {"title": title, "due": due},
    )


@template("tasks.clear_done", "tasks", "easy", 4, parametric=False)
def clear_done(dev, rng):
    items = dev.apps["tasks"].items
    if not any(t.done for t in items):
        items[0].done = True
    if all(t.done for t in items):
        items[-1].done = False
    keep = {t.id for t in items if not t.done}
    return Spec(
        "Delete all completed tasks from my to-do list.",
        lambda d, a: {t.id for t in d.apps["tasks"].items} == keep,
        [Open("Tasks"), Tap(rid="clear_done"), Tap(text="Clear", instr="Confirm")],
    )


@template("tasks.high_priority", "tasks", "medium", 3, answer=True)
def high_priority(dev, rng):
    items = dev.apps["tasks"].items
    for t in items:
        if t.priority == "High":
            t.priority = "Medium"
    for t in rng.sample(items, 2):
        t.priority, t.done = "High", False
    names = [t.title for t in items if t.priority == "High"]
    return Spec(
        "Which tasks have High priority? List their titles.",
        lambda d, a: answer_matches(a, names),
        [Open("Tasks"), Answer(", ".join(names))],
        {"names": names},
    )


@template("expenses.delete_category", "expenses", "hard", 8)
def delete_category(dev, rng):
    app = dev.apps["expenses"]
    cat = rng.choice(CATEGORIES)
    members = [e for e in app.items if e.category == cat]
    others = [e for e in app.items if e.category != cat]
    while len(members) < 2:  # always 2-3 deletions: move an expense into the category
        members.append(others.pop(0))
        members[-1].category = cat
    gone = members[:3]
    app.items[:] = [e for e in app.items if e.category != cat or e in gone]
    n_after = len(app.items) - len(gone)
    plan = [Open("Expenses")]
    for e in gone:
        plan += [Tap(rid="expense", text=e.name), Tap(rid="delete"), Tap(text="Delete", instr="Confirm")]
    return Spec(
        f"Delete every expense in the {cat} category.",
        lambda d, a: (
            not any(e.category == cat for e in d.apps["expenses"].items) and len(d.apps["expenses"].items) == n_after
        ),
        plan,
        {"cat": cat, "names": [e.name for e in gone]},
    )

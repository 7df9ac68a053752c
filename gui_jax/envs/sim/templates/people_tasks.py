"""Contacts and Messages templates."""

from __future__ import annotations

import re

from gui_jax.envs.sim.apps.base import full_name, phone
from gui_jax.envs.sim.apps.messages import SNIPPETS
from gui_jax.envs.sim.templates.base import Answer, Fill, Look, Open, Spec, Tap, answer_matches, template

REPLIES = [
    "On my way",
    "Sounds good",
    "See you at 6",
    "Thanks a lot",
    "Call you later",
    "Yes please",
    "Running late",
    "Got it",
    "Love it",
    "Not today",
]


def digits(s) -> str:
    return re.sub(r"\D", "", s or "")


def _contact(dev, rng, pred=None):
    items = [c for c in dev.apps["contacts"].items if pred is None or pred(c)]
    return rng.choice(items)


@template("contacts.phone_answer", "contacts", "easy", 3, answer=True)
def phone_answer(dev, rng):
    c = _contact(dev, rng)
    return Spec(
        f"What is {c.name}'s phone number?",
        lambda d, a: digits(a) == digits(c.phone) and len(digits(a)) > 0,
        [Open("Contacts"), Look(rid="contact", text=c.name), Answer(c.phone)],
        {"name": c.name},
    )


@template("contacts.email_answer", "contacts", "easy", 4, answer=True)
def email_answer(dev, rng):
    c = _contact(dev, rng)
    return Spec(
        f"What is the email address of {c.name}?",
        lambda d, a: answer_matches(a, c.email),
        [Open("Contacts"), Tap(rid="contact", text=c.name), Answer(c.email)],
        {"name": c.name},
    )


@template("contacts.company_answer", "contacts", "easy", 4, answer=True)
def company_answer(dev, rng):
    c = _contact(dev, rng)
    return Spec(
        f"Which company does {c.name} work for?",
        lambda d, a: answer_matches(a, c.company),
        [Open("Contacts"), Tap(rid="contact", text=c.name), Answer(c.company)],
        {"name": c.name},
    )


@template("contacts.favorite", "contacts", "easy", 4)
def favorite(dev, rng):
    c = _contact(dev, rng, lambda c: not c.favorite)
    cid = c.id
    return Spec(
        f"Add {c.name} to favourites.",
        lambda d, a: any(x.id == cid and x.favorite for x in d.apps["contacts"].items),
        [Open("Contacts"), Tap(rid="contact", text=c.name), Tap(rid="favorite", instr="Tap Star")],
        {"name": c.name},
    )


@template("contacts.add", "contacts", "medium", 8)
def add_contact(dev, rng):
    taken = {c.name for c in dev.apps["contacts"].items}
    name = next(n for n in (full_name(rng) for _ in range(100)) if n not in taken)
    ph = phone(rng)
    return Spec(
        f"Add a new contact named {name} with phone number {ph}.",
        lambda d, a: any(
            c.name.lower() == name.lower() and digits(c.phone) == digits(ph) for c in d.apps["contacts"].items
        ),
        [
            Open("Contacts"),
            Tap(desc="Add contact"),
            Fill("name", name, "Name"),
            Fill("phone", ph, "Phone"),
            Tap(rid="save"),
        ],
        {"name": name, "phone": ph},
    )


@template("contacts.delete", "contacts", "medium", 5)
def delete_contact(dev, rng):
    c = _contact(dev, rng)
    cid = c.id
    return Spec(
        f"Delete the contact {c.name}.",
        lambda d, a: all(x.id != cid for x in d.apps["contacts"].items),
        [
            Open("Contacts"),
            Tap(rid="contact", text=c.name),
            Tap(rid="delete"),
            Tap(text="Delete", instr="Confirm the deletion"),
        ],
        {"name": c.name},
    )


@template("contacts.edit_phone", "contacts", "hard", 8)
def edit_phone(dev, rng):
    c = _contact(dev, rng)
    cid, ph = c.id, phone(rng)
    return Spec(
        f"Change {c.name}'s phone number to {ph}.",
        lambda d, a: any(x.id == cid and digits(x.phone) == digits(ph) for x in d.apps["contacts"].items),
        [
            Open("Contacts"),
            Tap(rid="contact", text=c.name),
            Tap(rid="edit"),
            Tap(rid="clear_phone", instr="Clear the phone field"),
            Fill("phone", ph, "Phone"),
            Tap(rid="save"),
        ],
        {"name": c.name, "phone": ph},
    )


@template("contacts.favorites_answer", "contacts", "medium", 3, answer=True)
def favorites_answer(dev, rng):
    items = dev.apps["contacts"].items
    for c in items:
        c.favorite = False
    favs = rng.sample(items, 2)
    for c in favs:
        c.favorite = True
    names = [c.name for c in items if c.favorite]
    return Spec(
        "Which of my contacts are marked as favourites (starred)? List their names.",
        lambda d, a: answer_matches(a, names),
        [Open("Contacts"), Answer(", ".join(names))],
        {"names": names},
    )


# ---- messages ------------------------------------------------------------------------------
def _thread(dev, rng):
    return rng.choice(dev.apps["messages"].threads)


@template("messages.last_message", "messages", "easy", 3, answer=True)
def last_message(dev, rng):
    t = _thread(dev, rng)
    t.messages.append(("them", rng.choice(SNIPPETS)))
    last = t.messages[-1][1]
    return Spec(
        f"What did {t.peer} say in their most recent message?",
        lambda d, a: answer_matches(a, last),
        [Open("Messages"), Look(rid="conversation", text=t.peer), Answer(last)],
        {"peer": t.peer, "last": last},
    )


@template("messages.open_thread", "messages", "easy", 3)
def open_thread(dev, rng):
    t = _thread(dev, rng)
    tid = t.id

    def check(d, a):
        ref = d.top
        return ref.app == "messages" and ref.page == "thread" and ref.args.get("id") == tid

    return Spec(
        f"Open my conversation with {t.peer}.",
        check,
        [Open("Messages"), Tap(rid="conversation", text=t.peer)],
        {"peer": t.peer},
    )


@template("messages.reply", "messages", "medium", 6)
def reply(dev, rng):
    t = _thread(dev, rng)
    text = rng.choice(REPLIES)
    peer = t.peer
    return Spec(
        f"Reply to {peer} with the message '{text}'.",
        lambda d, a: any(answer_matches(m, text) for m in d.apps["messages"].sent_to(peer)[-1:]),
        [Open("Messages"), Tap(rid="conversation", text=peer), Fill("message", text, "Message"), Tap(rid="send")],
        {"peer": peer, "text": text},
    )


@template("messages.new_message", "messages", "hard", 8)
def new_message(dev, rng):
    number = phone(rng)
    text = rng.choice(REPLIES)
    return Spec(
        f"Send a text message to {number} saying '{text}'.",
        lambda d, a: any(
            digits(t.peer) == digits(number) and any(answer_matches(m, text) for s, m in t.messages if s == "me")
            for t in d.apps["messages"].threads
        ),
        [
            Open("Messages"),
            Tap(desc="New message"),
            Fill("to", number, "To"),
            Fill("message", text, "Message"),
            Tap(rid="send"),
        ],
        {"number": number, "text": text},
    )


@template("messages.unread_answer", "messages", "medium", 3, answer=True)
def unread_answer(dev, rng):
    threads = dev.apps["messages"].threads
    for t in threads:
        t.unread = False
    for t in rng.sample(threads, rng.randint(1, 2)):
        t.unread = True
    names = [t.peer for t in threads if t.unread]
    return Spec(
        "Which conversations have unread messages? Give the names.",
        lambda d, a: answer_matches(a, names),
        [Open("Messages"), Answer(", ".join(names))],
        {"names": names},
    )


@template("contacts.add_full", "contacts", "hard", 12)
def add_contact_full(dev, rng):
    from gui_jax.envs.sim.apps.base import COMPANIES

    taken = {c.name for c in dev.apps["contacts"].items}
    name = next(n for n in (full_name(rng) for _ in range(100)) if n not in taken)
    ph, company = phone(rng), rng.choice(COMPANIES)
    email = f"{name.split()[0].lower()}.{name.split()[1].lower()}@work.example"
    return Spec(
        f"Add a contact {name}: phone {ph}, email {email}, company {company}.",
        lambda d, a: any(
            c.name.lower() == name.lower()
            and digits(c.phone) == digits(ph)
            and c.email.lower() == email
            and c.company == company
            for c in d.apps["contacts"].items
        ),
        [
            Open("Contacts"),
            Tap(desc="Add contact"),
            Fill("name", name, "Name"),
            Fill("phone", ph, "Phone"),
            Fill("email", email, "Email"),
            Fill("company", company, "Company"),
            Tap(rid="save"),
        ],
        {"name": name, "phone": ph, "company": company},
    )

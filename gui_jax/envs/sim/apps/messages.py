"""Messages (SMS): conversations, thread view with a compose box, new message to a name or number."""

from __future__ import annotations

from dataclasses import dataclass, field

from gui_jax.envs.sim.apps.base import App, full_name, unique

SNIPPETS = [
    "Running 10 minutes late",
    "Can you call me back?",
    "See you at the station",
    "Thanks for dinner!",
    "Did you get the tickets?",
    "The meeting moved to Friday",
    "Happy birthday!",
    "Bring the charger please",
    "Lunch tomorrow?",
    "I sent the photos",
    "Where are the keys?",
    "Great job today",
]


@dataclass
class Thread:
    id: int
    peer: str  # contact name or number
    messages: list = field(default_factory=list)  # [(sender 'me'|'them', text)]
    unread: bool = False


class Messages(App):
    key, label, aliases, color = "messages", "Messages", ("sms", "text messages", "chat"), (30, 120, 220)

    def init_state(self):
        self.threads: list[Thread] = []

    def populate(self, rng):
        contacts = [c.name for c in self.dev.apps["contacts"].items] if "contacts" in self.dev.apps else []
        peers = rng.sample(contacts, min(len(contacts), rng.randint(4, 7))) if contacts else unique(rng, full_name, 5)
        for p in peers:
            msgs = [("them" if rng.random() < 0.6 else "me", s) for s in rng.sample(SNIPPETS, rng.randint(1, 3))]
            msgs.append(("them", rng.choice(SNIPPETS)))
            self.threads.append(Thread(self.new_id(), p, msgs, rng.random() < 0.4))

    def thread(self, peer):
        return next((t for t in self.threads if t.peer.lower() == peer.strip().lower()), None)

    def send(self, peer: str, text: str) -> None:
        t = self.thread(peer)
        if t is None:
            t = Thread(self.new_id(), peer.strip(), [])
            self.threads.insert(0, t)
        else:
            self.threads.remove(t)
            self.threads.insert(0, t)
        t.messages.append(("me", text))

    def sent_to(self, peer: str) -> list:
        t = self.thread(peer)
        return [m for s, m in t.messages if s == "me"] if t else []

    def open_thread(self, peer: str) -> None:
        t = self.thread(peer)
        if t is None:
            t = Thread(self.new_id(), peer, [])
            self.threads.insert(0, t)
        self.dev.open_app(self.key)
        self.open("thread", id=t.id)

    def page_main(self, ui, ref):
        ui.appbar("Messages", back=False)
        for t in self.threads:
            last = t.messages[-1][1] if t.messages else ""
            ui.row(
                t.peer + (" (new)" if t.unread else ""),
                last,
                icon=t.peer[0],
                on_click=lambda t=t: self.open("thread", id=t.id),
                rid="conversation",
            )
        ui.fab("New message", lambda: self.open("new"))

    def page_thread(self, ui, ref):
        t = next((x for x in self.threads if x.id == ref.args["id"]), None)
        if t is None:
            return ui.appbar("Conversation")
        t.unread = False

        def send():
            text = ref.form.get("message", "").strip()
            if text:
                self.send(t.peer, text)
                ref.form["message"] = ""

        ui.appbar(t.peer)
        for who, text in t.messages:
            ui.text(("You: " if who == "me" else f"{t.peer.split()[0]}: ") + text, rid="message_" + who)
        ui.field("Message", "message", on_submit=send)
        ui.button("Send", send, "send")

    def page_new(self, ui, ref):
        def send():
            to, text = ref.form.get("to", "").strip(), ref.form.get("message", "").strip()
            if not to or not text:
                return self.dev.toast("Enter a recipient and a message")
            self.send(to, text)
            self.dev.up()
            self.dev.toast("Message sent")

        ui.appbar("New message")
        ui.field("To (name or number)", "to")
        ui.field("Message", "message")
        ui.button("Send", send, "send")

"""Notes: list of notes, editor (title + body), delete with confirmation."""

from __future__ import annotations

from dataclasses import dataclass

from gui_jax.envs.sim.apps.base import WORDS, App


@dataclass
class Note:
    id: int
    title: str
    body: str


NOTE_TITLES = [
    "Groceries",
    "Ideas",
    "Packing list",
    "Books to read",
    "Gift ideas",
    "Meeting notes",
    "Recipes to try",
    "Passwords hint",
    "Garden plan",
    "Travel",
    "Workout",
    "Movies",
]


class Notes(App):
    key, label, aliases, color = "notes", "Notes", ("notepad", "memo", "markor", "editor"), (240, 180, 40)

    def init_state(self):
        self.items: list[Note] = []

    def populate(self, rng):
        for t in rng.sample(NOTE_TITLES, rng.randint(4, 7)):
            self.items.append(Note(self.new_id(), t, " ".join(rng.sample(WORDS, 3))))

    def by_title(self, title):
        return next((n for n in self.items if n.title.lower() == title.strip().lower()), None)

    def page_main(self, ui, ref):
        ui.appbar("Notes", back=False)
        if not self.items:
            ui.text("No notes yet", rid="empty")
        for n in self.items:
            ui.row(
                n.title,
                n.body[:30],
                on_click=lambda n=n: self.open("edit", id=n.id, form={"title": n.title, "body": n.body}),
                rid="note",
            )
        ui.fab("New note", lambda: self.open("edit", id=None))

    def page_edit(self, ui, ref):
        nid = ref.args.get("id")
        note = next((n for n in self.items if n.id == nid), None)

        def save():
            title = ref.form.get("title", "").strip()
            if not title:
                return self.dev.toast("Title is required")
            if note is None:
                self.items.append(Note(self.new_id(), title, ref.form.get("body", "").strip()))
            else:
                note.title, note.body = title, ref.form.get("body", "").strip()
            self.dev.up()
            self.dev.toast("Note saved")

        def delete():
            self.items.remove(note)
            self.dev.up()

        actions = [("Save", save, "save")]
        if note is not None:
            actions.insert(
                0, ("Delete", lambda: self.confirm("Delete note?", f"Delete '{note.title}'?", delete), "delete")
            )
        ui.appbar("Edit note" if note else "New note", actions=actions)
        ui.field("Title", "title")
        ui.field("Text", "body")

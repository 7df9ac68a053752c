"""Tasks (to-do list): check off, add with due date and priority, clear completed."""

from __future__ import annotations

from dataclasses import dataclass

from gui_jax.envs.sim.apps.base import App

TODO_TITLES = [
    "Pay rent",
    "Call plumber",
    "Buy stamps",
    "Renew passport",
    "Book dentist",
    "Water plants",
    "Send invoice",
    "Fix bike",
    "Return library book",
    "Clean garage",
    "Plan trip",
    "Backup laptop",
    "Write report",
    "Order printer ink",
    "Cancel gym trial",
    "Pick up parcel",
]
PRIORITIES = ["Low", "Medium", "High"]


@dataclass
class Todo:
    id: int
    title: str
    due: str
    priority: str
    done: bool = False


class Tasks(App):
    key, label, aliases, color = "tasks", "Tasks", ("to-do", "todo", "to do list", "reminders"), (70, 90, 200)

    def init_state(self):
        self.items: list[Todo] = []

    def populate(self, rng):
        for t in rng.sample(TODO_TITLES, rng.randint(6, 10)):
            d = rng.randint(1, 28)
            self.items.append(
                Todo(self.new_id(), t, f"{self.dev.date[0]}-04-{d:02d}", rng.choice(PRIORITIES), rng.random() < 0.35)
            )

    def by_title(self, title):
        return next((t for t in self.items if t.title.lower() == title.strip().lower()), None)

    def page_main(self, ui, ref):
        def clear():
            self.items[:] = [t for t in self.items if not t.done]
            self.dev.toast("Completed tasks cleared")

        ui.appbar(
            "Tasks",
            back=False,
            actions=[
                (
                    "Clear done",
                    lambda: self.confirm("Clear completed?", "Delete all completed tasks?", clear, ok="Clear"),
                    "clear_done",
                )
            ],
        )
        for t in self.items:
            ui.row(
                t.title,
                f"Due {t.due}, {t.priority} priority" + (" - done" if t.done else ""),
                checkbox=(t.done, lambda t=t: setattr(t, "done", not t.done), f"Done: {t.title}"),
                on_click=lambda t=t: self.open("detail", id=t.id),
                rid="task",
            )
        ui.fab("Add task", lambda: self.open("new", form={"priority": "Medium"}))

    def page_detail(self, ui, ref):
        t = next((x for x in self.items if x.id == ref.args["id"]), None)
        if t is None:
            return ui.appbar("Task")

        def delete():
            self.items.remove(t)
            self.dev.up()

        ui.appbar(t.title)
        ui.detail("Due date", t.due, "due")
        ui.detail("Priority", t.priority, "priority")
        ui.switch("Completed", t.done, lambda: setattr(t, "done", not t.done), "completed")
        ui.button(
            "Delete task", lambda: self.confirm("Delete task?", f"Delete '{t.title}'?", delete), "delete", primary=False
        )

    def page_new(self, ui, ref):
        def save():
            title = ref.form.get("title", "").strip()
            if not title:
                return self.dev.toast("Title is required")
            self.items.append(
                Todo(self.new_id(), title, ref.form.get("due", "").strip(), ref.form.get("priority", "Medium"))
            )
            self.dev.up()

        ui.appbar("New task", actions=[("Save", save, "save")])
        ui.field("Title", "title")
        ui.field("Due date (YYYY-MM-DD)", "due")
        ui.text("Priority", size="small")
        ui.buttons(
            [(p, lambda p=p: ref.form.__setitem__("priority", p)) for p in PRIORITIES],
            rid="priority",
            selected=ref.form.get("priority", "Medium"),
        )

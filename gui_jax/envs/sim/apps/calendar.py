"""Calendar: agenda of upcoming events grouped by day; add / view / delete events."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from gui_jax.envs.sim.apps.base import PLACES, TOPICS, App, hhmm


@dataclass
class Event:
    id: int
    title: str
    date: str  # YYYY-MM-DD
    time: str  # HH:MM
    location: str = ""


def day_name(date: str) -> str:
    return dt.date.fromisoformat(date).strftime("%A, %B %d").replace(" 0", " ")


class Calendar(App):
    key, label, aliases, color = "calendar", "Calendar", ("agenda", "schedule", "events"), (220, 80, 60)

    def init_state(self):
        self.events: list[Event] = []

    def today(self) -> dt.date:
        return dt.date(*self.dev.date)

    def populate(self, rng):
        titles = rng.sample(TOPICS, rng.randint(8, 12))
        for t in titles:
            d = self.today() + dt.timedelta(days=rng.randint(0, 13))
            self.add(t, d.isoformat(), hhmm(rng.randint(8, 19), rng.choice([0, 30])), rng.choice(PLACES))

    def add(self, title, date, time, location="") -> Event:
        e = Event(self.new_id(), title, date, time, location)
        self.events.append(e)
        self.events.sort(key=lambda e: (e.date, e.time, e.title))
        return e

    def by_title(self, title):
        return next((e for e in self.events if e.title.lower() == title.strip().lower()), None)

    def page_main(self, ui, ref):
        ui.appbar("Calendar", back=False)
        last = None
        for e in self.events:
            if e.date != last:
                ui.text(
                    day_name(e.date) + (" (today)" if e.date == self.today().isoformat() else ""),
                    size="header",
                    rid="day",
                )
                last = e.date
            ui.row(e.title, f"{e.time}  {e.location}", on_click=lambda e=e: self.open("event", id=e.id), rid="event")
        ui.fab("New event", lambda: self.open("new"))

    def page_event(self, ui, ref):
        e = next((x for x in self.events if x.id == ref.args["id"]), None)
        if e is None:
            return ui.appbar("Event")

        def delete():
            self.events.remove(e)
            self.dev.up()
            self.dev.toast("Event deleted")

        ui.appbar(e.title)
        ui.detail("Date", f"{e.date} ({day_name(e.date)})", "date")
        ui.detail("Time", e.time, "time")
        ui.detail("Location", e.location or "-", "location")
        ui.button(
            "Delete event",
            lambda: self.confirm("Delete event?", f"Delete '{e.title}'?", delete),
            "delete",
            primary=False,
        )

    def page_new(self, ui, ref):
        def save():
            title = ref.form.get("title", "").strip()
            date, time = ref.form.get("date", "").strip(), ref.form.get("time", "").strip()
            try:
                dt.date.fromisoformat(date)
            except ValueError:
                return self.dev.toast("Date must be YYYY-MM-DD")
            m = re.fullmatch(r"(\d{1,2}):(\d{2})", time)
            if not title or not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
                return self.dev.toast("Enter a title and a time HH:MM")
            self.add(title, date, hhmm(int(m.group(1)), int(m.group(2))), ref.form.get("location", "").strip())
            self.dev.up()
            self.dev.toast("Event saved")

        ui.appbar("New event", actions=[("Save", save, "save")])
        ui.field("Title", "title")
        ui.field("Date (YYYY-MM-DD)", "date")
        ui.field("Time (HH:MM)", "time")
        ui.field("Location", "location")

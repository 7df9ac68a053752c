"""Clock: alarms (list, add, toggle, delete), timer and stopwatch."""

from __future__ import annotations

from dataclasses import dataclass

from gui_jax.envs.sim.apps.base import App, hhmm


@dataclass
class Alarm:
    id: int
    hour: int
    minute: int
    label: str = ""
    enabled: bool = True

    @property
    def time(self):
        return hhmm(self.hour, self.minute)


LABELS = ["Wake up", "Gym", "Meds", "School run", "Standup", "Laundry", "Call mom", "Water plants"]


class Clock(App):
    key, label, aliases, color = "clock", "Clock", ("alarm", "alarms", "timer", "stopwatch"), (60, 100, 200)

    def init_state(self):
        self.alarms: list[Alarm] = []
        self.stopwatch_running = False
        self.timer_seconds, self.timer_running = 0, False
        self.tab = "Alarms"

    def populate(self, rng):
        times = set()
        for _ in range(rng.randint(3, 6)):
            h, m = rng.randint(5, 22), rng.choice([0, 15, 30, 45])
            if (h, m) in times:
                continue
            times.add((h, m))
            self.alarms.append(Alarm(self.new_id(), h, m, rng.choice(LABELS), rng.random() < 0.6))
        self.alarms.sort(key=lambda a: (a.hour, a.minute))

    def find(self, time: str):
        return next((a for a in self.alarms if a.time == time), None)

    def _tabs(self, ui):
        def go(t):
            def fn():
                self.tab = t
                self.dev.focus = None
                self.dev.top.page = {"Alarms": "main", "Timer": "timer", "Stopwatch": "stopwatch"}[t]
                self.dev.top.scroll = 0

            return fn

        ui.buttons([(t, go(t)) for t in ("Alarms", "Timer", "Stopwatch")], rid="tab", selected=self.tab)

    def page_main(self, ui, ref):
        self.tab = "Alarms"
        ui.appbar("Clock", back=False)
        self._tabs(ui)
        if not self.alarms:
            ui.text("No alarms", rid="empty")
        for a in self.alarms:
            ui.switch(
                f"{a.time}  {a.label or 'Alarm'}",
                a.enabled,
                lambda a=a: setattr(a, "enabled", not a.enabled),
                "alarm_switch",
                on_row=lambda a=a: self.open("alarm", id=a.id),
            )
        ui.fab("Add alarm", lambda: self.open("new_alarm"))

    def page_alarm(self, ui, ref):
        a = next((x for x in self.alarms if x.id == ref.args["id"]), None)
        if a is None:
            return ui.appbar("Alarm")
        ui.appbar(
            f"Alarm {a.time}",
            actions=[
                (
                    "Delete",
                    lambda: self.confirm(
                        "Delete alarm?", f"Delete the {a.time} alarm?", lambda: (self.alarms.remove(a), self.dev.up())
                    ),
                    "delete",
                )
            ],
        )
        ui.detail("Time", a.time, "time")
        ui.detail("Label", a.label or "-", "label")
        ui.switch("Enabled", a.enabled, lambda: setattr(a, "enabled", not a.enabled), "enabled")

    def page_new_alarm(self, ui, ref):
        def save():
            try:
                h, m = int(ref.form.get("hour", "")), int(ref.form.get("minute", ""))
            except ValueError:
                return self.dev.toast("Enter hour and minute")
            if not (0 <= h < 24 and 0 <= m < 60):
                return self.dev.toast("Invalid time")
            self.alarms.append(Alarm(self.new_id(), h, m, ref.form.get("label", "").strip(), True))
            self.alarms.sort(key=lambda a: (a.hour, a.minute))
            self.dev.up()
            self.dev.toast(f"Alarm set for {hhmm(h, m)}")

        ui.appbar("New alarm", actions=[("Save", save, "save")])
        ui.field("Hour (0-23)", "hour")
        ui.field("Minute (0-59)", "minute")
        ui.field("Label", "label")

    def page_timer(self, ui, ref):
        self.tab = "Timer"
        ui.appbar("Clock", back=False)
        self._tabs(ui)

        def start():
            try:
                mins = int(ref.form.get("minutes", "") or 0)
                secs = int(ref.form.get("seconds", "") or 0)
            except ValueError:
                return self.dev.toast("Enter a number")
            if mins * 60 + secs <= 0:
                return self.dev.toast("Set a duration first")
            self.timer_seconds, self.timer_running = mins * 60 + secs, True

        if self.timer_running:
            ui.text(
                f"Timer running: {self.timer_seconds // 60:02d}:{self.timer_seconds % 60:02d}", rid="timer", size="big"
            )
            ui.button("Cancel timer", lambda: setattr(self, "timer_running", False), "cancel")
        else:
            ui.field("Minutes", "minutes")
            ui.field("Seconds", "seconds")
            ui.button("Start", start, "start")

    def page_stopwatch(self, ui, ref):
        self.tab = "Stopwatch"
        ui.appbar("Clock", back=False)
        self._tabs(ui)
        ui.text("00:03.2" if self.stopwatch_running else "00:00.0", rid="elapsed", size="big")
        if self.stopwatch_running:
            ui.button("Stop", lambda: setattr(self, "stopwatch_running", False), "stop")
        else:
            ui.button("Start", lambda: setattr(self, "stopwatch_running", True), "start")

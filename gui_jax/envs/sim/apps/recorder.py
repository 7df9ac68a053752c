"""Audio recorder: record / stop (save dialog with a name), list of recordings, rename, delete."""

from __future__ import annotations

from dataclasses import dataclass

from gui_jax.envs.sim.apps.base import WORDS, App


@dataclass
class Recording:
    id: int
    name: str
    seconds: int

    @property
    def duration(self) -> str:
        return f"{self.seconds // 60}:{self.seconds % 60:02d}"


class Recorder(App):
    key, label, aliases, color = (
        "recorder",
        "Recorder",
        ("audio recorder", "voice recorder", "voice memo"),
        (210, 60, 90),
    )

    def init_state(self):
        self.items: list[Recording] = []
        self.recording = False

    def populate(self, rng):
        for w in rng.sample(WORDS, rng.randint(3, 6)):
            self.items.append(Recording(self.new_id(), f"{w.capitalize()} memo", rng.randint(5, 600)))

    def by_name(self, name):
        return next((r for r in self.items if r.name.lower() == name.strip().lower()), None)

    def _stop(self):
        ref = self.dev.top
        self.recording = False
        ref.form["rec_name"] = ""

        def save():
            name = ref.form.get("rec_name", "").strip() or f"Recording {len(self.items) + 1}"
            self.items.insert(0, Recording(self.new_id(), name, 7))
            self.dev.close_dialog()
            self.dev.toast("Recording saved")

        def discard():
            self.dev.close_dialog()

        self.dev.dialog(
            "Save recording",
            "Name (optional)",
            [("Discard", discard), ("Save", save)],
            [("Recording name", "rec_name")],
        )

    def page_main(self, ui, ref):
        ui.appbar("Recorder", back=False)
        if self.recording:
            ui.text("Recording... 00:07", rid="status", size="big")
            ui.button("Stop", self._stop, "stop")
        else:
            ui.text("Ready", rid="status", size="big")
            ui.button("Record", lambda: setattr(self, "recording", True), "record")
        ui.text("Recordings", size="header")
        for r in self.items:
            ui.row(r.name, r.duration, on_click=lambda r=r: self.open("detail", id=r.id), rid="recording")

    def page_detail(self, ui, ref):
        r = next((x for x in self.items if x.id == ref.args["id"]), None)
        if r is None:
            return ui.appbar("Recording")

        def delete():
            self.items.remove(r)
            self.dev.up()

        def rename():
            new = ref.form.get("new_name", "").strip()
            if new:
                r.name = new
            self.dev.close_dialog()

        ui.appbar(r.name)
        ui.detail("Duration", r.duration, "duration")
        ui.button(
            "Rename",
            lambda: (
                ref.form.__setitem__("new_name", ""),
                self.dev.dialog(
                    "Rename recording",
                    "",
                    [("Cancel", self.dev.close_dialog), ("OK", rename)],
                    [("New name", "new_name")],
                ),
            ),
            "rename",
            primary=False,
        )
        ui.button(
            "Delete", lambda: self.confirm("Delete recording?", f"Delete {r.name}?", delete), "delete", primary=False
        )

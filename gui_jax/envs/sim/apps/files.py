"""Files: folders with files; file details, rename (dialog), delete (confirmation), new folder."""

from __future__ import annotations

from dataclasses import dataclass

from gui_jax.envs.sim.apps.base import WORDS, App

FOLDERS = ["Documents", "Downloads", "Pictures", "Music", "Recordings"]
EXT = {"Documents": ".pdf", "Downloads": ".zip", "Pictures": ".jpg", "Music": ".mp3", "Recordings": ".m4a"}


@dataclass
class File:
    id: int
    name: str
    folder: str
    size_kb: int

    @property
    def size(self) -> str:
        return f"{self.size_kb / 1024:.1f} MB" if self.size_kb >= 1024 else f"{self.size_kb} KB"


class Files(App):
    key, label, aliases, color = "files", "Files", ("file manager", "my files", "documents"), (120, 120, 40)

    def init_state(self):
        self.folders = list(FOLDERS)
        self.items: list[File] = []

    def populate(self, rng):
        for f in FOLDERS:
            for w in rng.sample(WORDS, rng.randint(2, 6)):
                self.items.append(File(self.new_id(), f"{w}_{rng.randint(1, 99)}{EXT[f]}", f, rng.randint(20, 9000)))

    def in_folder(self, folder):
        return sorted((f for f in self.items if f.folder == folder), key=lambda f: f.name)

    def by_name(self, name):
        return next((f for f in self.items if f.name.lower() == name.strip().lower()), None)

    def page_main(self, ui, ref):
        def new_folder():
            name = ref.form.get("folder", "").strip()
            if name and name not in self.folders:
                self.folders.append(name)
            self.dev.close_dialog()

        ui.appbar(
            "Files",
            back=False,
            actions=[
                (
                    "New folder",
                    lambda: self.dev.dialog(
                        "New folder",
                        "",
                        [("Cancel", self.dev.close_dialog), ("Create", new_folder)],
                        [("Folder name", "folder")],
                    ),
                    "new_folder",
                )
            ],
        )
        for f in self.folders:
            ui.row(
                f,
                f"{len(self.in_folder(f))} files",
                icon="F",
                on_click=lambda f=f: self.open("folder", name=f),
                rid="folder",
            )

    def page_folder(self, ui, ref):
        folder = ref.args["name"]
        ui.appbar(folder)
        files = self.in_folder(folder)
        if not files:
            ui.text("This folder is empty", rid="empty")
        for f in files:
            ui.row(f.name, f.size, on_click=lambda f=f: self.open("file", id=f.id), rid="file")

    def page_file(self, ui, ref):
        f = next((x for x in self.items if x.id == ref.args["id"]), None)
        if f is None:
            return ui.appbar("File")

        def delete():
            self.items.remove(f)
            self.dev.up()
            self.dev.toast("File deleted")

        def rename():
            new = ref.form.get("new_name", "").strip()
            if new:
                f.name = new
            self.dev.close_dialog()

        ui.appbar(f.name)
        ui.detail("Folder", f.folder, "folder")
        ui.detail("Size", f.size, "size")
        ui.button(
            "Rename",
            lambda: (
                ref.form.__setitem__("new_name", ""),
                self.dev.dialog(
                    "Rename file", "", [("Cancel", self.dev.close_dialog), ("OK", rename)], [("New name", "new_name")]
                ),
            ),
            "rename",
            primary=False,
        )
        ui.button("Delete", lambda: self.confirm("Delete file?", f"Delete {f.name}?", delete), "delete", primary=False)

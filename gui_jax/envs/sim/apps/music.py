"""Music: song library, now playing, playlists (create, add songs)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gui_jax.envs.sim.apps.base import App

ARTISTS = ["The Lanterns", "Nova Grey", "Blue Meridian", "Kai Sol", "Paper Moons", "Ruby Vale", "Echo Park Trio"]
SONG_WORDS = [
    "Midnight",
    "Golden",
    "River",
    "Neon",
    "Quiet",
    "Summer",
    "Falling",
    "Electric",
    "Paper",
    "Wild",
    "Ocean",
    "Silver",
]
SONG_NOUNS = ["Lights", "Heart", "Road", "Dreams", "Skies", "Fire", "Echoes", "Waves", "Garden", "Letters"]


@dataclass
class Song:
    id: int
    title: str
    artist: str
    seconds: int


@dataclass
class Playlist:
    id: int
    name: str
    songs: list = field(default_factory=list)  # song ids


class Music(App):
    key, label, aliases, color = "music", "Music", ("music player", "songs", "player", "retro music"), (150, 70, 200)

    def init_state(self):
        self.songs: list[Song] = []
        self.playlists: list[Playlist] = []
        self.playing = None  # song id

    def populate(self, rng):
        titles = set()
        while len(titles) < rng.randint(10, 16):
            titles.add(f"{rng.choice(SONG_WORDS)} {rng.choice(SONG_NOUNS)}")
        for t in sorted(titles):
            self.songs.append(Song(self.new_id(), t, rng.choice(ARTISTS), rng.randint(120, 330)))
        for name in rng.sample(["Chill", "Workout", "Road trip", "Focus"], 2):
            self.playlists.append(Playlist(self.new_id(), name, [s.id for s in rng.sample(self.songs, 3)]))

    def song(self, title):
        return next((s for s in self.songs if s.title.lower() == title.strip().lower()), None)

    def playlist(self, name):
        return next((p for p in self.playlists if p.name.lower() == name.strip().lower()), None)

    def _tabs(self, ui, current):
        def go(page):
            def fn():
                self.dev.top.page, self.dev.top.scroll = page, 0

            return fn

        ui.buttons([("Songs", go("main")), ("Playlists", go("playlists"))], rid="tab", selected=current)

    def page_main(self, ui, ref):
        ui.appbar("Music", back=False)
        self._tabs(ui, "Songs")
        now = next((s for s in self.songs if s.id == self.playing), None)
        if now is not None:
            ui.row(
                f"Now playing: {now.title}",
                now.artist,
                rid="now_playing",
                on_click=lambda: setattr(self, "playing", None),
                right="Pause",
            )
        for s in self.songs:
            ui.row(
                s.title,
                f"{s.artist} - {s.seconds // 60}:{s.seconds % 60:02d}",
                on_click=lambda s=s: setattr(self, "playing", s.id),
                rid="song",
                on_long=lambda s=s: self._add_dialog(s),
            )

    def _add_dialog(self, s):
        def add(p):
            def fn():
                if s.id not in p.songs:
                    p.songs.append(s.id)
                self.dev.close_dialog()
                self.dev.toast(f"Added to {p.name}")

            return fn

        self.dev.dialog(
            f"Add '{s.title}' to playlist",
            "",
            [(p.name, add(p)) for p in self.playlists[-3:]] + [("Cancel", self.dev.close_dialog)],
        )

    def page_playlists(self, ui, ref):
        def create():
            name = ref.form.get("playlist", "").strip()
            if name and self.playlist(name) is None:
                self.playlists.append(Playlist(self.new_id(), name))
            self.dev.close_dialog()

        ui.appbar(
            "Music",
            back=False,
            actions=[
                (
                    "New",
                    lambda: (
                        ref.form.__setitem__("playlist", ""),
                        self.dev.dialog(
                            "New playlist",
                            "",
                            [("Cancel", self.dev.close_dialog), ("Create", create)],
                            [("Playlist name", "playlist")],
                        ),
                    ),
                    "new_playlist",
                )
            ],
        )
        self._tabs(ui, "Playlists")
        for p in self.playlists:
            ui.row(p.name, f"{len(p.songs)} songs", on_click=lambda p=p: self.open("playlist", id=p.id), rid="playlist")

    def page_playlist(self, ui, ref):
        p = next((x for x in self.playlists if x.id == ref.args["id"]), None)
        if p is None:
            return ui.appbar("Playlist")
        ui.appbar(p.name)
        if not p.songs:
            ui.text("No songs yet. Long-press a song in Songs to add it.", rid="empty")
        for sid in p.songs:
            s = next(x for x in self.songs if x.id == sid)
            ui.row(s.title, s.artist, rid="playlist_song")

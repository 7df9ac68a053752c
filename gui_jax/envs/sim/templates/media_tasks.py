"""Recipes, Files, Recorder and Music templates."""

from __future__ import annotations

from gui_jax.envs.sim.apps.base import WORDS
from gui_jax.envs.sim.apps.files import EXT
from gui_jax.envs.sim.templates.base import Answer, Fill, Look, Open, Spec, Tap, answer_matches, template


# ---- recipes ----------------------------------------------------------------------------------
def _recipe(dev, rng):
    return rng.choice(dev.apps["recipes"].items)


@template("recipes.servings", "recipes", "easy", 3, answer=True)
def servings(dev, rng):
    r = _recipe(dev, rng)
    return Spec(
        f"How many servings does the recipe '{r.title}' make?",
        lambda d, a: answer_matches(a, r.servings, numeric=True),
        [Open("Recipes"), Look(rid="recipe", text=r.title), Answer(str(r.servings))],
        {"title": r.title, "n": r.servings},
    )


@template("recipes.prep_time", "recipes", "easy", 3, answer=True)
def prep_time(dev, rng):
    r = _recipe(dev, rng)
    return Spec(
        f"How many minutes does it take to prepare '{r.title}'?",
        lambda d, a: answer_matches(a, r.minutes, numeric=True),
        [Open("Recipes"), Look(rid="recipe", text=r.title), Answer(f"{r.minutes} minutes")],
        {"title": r.title, "m": r.minutes},
    )


@template("recipes.favorite", "recipes", "easy", 4)
def fav_recipe(dev, rng):
    r = rng.choice([x for x in dev.apps["recipes"].items if not x.favorite])
    rid_ = r.id
    return Spec(
        f"Star the recipe '{r.title}' as a favourite.",
        lambda d, a: any(x.id == rid_ and x.favorite for x in d.apps["recipes"].items),
        [Open("Recipes"), Tap(rid="recipe", text=r.title), Tap(rid="favorite", instr="Tap Star")],
        {"title": r.title},
    )


@template("recipes.ingredients", "recipes", "medium", 4, answer=True)
def ingredients(dev, rng):
    r = _recipe(dev, rng)
    return Spec(
        f"What are the ingredients of '{r.title}'?",
        lambda d, a: answer_matches(a, r.ingredients),
        [
            Open("Recipes"),
            Tap(rid="recipe", text=r.title),
            Look(rid="ingredient", text="- " + r.ingredients[-1]),
            Answer(", ".join(r.ingredients)),
        ],
        {"title": r.title},
    )


@template("recipes.add", "recipes", "hard", 8)
def add_recipe(dev, rng):
    adj = rng.choice(["Spicy", "Easy", "Grandma", "Quick", "Smoky", "Vegan"])
    title = f"{adj} {rng.choice(['stew', 'tacos', 'salad', 'noodles', 'muffins', 'toast'])}"
    n = rng.randint(1, 12)
    return Spec(
        f"Add a new recipe called '{title}' that serves {n}.",
        lambda d, a: any(r.title.lower() == title.lower() and r.servings == n for r in d.apps["recipes"].items),
        [
            Open("Recipes"),
            Tap(desc="Add recipe"),
            Fill("title", title, "Title"),
            Fill("servings", str(n), "Servings"),
            Tap(rid="save"),
        ],
        {"title": title, "n": n},
    )


# ---- files ------------------------------------------------------------------------------------
def _file(dev, rng):
    return rng.choice(dev.apps["files"].items)


@template("files.size", "files", "easy", 4, answer=True)
def file_size(dev, rng):
    f = _file(dev, rng)
    return Spec(
        f"What is the size of the file '{f.name}' in the {f.folder} folder?",
        lambda d, a: answer_matches(a, f.size),
        [Open("Files"), Tap(rid="folder", text=f.folder), Look(rid="file", text=f.name), Answer(f.size)],
        {"name": f.name},
    )


@template("files.count", "files", "easy", 3, answer=True)
def file_count(dev, rng):
    app = dev.apps["files"]
    folder = rng.choice(app.folders)
    n = len(app.in_folder(folder))
    return Spec(
        f"How many files are in the {folder} folder?",
        lambda d, a: answer_matches(a, n, numeric=True),
        [Open("Files"), Answer(str(n))],
        {"folder": folder, "files": [f.name for f in app.in_folder(folder)]},
    )


@template("files.delete", "files", "medium", 6)
def delete_file(dev, rng):
    f = _file(dev, rng)
    fid = f.id
    return Spec(
        f"Delete the file '{f.name}' from {f.folder}.",
        lambda d, a: all(x.id != fid for x in d.apps["files"].items),
        [
            Open("Files"),
            Tap(rid="folder", text=f.folder),
            Tap(rid="file", text=f.name),
            Tap(rid="delete"),
            Tap(text="Delete", instr="Confirm"),
        ],
        {"name": f.name},
    )


@template("files.rename", "files", "hard", 8)
def rename_file(dev, rng):
    f = _file(dev, rng)
    fid = f.id
    new = f"{rng.choice(WORDS)}_{rng.choice(WORDS)}{EXT[f.folder]}"
    return Spec(
        f"Rename the file '{f.name}' in {f.folder} to '{new}'.",
        lambda d, a: any(x.id == fid and x.name == new for x in d.apps["files"].items),
        [
            Open("Files"),
            Tap(rid="folder", text=f.folder),
            Tap(rid="file", text=f.name),
            Tap(rid="rename"),
            Fill("new_name", new, "New name"),
            Tap(text="OK"),
        ],
        {"name": f.name, "new": new},
    )


@template("files.new_folder", "files", "medium", 6)
def new_folder(dev, rng):
    name = f"{rng.choice(WORDS).capitalize()} {rng.randint(1, 99)}"
    return Spec(
        f"Create a new folder named '{name}'.",
        lambda d, a: name in d.apps["files"].folders,
        [Open("Files"), Tap(rid="new_folder"), Fill("folder", name, "Folder name"), Tap(text="Create")],
        {"name": name},
    )


# ---- recorder -----------------------------------------------------------------------------------
@template("recorder.record", "recorder", "easy", 5, parametric=False)
def record(dev, rng):
    n0 = len(dev.apps["recorder"].items)
    return Spec(
        "Record an audio clip and save it.",
        lambda d, a: len(d.apps["recorder"].items) == n0 + 1,
        [Open("Recorder"), Tap(rid="record"), Tap(rid="stop"), Tap(text="Save")],
    )


@template("recorder.record_named", "recorder", "medium", 7)
def record_named(dev, rng):
    name = f"{rng.choice(WORDS).capitalize()} {rng.choice(['idea', 'lecture', 'song', 'call', 'reminder'])}"
    return Spec(
        f"Record an audio clip and save it with the name '{name}'.",
        lambda d, a: d.apps["recorder"].by_name(name) is not None,
        [
            Open("Recorder"),
            Tap(rid="record"),
            Tap(rid="stop"),
            Fill("rec_name", name, "Recording name"),
            Tap(text="Save"),
        ],
        {"name": name},
    )


@template("recorder.duration", "recorder", "easy", 3, answer=True)
def rec_duration(dev, rng):
    r = rng.choice(dev.apps["recorder"].items)
    return Spec(
        f"How long is the recording '{r.name}'? Answer as M:SS.",
        lambda d, a: answer_matches(a, r.duration),
        [Open("Recorder"), Look(rid="recording", text=r.name), Answer(r.duration)],
        {"name": r.name},
    )


@template("recorder.delete", "recorder", "medium", 5)
def delete_rec(dev, rng):
    r = rng.choice(dev.apps["recorder"].items)
    rid_ = r.id
    return Spec(
        f"Delete the recording '{r.name}'.",
        lambda d, a: all(x.id != rid_ for x in d.apps["recorder"].items),
        [Open("Recorder"), Tap(rid="recording", text=r.name), Tap(rid="delete"), Tap(text="Delete", instr="Confirm")],
        {"name": r.name},
    )


# ---- music ----------------------------------------------------------------------------------------
def _song(dev, rng):
    return rng.choice(dev.apps["music"].songs)


@template("music.play", "music", "easy", 3)
def play(dev, rng):
    s = _song(dev, rng)
    sid = s.id
    return Spec(
        f"Play the song '{s.title}'.",
        lambda d, a: d.apps["music"].playing == sid,
        [Open("Music"), Tap(rid="song", text=s.title)],
        {"title": s.title},
    )


@template("music.artist", "music", "easy", 3, answer=True)
def artist(dev, rng):
    s = _song(dev, rng)
    return Spec(
        f"Who is the artist of the song '{s.title}'?",
        lambda d, a: answer_matches(a, s.artist),
        [Open("Music"), Look(rid="song", text=s.title), Answer(s.artist)],
        {"title": s.title},
    )


@template("music.create_playlist", "music", "medium", 7)
def create_playlist(dev, rng):
    when = rng.choice(["Sunday", "Night", "Party", "Study", "Morning", "Rainy"])
    name = f"{when} {rng.choice(['mix', 'vibes', 'tunes'])} {rng.randint(1, 9)}"
    return Spec(
        f"Create a playlist named '{name}'.",
        lambda d, a: d.apps["music"].playlist(name) is not None,
        [
            Open("Music"),
            Tap(rid="tab_1", instr="Open the Playlists tab"),
            Tap(rid="new_playlist"),
            Fill("playlist", name, "Playlist name"),
            Tap(text="Create"),
        ],
        {"name": name},
    )


@template("music.add_to_playlist", "music", "medium", 4)
def add_to_playlist(dev, rng):
    m = dev.apps["music"]
    p = rng.choice(m.playlists)
    s = rng.choice([x for x in m.songs if x.id not in p.songs])
    pid, sid = p.id, s.id
    return Spec(
        f"Add the song '{s.title}' to the playlist '{p.name}'.",
        lambda d, a: any(x.id == pid and sid in x.songs for x in d.apps["music"].playlists),
        [Open("Music"), Tap(rid="song", text=s.title, long=True), Tap(text=p.name)],
        {"song": s.title, "pl": p.name},
    )


@template("music.count_artist", "music", "medium", 3, answer=True)
def count_artist(dev, rng):
    m = dev.apps["music"]
    art = rng.choice(sorted({s.artist for s in m.songs}))
    n = sum(s.artist == art for s in m.songs)
    return Spec(
        f"How many songs by {art} are in my music library?",
        lambda d, a: answer_matches(a, n, numeric=True),
        [Open("Music"), Look(rid="song", text=m.songs[-1].title), Answer(str(n))],
        {"artist": art, "n": n},
    )


@template("music.playlist_with_songs", "music", "hard", 12)
def playlist_with_songs(dev, rng):
    m = dev.apps["music"]
    name = f"{rng.choice(['Weekend', 'Drive', 'Cozy', 'Gym'])} set {rng.randint(1, 99)}"
    s1, s2 = rng.sample(m.songs, 2)
    ids = {s1.id, s2.id}
    return Spec(
        f"Create a playlist named '{name}' and add the songs '{s1.title}' and '{s2.title}' to it.",
        lambda d, a: any(p.name == name and ids <= set(p.songs) for p in d.apps["music"].playlists),
        [
            Open("Music"),
            Tap(rid="tab_1", instr="Open the Playlists tab"),
            Tap(rid="new_playlist"),
            Fill("playlist", name, "Playlist name"),
            Tap(text="Create"),
            Tap(rid="tab_0", instr="Open the Songs tab"),
            Tap(rid="song", text=s1.title, long=True),
            Tap(text=name),
            Tap(rid="song", text=s2.title, long=True),
            Tap(text=name),
        ],
        {"name": name, "songs": [s1.title, s2.title]},
    )

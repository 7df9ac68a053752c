"""App base class and seeded content pools shared by the PhoneSim apps."""

from __future__ import annotations

import random

FIRST = [
    "Alice",
    "Bruno",
    "Chen",
    "Dana",
    "Elif",
    "Farid",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kemal",
    "Lena",
    "Marta",
    "Nikhil",
    "Olga",
    "Pablo",
    "Quinn",
    "Rosa",
    "Sami",
    "Tara",
    "Umar",
    "Vera",
    "Wei",
    "Ximena",
    "Yusuf",
    "Zoe",
    "Amir",
    "Bea",
    "Carlos",
    "Diego",
    "Emma",
    "Felix",
]
LAST = [
    "Adams",
    "Berg",
    "Costa",
    "Dubois",
    "Evans",
    "Fischer",
    "Garcia",
    "Hansen",
    "Ito",
    "Jensen",
    "Khan",
    "Lopez",
    "Moreau",
    "Novak",
    "Okafor",
    "Petrov",
    "Rossi",
    "Silva",
    "Tanaka",
    "Ueda",
    "Vargas",
    "Weber",
    "Young",
    "Zhang",
]
COMPANIES = [
    "Acme Corp",
    "Blue Harbor",
    "Cedar Labs",
    "Delta Foods",
    "Evergreen",
    "Futura Bank",
    "Granite Works",
    "Helix Bio",
    "Iris Media",
    "Juniper Air",
    "Kite Logistics",
    "Lumen Studio",
]
WORDS = [
    "apple",
    "river",
    "orange",
    "garden",
    "silver",
    "planet",
    "window",
    "coffee",
    "mountain",
    "paper",
    "yellow",
    "ticket",
    "forest",
    "winter",
    "summer",
    "rocket",
    "pencil",
    "castle",
    "bridge",
    "violet",
    "harbor",
    "meadow",
    "canyon",
    "lantern",
    "marble",
    "pepper",
    "falcon",
    "island",
    "cotton",
    "thunder",
]
TOPICS = [
    "Team sync",
    "Dentist",
    "Yoga class",
    "Budget review",
    "Lunch with Sam",
    "Piano lesson",
    "Car service",
    "Book club",
    "Project kickoff",
    "Parent meeting",
    "Gym session",
    "Flight to Lisbon",
    "Haircut",
    "Design review",
    "Birthday party",
    "Doctor visit",
    "Coffee chat",
    "Quarterly planning",
]
PLACES = [
    "Room 4B",
    "Main Street 12",
    "City Clinic",
    "Cafe Luna",
    "Gym Central",
    "Online",
    "Library",
    "Office",
    "Park Pavilion",
    "Airport T2",
]


def full_name(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def unique(rng: random.Random, make, n: int, taken=()) -> list:
    """n distinct values from make(rng), avoiding `taken`."""
    out, seen = [], set(taken)
    for _ in range(n * 50):
        v = make(rng)
        if v not in seen:
            seen.add(v)
            out.append(v)
            if len(out) == n:
                break
    return out


def phone(rng: random.Random) -> str:
    return f"+1 555 {rng.randint(100, 999)} {rng.randint(1000, 9999)}"


def hhmm(h: int, m: int) -> str:
    return f"{h:02d}:{m:02d}"


def money(x: float) -> str:
    return f"${x:,.2f}"


class App:
    """Base class: subclasses set key/label/color, keep state in attributes, and define
    `page_<name>(ui, ref)` methods that describe each page with the `UI` builder."""

    key = ""
    label = ""
    aliases: tuple = ()
    color = (90, 90, 90)
    main_page = "main"

    def __init__(self, dev):
        self.dev = dev
        self.next_id = 1
        self.init_state()

    def init_state(self) -> None:
        """Empty state (no content)."""

    def populate(self, rng: random.Random) -> None:
        """Seeded default content for a fresh device."""

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def open(self, page: str, form=None, **args) -> None:
        self.dev.push(self, page, form, **args)

    def confirm(self, title: str, message: str, fn, ok: str = "Delete") -> None:
        """Confirmation dialog: Cancel / <ok>."""

        def yes():
            self.dev.close_dialog()
            fn()

        self.dev.dialog(title, message, [("Cancel", self.dev.close_dialog), (ok, yes)])

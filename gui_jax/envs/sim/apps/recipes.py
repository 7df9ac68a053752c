"""Recipes: list, details (servings, prep time, ingredients), favourite, add, delete."""

from __future__ import annotations

from dataclasses import dataclass, field

from gui_jax.envs.sim.apps.base import App

DISHES = {
    "Tomato soup": ["tomatoes", "onion", "basil"],
    "Pancakes": ["flour", "milk", "eggs"],
    "Greek salad": ["cucumber", "feta", "olives"],
    "Chili": ["beans", "beef", "chili"],
    "Risotto": ["rice", "parmesan", "mushrooms"],
    "Banana bread": ["bananas", "flour", "butter"],
    "Pad thai": ["noodles", "peanuts", "tofu"],
    "Guacamole": ["avocado", "lime", "cilantro"],
    "Lentil curry": ["lentils", "coconut milk", "ginger"],
    "Shakshuka": ["eggs", "peppers", "paprika"],
    "Pesto pasta": ["pasta", "basil", "pine nuts"],
    "Fried rice": ["rice", "peas", "soy sauce"],
    "Apple pie": ["apples", "cinnamon", "flour"],
    "Hummus": ["chickpeas", "tahini", "lemon"],
}


@dataclass
class Recipe:
    id: int
    title: str
    servings: int
    minutes: int
    ingredients: list = field(default_factory=list)
    favorite: bool = False


class Recipes(App):
    key, label, aliases, color = "recipes", "Recipes", ("cookbook", "broccoli", "cooking"), (200, 90, 150)

    def init_state(self):
        self.items: list[Recipe] = []

    def populate(self, rng):
        for t in sorted(rng.sample(sorted(DISHES), rng.randint(8, 12))):
            self.items.append(
                Recipe(
                    self.new_id(),
                    t,
                    rng.randint(1, 8),
                    rng.choice(range(10, 95, 5)),
                    list(DISHES[t]),
                    rng.random() < 0.2,
                )
            )

    def by_title(self, title):
        return next((r for r in self.items if r.title.lower() == title.strip().lower()), None)

    def page_main(self, ui, ref):
        ui.appbar("Recipes", back=False)
        for r in self.items:
            ui.row(
                r.title + (" *" if r.favorite else ""),
                f"{r.minutes} min, serves {r.servings}",
                on_click=lambda r=r: self.open("detail", id=r.id),
                rid="recipe",
            )
        ui.fab("Add recipe", lambda: self.open("new"))

    def page_detail(self, ui, ref):
        r = next((x for x in self.items if x.id == ref.args["id"]), None)
        if r is None:
            return ui.appbar("Recipe")

        def delete():
            self.items.remove(r)
            self.dev.up()

        ui.appbar(
            r.title,
            actions=[("Unstar" if r.favorite else "Star", lambda: setattr(r, "favorite", not r.favorite), "favorite")],
        )
        ui.detail("Servings", str(r.servings), "servings")
        ui.detail("Preparation time", f"{r.minutes} minutes", "prep_time")
        ui.text("Ingredients", size="header")
        for ing in r.ingredients:
            ui.text("- " + ing, rid="ingredient", copy=True)
        ui.button(
            "Delete recipe",
            lambda: self.confirm("Delete recipe?", f"Delete {r.title}?", delete),
            "delete",
            primary=False,
        )

    def page_new(self, ui, ref):
        def save():
            title = ref.form.get("title", "").strip()
            try:
                servings = int(ref.form.get("servings", ""))
            except ValueError:
                return self.dev.toast("Servings must be a number")
            if not title:
                return self.dev.toast("Title is required")
            ings = [s.strip() for s in ref.form.get("ingredients", "").split(",") if s.strip()]
            self.items.append(Recipe(self.new_id(), title, servings, 30, ings))
            self.items.sort(key=lambda r: r.title.lower())
            self.dev.up()

        ui.appbar("New recipe", actions=[("Save", save, "save")])
        ui.field("Title", "title")
        ui.field("Servings", "servings")
        ui.field("Ingredients (comma separated)", "ingredients")

"""Expenses: list with totals, add (name, amount, category), details, delete."""

from __future__ import annotations

from dataclasses import dataclass

from gui_jax.envs.sim.apps.base import App, money

CATEGORIES = ["Food", "Travel", "Bills", "Fun"]
EXPENSE_NAMES = {
    "Food": ["Groceries", "Bakery", "Pizza night", "Farmers market", "Lunch"],
    "Travel": ["Train ticket", "Taxi", "Bus pass", "Fuel", "Parking"],
    "Bills": ["Electricity", "Internet", "Phone bill", "Water", "Rent share"],
    "Fun": ["Cinema", "Concert", "Museum", "Bowling", "Streaming"],
}


@dataclass
class Expense:
    id: int
    name: str
    amount: float
    category: str


class Expenses(App):
    key, label, aliases, color = "expenses", "Expenses", ("budget", "spending", "pro expense"), (40, 160, 70)

    def init_state(self):
        self.items: list[Expense] = []

    def populate(self, rng):
        names = rng.sample([(c, n) for c, ns in EXPENSE_NAMES.items() for n in ns], rng.randint(7, 12))
        for cat, name in names:
            self.items.append(Expense(self.new_id(), name, round(rng.randint(300, 20000) / 100, 2), cat))

    def by_name(self, name):
        return next((e for e in self.items if e.name.lower() == name.strip().lower()), None)

    def total(self, category=None) -> float:
        return round(sum(e.amount for e in self.items if category in (None, e.category)), 2)

    def page_main(self, ui, ref):
        ui.appbar("Expenses", back=False)
        ui.text(f"Total: {money(self.total())}", rid="total", size="header")
        for e in self.items:
            ui.row(
                e.name,
                e.category,
                right=money(e.amount),
                on_click=lambda e=e: self.open("detail", id=e.id),
                rid="expense",
            )
        ui.fab("Add expense", lambda: self.open("new", form={"category": "Food"}))

    def page_detail(self, ui, ref):
        e = next((x for x in self.items if x.id == ref.args["id"]), None)
        if e is None:
            return ui.appbar("Expense")

        def delete():
            self.items.remove(e)
            self.dev.up()

        ui.appbar(e.name)
        ui.detail("Amount", money(e.amount), "amount")
        ui.detail("Category", e.category, "category")
        ui.button(
            "Delete expense",
            lambda: self.confirm("Delete expense?", f"Delete {e.name}?", delete),
            "delete",
            primary=False,
        )

    def page_new(self, ui, ref):
        def save():
            name = ref.form.get("name", "").strip()
            try:
                amount = round(float(ref.form.get("amount", "").replace("$", "").replace(",", "")), 2)
            except ValueError:
                return self.dev.toast("Amount must be a number")
            if not name or amount <= 0:
                return self.dev.toast("Enter a name and an amount")
            self.items.append(Expense(self.new_id(), name, amount, ref.form.get("category", "Food")))
            self.dev.up()
            self.dev.toast("Expense added")

        ui.appbar("Add expense", actions=[("Save", save, "save")])
        ui.field("Name", "name")
        ui.field("Amount", "amount")
        ui.text("Category", size="small")
        ui.buttons(
            [(c, lambda c=c: ref.form.__setitem__("category", c)) for c in CATEGORIES],
            rid="category",
            selected=ref.form.get("category", "Food"),
        )

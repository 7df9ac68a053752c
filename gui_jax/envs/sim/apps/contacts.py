"""Contacts: alphabetical list, details, add / edit / delete, favourites."""

from __future__ import annotations

from dataclasses import dataclass

from gui_jax.envs.sim.apps.base import COMPANIES, App, full_name, phone, unique


@dataclass
class Contact:
    id: int
    name: str
    phone: str
    email: str = ""
    company: str = ""
    favorite: bool = False


class Contacts(App):
    key, label, aliases, color = "contacts", "Contacts", ("people", "address book", "phonebook"), (30, 140, 120)

    def init_state(self):
        self.items: list[Contact] = []

    def populate(self, rng):
        for name in unique(rng, full_name, rng.randint(12, 20)):
            first = name.split()[0].lower()
            self.add(
                name,
                phone(rng),
                f"{first}@{rng.choice(['mail.com', 'post.net', 'inbox.org'])}",
                rng.choice(COMPANIES),
                rng.random() < 0.15,
            )

    def add(self, name, ph, email="", company="", favorite=False) -> Contact:
        c = Contact(self.new_id(), name, ph, email, company, favorite)
        self.items.append(c)
        self.items.sort(key=lambda c: c.name.lower())
        return c

    def by_name(self, name):
        return next((c for c in self.items if c.name.lower() == name.strip().lower()), None)

    def get(self, cid):
        return next((c for c in self.items if c.id == cid), None)

    def page_main(self, ui, ref):
        ui.appbar("Contacts", back=False)
        for c in self.items:
            ui.row(
                c.name + (" *" if c.favorite else ""),
                c.phone,
                icon=c.name[0],
                on_click=lambda c=c: self.open("detail", id=c.id),
                rid="contact",
            )
        ui.fab("Add contact", lambda: self.open("edit", id=None))

    def page_detail(self, ui, ref):
        c = self.get(ref.args["id"])
        if c is None:
            return ui.appbar("Contact")

        def delete():
            self.items.remove(c)
            self.dev.up()
            self.dev.toast("Contact deleted")

        ui.appbar(
            c.name,
            actions=[
                ("Unstar" if c.favorite else "Star", lambda: setattr(c, "favorite", not c.favorite), "favorite"),
                (
                    "Edit",
                    lambda: self.open(
                        "edit", id=c.id, form={"name": c.name, "phone": c.phone, "email": c.email, "company": c.company}
                    ),
                    "edit",
                ),
            ],
        )
        ui.detail("Phone", c.phone, "phone")
        ui.detail("Email", c.email or "-", "email")
        ui.detail("Company", c.company or "-", "company")
        ui.button("Message", lambda: self.dev.apps["messages"].open_thread(c.name), "message", primary=False)
        ui.button(
            "Delete contact",
            lambda: self.confirm("Delete contact?", f"Delete {c.name}?", delete),
            "delete",
            primary=False,
        )

    def page_edit(self, ui, ref):
        cid = ref.args.get("id")

        def save():
            name, ph = ref.form.get("name", "").strip(), ref.form.get("phone", "").strip()
            if not name or not ph:
                return self.dev.toast("Name and phone are required")
            c = self.get(cid) if cid is not None else None
            if c is None:
                self.add(name, ph, ref.form.get("email", "").strip(), ref.form.get("company", "").strip())
            else:
                c.name, c.phone = name, ph
                c.email, c.company = ref.form.get("email", "").strip(), ref.form.get("company", "").strip()
                self.items.sort(key=lambda c: c.name.lower())
            self.dev.up()
            self.dev.toast("Contact saved")

        ui.appbar("New contact" if cid is None else "Edit contact", actions=[("Save", save, "save")])
        ui.field("Name", "name")
        ui.field("Phone", "phone")
        ui.field("Email", "email")
        ui.field("Company", "company")

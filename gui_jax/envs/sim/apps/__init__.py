"""PhoneSim apps.

How to add an app
-----------------
1. Create `gui_jax/envs/sim/apps/<name>.py` with a subclass of `apps.base.App`:
   - class attributes `key` (lower-case id), `label` (launcher name), `aliases` (extra names for
     `open(app)`), `color` (icon colour), `main_page` (default "main");
   - `init_state()` sets empty state, `populate(rng)` fills seeded default content (use only `rng`,
     never global randomness, so the same seed gives the same phone);
   - one `page_<name>(self, ui, ref)` method per page. Describe the page with the `UI` builder (envs/sim/ui.py)
     (`ui.appbar(title, back, actions)`, `ui.row`, `ui.switch`, `ui.field(label, form_key)`,
     `ui.button`, `ui.detail`, `ui.text`, `ui.buttons`, `ui.slider`, `ui.fab`); never place pixels.
     Form values live in `ref.form`, page arguments in `ref.args`. Navigate with
     `self.open(page, form=..., **args)`, `self.dev.up()`, dialogs with `self.confirm(...)` or
     `self.dev.dialog(...)`, feedback with `self.dev.toast(text)`. Give every interactive widget a
     stable `rid` (resource-id): templates and the oracle find widgets by it.
2. Append the class to `APP_CLASSES` below (order = launcher order; append to keep seeds stable).

How to add a task template
--------------------------
Write a function in `gui_jax/envs/sim/templates/<app>_tasks.py` decorated with
`@template(name, app=..., difficulty="easy"|"medium"|"hard", ...)` (see templates/base.py). It
receives the freshly populated `Device` and a seeded `random.Random`, may edit the initial state
(so the goal is NOT already satisfied), and returns `Spec(goal, check, plan, params)`:
`check(dev, answer) -> bool` reads app state (and the `answer(...)` text for retrieval tasks, via
`answer_matches`), `plan` is the oracle's list of plan steps (`Open`, `Tap`, `Fill`, `TapAt`,
`Back`, `Answer`); the executor scrolls to off-screen targets and appends `terminate(success)`.
Import the module in templates/__init__.py. tests/tasks/test_templates.py then checks the
oracle on 20 seeds, that terminate-first fails, and determinism.
"""

from gui_jax.envs.sim.apps.calendar import Calendar
from gui_jax.envs.sim.apps.clock import Clock
from gui_jax.envs.sim.apps.contacts import Contacts
from gui_jax.envs.sim.apps.expenses import Expenses
from gui_jax.envs.sim.apps.files import Files
from gui_jax.envs.sim.apps.messages import Messages
from gui_jax.envs.sim.apps.music import Music
from gui_jax.envs.sim.apps.notes import Notes
from gui_jax.envs.sim.apps.recipes import Recipes
from gui_jax.envs.sim.apps.recorder import Recorder
from gui_jax.envs.sim.apps.settings import Settings
from gui_jax.envs.sim.apps.todo import Tasks

# Contacts before Messages: message threads are seeded from contact names.
APP_CLASSES = (Settings, Clock, Contacts, Messages, Calendar, Notes, Expenses, Recipes, Tasks, Files, Recorder, Music)
APP_KEYS = tuple(c.key for c in APP_CLASSES)

"""Settings and Clock templates."""

from __future__ import annotations

from gui_jax.envs.sim.apps.base import hhmm
from gui_jax.envs.sim.templates.base import Answer, Fill, Open, Spec, Tap, TapAt, answer_matches, template


def _toggle_task(attr: str, label: str, rid: str, on: bool):
    def setup(dev, rng):
        st = dev.settings
        st.airplane = False
        setattr(st, attr, not on)
        verb = "on" if on else "off"
        return Spec(
            f"Turn {verb} {label}.",
            lambda d, a: getattr(d.settings, attr) is on,
            [Open("Settings"), Tap(rid=rid, instr=f"Tap the {label} switch to turn it {verb}")],
        )

    return setup


template("settings.wifi_on", "settings", "easy", 3, parametric=False)(
    _toggle_task("wifi", "Wi-Fi", "wifi_switch", True)
)
template("settings.wifi_off", "settings", "easy", 3, parametric=False)(
    _toggle_task("wifi", "Wi-Fi", "wifi_switch", False)
)
template("settings.bluetooth_on", "settings", "easy", 3, parametric=False)(
    _toggle_task("bluetooth", "Bluetooth", "bluetooth_switch", True)
)
template("settings.dark_theme_on", "settings", "easy", 3, parametric=False)(
    _toggle_task("dark", "the dark theme", "dark_switch", True)
)


def _level_task(attr, page_rid, slider_rid, what):
    def setup(dev, rng):
        st = dev.settings
        target = rng.choice([v for v in range(0, 101, 10) if v != getattr(st, attr)])
        return Spec(
            f"Set the {what} to {target}%.",
            lambda d, a: getattr(d.settings, attr) == target,
            [
                Open("Settings"),
                Tap(rid=page_rid),
                TapAt(slider_rid, target / 100, f"Drag the {what} slider to {target}%"),
            ],
            {"target": target},
        )

    return setup


template("settings.brightness", "settings", "easy", 4)(
    _level_task("brightness", "display", "brightness", "screen brightness")
)
template("settings.volume", "settings", "easy", 4)(_level_task("volume", "sound", "volume", "ring volume"))


@template("settings.model_answer", "settings", "easy", 4, answer=True)
def model_answer(dev, rng):
    m = dev.settings.model
    return Spec(
        "What is the model number of this phone?",
        lambda d, a: answer_matches(a, m),
        [Open("Settings"), Tap(rid="about"), Answer(m)],
        {"model": m},
    )


@template("settings.storage_answer", "settings", "easy", 3, answer=True)
def storage_answer(dev, rng):
    used = dev.settings.storage_used
    return Spec(
        "How many GB of storage are used on this phone?",
        lambda d, a: answer_matches(a, used, numeric=True),
        [Open("Settings"), Answer(f"{used} GB")],
        {"used": used},
    )


@template("settings.dark_and_brightness", "settings", "medium", 5)
def dark_and_brightness(dev, rng):
    st = dev.settings
    st.dark = False
    target = rng.choice([v for v in range(0, 101, 10) if v != st.brightness])
    return Spec(
        f"Turn on the dark theme and set the brightness to {target}%.",
        lambda d, a: d.settings.dark and d.settings.brightness == target,
        [Open("Settings"), Tap(rid="display"), TapAt("brightness", target / 100), Tap(rid="dark_switch")],
        {"target": target},
    )


@template("settings.airplane_on", "settings", "easy", 3, parametric=False)
def airplane_on(dev, rng):
    dev.settings.airplane = False
    return Spec(
        "Turn on airplane mode.", lambda d, a: d.settings.airplane, [Open("Settings"), Tap(rid="airplane_switch")]
    )


# ---- clock -------------------------------------------------------------------------------
@template("clock.stopwatch_start", "clock", "easy", 4, parametric=False)
def stopwatch_start(dev, rng):
    return Spec(
        "Open the Clock app and start the stopwatch.",
        lambda d, a: d.apps["clock"].stopwatch_running,
        [Open("Clock"), Tap(rid="tab_2", instr="Open the Stopwatch tab"), Tap(rid="start")],
    )


def _alarm_desc(a):
    return f"{a.time}  {a.label or 'Alarm'}"


@template("clock.alarm_toggle", "clock", "easy", 3)
def alarm_toggle(dev, rng):
    a = rng.choice(dev.apps["clock"].alarms)
    want = not a.enabled
    aid = a.id
    return Spec(
        f"Turn {'on' if want else 'off'} the {a.time} alarm.",
        lambda d, ans: any(x.id == aid and x.enabled == want for x in d.apps["clock"].alarms),
        [Open("Clock"), Tap(rid="alarm_switch", desc=_alarm_desc(a))],
        {"time": a.time, "on": want},
    )


@template("clock.alarm_count", "clock", "easy", 3, answer=True)
def alarm_count(dev, rng):
    clock = dev.apps["clock"]
    n = sum(a.enabled for a in clock.alarms)
    return Spec(
        "How many alarms are currently turned on?",
        lambda d, a: answer_matches(a, n, numeric=True),
        [Open("Clock"), Answer(str(n))],
        {"n": n, "alarms": [(a.time, a.enabled) for a in clock.alarms]},
    )


@template("clock.timer", "clock", "medium", 6)
def timer(dev, rng):
    mins = rng.randint(2, 90)
    return Spec(
        f"Start a timer for {mins} minutes.",
        lambda d, a: d.apps["clock"].timer_running and d.apps["clock"].timer_seconds == mins * 60,
        [
            Open("Clock"),
            Tap(rid="tab_1", instr="Open the Timer tab"),
            Fill("minutes", str(mins), "Minutes"),
            Tap(rid="start"),
        ],
        {"mins": mins},
    )


def _free_time(rng, clock):
    taken = {a.time for a in clock.alarms}
    while True:
        h, m = rng.randint(0, 23), rng.randrange(0, 60, 5)
        if hhmm(h, m) not in taken:
            return h, m


@template("clock.new_alarm", "clock", "medium", 8)
def new_alarm(dev, rng):
    h, m = _free_time(rng, dev.apps["clock"])
    return Spec(
        f"Set a new alarm for {hhmm(h, m)}.",
        lambda d, a: any(x.time == hhmm(h, m) and x.enabled for x in d.apps["clock"].alarms),
        [
            Open("Clock"),
            Tap(desc="Add alarm"),
            Fill("hour", str(h), "Hour"),
            Fill("minute", str(m), "Minute"),
            Tap(rid="save"),
        ],
        {"t": hhmm(h, m)},
    )


@template("clock.new_alarm_label", "clock", "hard", 10)
def new_alarm_label(dev, rng):
    h, m = _free_time(rng, dev.apps["clock"])
    label = rng.choice(["Pills", "Yoga", "Bus", "Laundry done", "Call Ana", "Stretch", "Feed cat", "Trash day"])
    return Spec(
        f"Create an alarm at {hhmm(h, m)} with the label '{label}'.",
        lambda d, a: any(x.time == hhmm(h, m) and x.label.lower() == label.lower() for x in d.apps["clock"].alarms),
        [
            Open("Clock"),
            Tap(desc="Add alarm"),
            Fill("hour", str(h), "Hour"),
            Fill("minute", str(m), "Minute"),
            Fill("label", label, "Label"),
            Tap(rid="save"),
        ],
        {"t": hhmm(h, m), "label": label},
    )


@template("clock.delete_alarm", "clock", "medium", 5)
def delete_alarm(dev, rng):
    a = rng.choice(dev.apps["clock"].alarms)
    aid = a.id
    return Spec(
        f"Delete the {a.time} alarm.",
        lambda d, ans: all(x.id != aid for x in d.apps["clock"].alarms),
        [
            Open("Clock"),
            Tap(rid="alarm_switch_row", text=a.time, instr=f"Open the {a.time} alarm"),
            Tap(rid="delete"),
            Tap(text="Delete", instr="Confirm the deletion"),
        ],
        {"time": a.time},
    )

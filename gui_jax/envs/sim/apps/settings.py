"""System settings: Wi-Fi, Bluetooth, airplane mode, dark theme, brightness, about phone."""

from __future__ import annotations

from gui_jax.envs.sim.apps.base import App

MODELS = ["PS-100", "PS-220", "PS-310", "PS-450", "PS-505", "PS-612", "PS-777", "PS-808", "PS-901", "PS-990"]


class Settings(App):
    key, label, aliases, color = "settings", "Settings", ("system settings", "preferences"), (96, 110, 130)

    def init_state(self):
        self.wifi, self.bluetooth, self.airplane, self.dark = True, False, False, False
        self.brightness, self.volume = 50, 60
        self.device_name, self.model, self.android = "My Phone", "PS-100", "14"
        self.storage_used = 32

    def populate(self, rng):
        self.wifi = rng.random() < 0.7
        self.bluetooth = rng.random() < 0.3
        self.brightness = rng.choice(range(10, 100, 10))
        self.volume = rng.choice(range(10, 100, 10))
        self.model = rng.choice(MODELS) + rng.choice("ABCDEFGH")
        self.device_name = rng.choice(["Pixel", "Nova", "Orbit", "Comet", "Atlas"]) + f" {rng.randint(2, 99)}"
        self.storage_used = rng.randint(12, 110)

    def _toggle(self, name):
        def fn():
            setattr(self, name, not getattr(self, name))
            if name == "airplane" and self.airplane:
                self.wifi = self.bluetooth = False

        return fn

    def page_main(self, ui, ref):
        ui.appbar("Settings", back=False)
        ui.switch("Wi-Fi", self.wifi, self._toggle("wifi"), "wifi_switch")
        ui.switch("Bluetooth", self.bluetooth, self._toggle("bluetooth"), "bluetooth_switch")
        ui.switch("Airplane mode", self.airplane, self._toggle("airplane"), "airplane_switch")
        ui.switch("Dark theme", self.dark, self._toggle("dark"), "dark_switch")
        ui.row("Display", "Brightness", on_click=lambda: self.open("display"), rid="display")
        ui.row("Sound", "Volume", on_click=lambda: self.open("sound"), rid="sound")
        ui.row(
            "Storage", f"{self.storage_used} GB used of 128 GB", on_click=lambda: self.open("storage"), rid="storage"
        )
        ui.row("About phone", self.device_name, on_click=lambda: self.open("about"), rid="about")

    def page_display(self, ui, ref):
        ui.appbar("Display")
        ui.slider("Brightness", self.brightness, lambda v: setattr(self, "brightness", v), "brightness")
        ui.switch("Dark theme", self.dark, self._toggle("dark"), "dark_switch")

    def page_sound(self, ui, ref):
        ui.appbar("Sound")
        ui.slider("Ring volume", self.volume, lambda v: setattr(self, "volume", v), "volume")

    def page_storage(self, ui, ref):
        ui.appbar("Storage")
        ui.detail("Used", f"{self.storage_used} GB", "used")
        ui.detail("Total", "128 GB", "total")

    def page_about(self, ui, ref):
        ui.appbar("About phone")
        ui.detail("Device name", self.device_name, "device_name")
        ui.detail("Model", self.model, "model")
        ui.detail("Android version", self.android, "android_version")

"""The settings screen, a module per job: tinys (``tinys``), the model (``model``), the hub's
status (``status``), pairing phones (``pairing``), the people of the hub (``people``), the
forms they share (``forms``) and the screen that puts them together (``screen``)."""

from tui.settings.model import ASKING_OLLAMA, ModelDraft, ModelForm
from tui.settings.pairing import NO_PHONES, PairNotice
from tui.settings.people import NO_PEOPLE, PersonForm, RemoveQuestion
from tui.settings.screen import SettingsScreen
from tui.settings.status import NO_LAN, cloud_state
from tui.settings.tinys import KeyNotice, TinyDraft, TinyForm

__all__ = [
    "ASKING_OLLAMA",
    "NO_LAN",
    "NO_PEOPLE",
    "NO_PHONES",
    "KeyNotice",
    "ModelDraft",
    "ModelForm",
    "PairNotice",
    "PersonForm",
    "RemoveQuestion",
    "SettingsScreen",
    "TinyDraft",
    "TinyForm",
    "cloud_state",
]

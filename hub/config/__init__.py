"""One Settings object, read from ``config.toml`` in the data dir and ``TINY_HUB_*`` variables:
the hub's settings declared once (``settings.py``), the drivers' declared by the drivers
(``drivers.py``), read and checked (``load.py``, ``values.py``) and shown with where each value
comes from (``sources.py``)."""

from hub.config.load import load_settings, upgraded_environ
from hub.config.settings import (
    CONFIG_FILE_NAME,
    HOME_ENV,
    ConfigError,
    Settings,
    default_home,
    setting_fields,
)
from hub.config.sources import describe_settings, setting_sources

__all__ = [
    "CONFIG_FILE_NAME",
    "HOME_ENV",
    "ConfigError",
    "Settings",
    "default_home",
    "describe_settings",
    "load_settings",
    "setting_fields",
    "setting_sources",
    "upgraded_environ",
]

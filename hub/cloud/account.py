"""This hub's account at the cloud: its token in the data dir, its url and device id in config.toml.

The split is deliberate. ``config.toml`` is the file people paste into bug reports, so it holds
only what is safe to share (the cloud's origin and the device id); the token is a password and
lives in ``cloud.token`` with mode 0600, written the way ``owner.token`` is. Joining verifies
before it saves anything, so a typo never leaves a half-joined hub that fails every 20 s.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import tomlkit
import tomlkit.exceptions

from hub.cloud.client import CloudAuthError, CloudClient, CloudError, CloudUnavailable
from hub.config import Settings

VERIFY_TIMEOUT_S = 15.0
CLOUD_SECTION = "cloud"


class CloudAccountError(Exception):
    """Joining or saving failed; ``str()`` is one sentence for a person, never with the token."""


def check_origin(url: str) -> str:
    """The web app's origin, without a trailing slash; a bad one is refused before any call."""
    cleaned = url.strip().rstrip("/")
    parts = urlsplit(cleaned)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CloudAccountError(f"{url!r} is not the web app's http:// or https:// origin")
    return cleaned


def check_device_id(device_id: str) -> str:
    cleaned = device_id.strip()
    if not cleaned or any(ch.isspace() for ch in cleaned) or len(cleaned) > 200:
        raise CloudAccountError("the device id must be one word, as the web app shows it")
    return cleaned


def check_token(token: str) -> str:
    cleaned = token.strip()
    if not cleaned or any(ch.isspace() for ch in cleaned):
        raise CloudAccountError("the device token must be one word, as the web app shows it")
    return cleaned


# --- the token ---------------------------------------------------------------------------------


def save_token(path: Path, token: str) -> None:
    """Write the token through a 0600 temporary file and rename: never readable by others, and a
    crash leaves the old token or the new one, never half of one. The token is never logged."""
    token = check_token(token)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a leftover temporary file keeps its old mode through O_CREAT
        os.write(fd, (token + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)


def load_token(path: Path) -> str | None:
    """The saved token, or None. A file someone loosened (chmod 644) is tightened back to 0600,
    as owner.token is: the token keeps working, it just stops being readable by others."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        path.chmod(0o600)
    return token or None


# --- config.toml -------------------------------------------------------------------------------


def write_cloud_config(settings: Settings, url: str, device_id: str) -> None:
    """Set ``[cloud] url`` and ``device_id`` in the hub's config.toml, keeping everything else.

    An edit through tomlkit, not a re-serialisation: the person's other tables, comments and
    layout survive. The edited text is parsed again and compared with what was meant, so a file
    this edit cannot handle (``cloud`` set to something that is not a table) is refused with a
    sentence instead of being damaged.
    """
    path = settings.config_path
    try:
        original = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise CloudAccountError(f"{path}: cannot read the config file: {exc}") from None
    try:
        before = tomllib.loads(original)
    except tomllib.TOMLDecodeError as exc:
        raise CloudAccountError(f"{path} is not valid TOML ({exc}); fix it first") from None
    wanted = {"url": url, "device_id": device_id}
    try:
        edited = _set_keys(original, CLOUD_SECTION, wanted)
    except (TypeError, AttributeError, tomlkit.exceptions.TOMLKitError):
        edited = ""
    expected = dict(before)
    expected[CLOUD_SECTION] = {**_table(before.get(CLOUD_SECTION)), **wanted}
    try:
        after = tomllib.loads(edited)
    except tomllib.TOMLDecodeError:
        after = None
    if after != expected:
        raise CloudAccountError(
            f"cannot edit the [cloud] table of {path} safely; set url = {_toml_string(url)} and "
            f"device_id = {_toml_string(device_id)} under [cloud] by hand"
        )
    _write_text(path, edited)


def _table(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _set_keys(text: str, section: str, values: dict[str, str]) -> str:
    """``text`` with ``values`` set inside ``[section]``, edited by tomlkit so the person's other
    tables, comments and layout are kept; the table is added when there is none."""
    document = tomlkit.parse(text)
    table = document.get(section)
    if table is None:
        table = tomlkit.table()
        document[section] = table
    for key, value in values.items():
        table[key] = value
    return tomlkit.dumps(document)


def _toml_string(value: str) -> str:
    """A TOML basic string: JSON's escapes (quote, backslash, ``\\n``, ``\\u00XX``) are TOML's."""
    return json.dumps(value, ensure_ascii=False)


def _write_text(path: Path, text: str) -> None:
    """Temporary file and rename, keeping the file's mode, so a crash never truncates config."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)


# --- verification ------------------------------------------------------------------------------


async def verify(url: str, device_id: str, token: str) -> str:
    """One heartbeat with the given credentials; a sentence on success, CloudAccountError if not.

    The heartbeat carries no capabilities on purpose: one that omits them leaves the stored list
    untouched (docs/protocol.md, devices), and the running loop sends the full list every 20 s
    anyway.
    """
    client = CloudClient(url, device_id, token, timeout_s=VERIFY_TIMEOUT_S)
    try:
        await client.call("POST", "/api/devices/heartbeat", {})
    except CloudAuthError as exc:
        raise CloudAccountError(
            f"the cloud refused the token: {exc}; check the device id and token "
            "(a lost token: tiny-hub cloud adopt)"
        ) from None
    except CloudUnavailable as exc:
        said = str(exc)
        if not said.startswith("cannot reach"):
            said = f"cannot reach the cloud at {url}: {said}"
        raise CloudAccountError(said) from None
    except CloudError as exc:
        raise CloudAccountError(f"the cloud did not accept the heartbeat: {exc}") from None
    return f"the cloud at {url} accepted device {device_id} (one heartbeat: the hub shows online)"


async def verify_user(url: str, token: str) -> str:
    """One read of the person's memory at the cloud with a user token (memory sync's calls);
    a sentence on success, CloudAccountError if not."""
    from hub.cloud.memory_sync import MemoryCloud

    try:
        await MemoryCloud(url, token, timeout_s=VERIFY_TIMEOUT_S).page(0, limit=1)
    except CloudAuthError:
        raise CloudAccountError(
            "the cloud refused the user token: give a token of your account at the web app "
            "(a device token cannot read memory)"
        ) from None
    except CloudError as exc:
        raise CloudAccountError(f"the cloud did not answer the memory read: {exc}") from None
    return f"the cloud at {url} accepted the user token (memory sync can read your facts)"

from __future__ import annotations

from pathlib import Path

import pytest

from hub.config import (
    ConfigError,
    describe_settings,
    load_settings,
    setting_fields,
    setting_sources,
)


def write_config(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(text)
    return path


def test_defaults_without_a_file(home: Path) -> None:
    settings = load_settings(home=home, environ={})
    assert settings.port == 8765
    assert settings.host == "0.0.0.0"
    assert settings.model_provider == "auto"
    assert settings.ollama_host == "http://127.0.0.1:11434"
    assert settings.embedded_model == "auto", "the 1.5B answers once the extra is installed"
    assert settings.deprecated == ()


def test_the_embedded_variables_follow_their_keys(home: Path, tmp_path: Path) -> None:
    gguf = str(tmp_path / "mine.gguf")
    settings = load_settings(
        home=home,
        environ={"TINY_HUB_EMBEDDED_MODEL": "smollm2", "TINY_HUB_EMBEDDED_MODEL_PATH": gguf},
    )
    assert (settings.embedded_model, settings.embedded_model_path) == ("smollm2", gguf)
    assert settings.deprecated == ()
    with pytest.raises(ConfigError, match=r"TINY_HUB_EMBEDDED_MODEL: unknown embedded model"):
        load_settings(home=home, environ={"TINY_HUB_EMBEDDED_MODEL": "gpt-7"})


def test_the_old_embedded_spellings_still_work_and_say_so(home: Path, tmp_path: Path) -> None:
    gguf = str(tmp_path / "mine.gguf")
    old = {"TINY_HUB_EMBEDDED_MODEL": gguf, "TINY_HUB_EMBEDDED_MODEL_NAME": "qwen2.5-coder-1.5b"}
    settings = load_settings(home=home, environ=old)
    assert (settings.embedded_model, settings.embedded_model_path) == ("qwen2.5-coder-1.5b", gguf)
    path_note, name_note = settings.deprecated
    assert "read as TINY_HUB_EMBEDDED_MODEL_PATH" in path_note
    assert "TINY_HUB_EMBEDDED_MODEL_NAME is deprecated" in name_note
    sources = setting_sources(settings, environ=old)
    assert sources["embedded_model"] == "env TINY_HUB_EMBEDDED_MODEL"
    assert sources["embedded_model_path"] == "env TINY_HUB_EMBEDDED_MODEL_PATH"


def test_file_then_environment_then_overrides(home: Path) -> None:
    write_config(home, '[server]\nport = 9000\nhost = "127.0.0.1"\n[model]\nid = "qwen3"\n')
    settings = load_settings(home=home, environ={"TINY_HUB_PORT": "9100"})
    assert (settings.port, settings.host, settings.model_id) == (9100, "127.0.0.1", "qwen3")
    settings = load_settings(home=home, environ={"TINY_HUB_PORT": "9100"}, overrides={"port": 0})
    assert settings.port == 0


def test_home_comes_from_tiny_hub_home(tmp_path: Path) -> None:
    settings = load_settings(environ={"TINY_HUB_HOME": str(tmp_path / "elsewhere")})
    assert settings.home == tmp_path / "elsewhere"
    assert settings.db_path.parent == tmp_path / "elsewhere"


def test_syntax_error_names_file_line_and_key(home: Path) -> None:
    path = write_config(home, '[server]\nhost = "127.0.0.1"\nport = = 80\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(home=home, environ={})
    message = str(caught.value)
    assert str(path) in message
    assert "line 3" in message
    assert "'port'" in message


def test_wrong_type_names_file_line_and_key(home: Path) -> None:
    path = write_config(home, '# my hub\n\n[server]\nhost = "127.0.0.1"\nport = "eighty"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(home=home, environ={})
    message = str(caught.value)
    assert f"{path}, line 5, key 'server.port'" in message
    assert "whole number" in message


def test_unknown_key_is_named_with_the_valid_ones(home: Path) -> None:
    write_config(home, '[model]\nprovider = "ollama"\nmodle_id = "x"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(home=home, environ={})
    assert "line 3, key 'model.modle_id'" in str(caught.value)
    assert "provider" in str(caught.value)


def test_out_of_range_value_names_its_line(home: Path) -> None:
    write_config(home, "[server]\n\nport = 70000\n")
    with pytest.raises(ConfigError, match=r"line 3, key 'server.port'.*70000"):
        load_settings(home=home, environ={})


def test_bad_environment_variable_is_named(home: Path) -> None:
    with pytest.raises(ConfigError, match=r"TINY_HUB_PORT.*whole number"):
        load_settings(home=home, environ={"TINY_HUB_PORT": "abc"})
    with pytest.raises(ConfigError, match=r"TINY_HUB_MODEL_PROVIDER.*unknown provider"):
        load_settings(home=home, environ={"TINY_HUB_MODEL_PROVIDER": "skynet"})


def test_top_level_key_is_refused(home: Path) -> None:
    write_config(home, "port = 80\n")
    with pytest.raises(ConfigError, match=r"line 1, key 'port'.*section"):
        load_settings(home=home, environ={})


def test_api_key_is_never_shown(home: Path) -> None:
    settings = load_settings(home=home, environ={"TINY_HUB_MODEL_API_KEY": "sk-secret-123"})
    assert settings.model_api_key == "sk-secret-123"
    assert "sk-secret-123" not in repr(settings)
    assert "sk-secret-123" not in str(describe_settings(settings))


def test_readme_documents_every_setting() -> None:
    readme = (Path(__file__).parent.parent / "docs" / "configuration.md").read_text()
    for f in setting_fields():
        assert f.metadata["env"] in readme, f.metadata["env"]
        assert f"{f.metadata['section']}.{f.metadata['key']}" in readme


def test_lists_and_numbers(home: Path) -> None:
    write_config(
        home, '[http]\nallow_hosts = ["nas.local", "192.168.1.5"]\n[chat]\nping_interval_s = 2\n'
    )
    settings = load_settings(home=home, environ={})
    assert settings.http_allow_hosts == ("nas.local", "192.168.1.5")
    assert settings.ping_interval_s == 2.0
    settings = load_settings(home=home, environ={"TINY_HUB_HTTP_ALLOW_HOSTS": "a, b,,"})
    assert settings.http_allow_hosts == ("a", "b")
    write_config(home, '[http]\nallow_hosts = "nas.local"\n')
    with pytest.raises(ConfigError, match=r"line 2, key 'http.allow_hosts'.*list of strings"):
        load_settings(home=home, environ={})
    with pytest.raises(ConfigError, match=r"TINY_HUB_PING_INTERVAL_S.*more than 0"):
        load_settings(home=home / "other", environ={"TINY_HUB_PING_INTERVAL_S": "0"})


def test_overrides_from_code_are_held_to_the_settings_types(tmp_path: Path) -> None:
    listed = load_settings(home=tmp_path, environ={}, overrides={"http_allow_hosts": ["a.lan"]})
    assert listed.http_allow_hosts == ("a.lan",)  # a tuple, as from the file: hashable
    with pytest.raises(ConfigError, match="setting port: expected a whole number"):
        load_settings(home=tmp_path, environ={}, overrides={"port": "eighty"})


def test_the_drivers_settings_come_from_their_sections_and_variables(home: Path) -> None:
    write_config(home, '[drivers.flipper]\nport = "/dev/ttyACM3"\ndeny = ["flip_Other"]\n')
    settings = load_settings(home=home, environ={"TINY_HUB_NICLA_VOICE_SERVICE": "1809"})
    assert settings.drivers["flipper"] == {
        "enabled": True,
        "port": "/dev/ttyACM3",
        "deny": ("flip_Other",),
        "pair": False,
    }
    assert settings.drivers["nicla_voice"]["service_uuid"] == "1809"
    sources = setting_sources(settings, environ={"TINY_HUB_NICLA_VOICE_SERVICE": "1809"})
    assert sources["drivers.flipper.port"] == "config.toml:2"
    assert sources["drivers.nicla_voice.service_uuid"] == "env TINY_HUB_NICLA_VOICE_SERVICE"
    assert sources["drivers.camera.device"] == "default"
    flags = load_settings(home=home, environ={}, overrides={"drivers": {"flipper": {"port": ""}}})
    assert flags.drivers["flipper"]["port"] == ""
    assert setting_sources(flags, environ={})["drivers.flipper.port"] == "flag"


def test_a_drivers_bad_setting_names_file_line_and_key(home: Path) -> None:
    write_config(home, "[drivers.nicla_vision]\nmax_clip_s = true\n")
    with pytest.raises(ConfigError, match=r"line 2, key 'drivers.nicla_vision.max_clip_s'.*number"):
        load_settings(home=home, environ={})
    write_config(home, "[drivers.flipper]\nprot = 1\n")
    with pytest.raises(ConfigError, match=r"key 'drivers.flipper.prot': unknown setting.*port"):
        load_settings(home=home, environ={})
    with pytest.raises(ConfigError, match=r"TINY_HUB_FLIPPER_ENABLED.*true or false"):
        load_settings(home=home / "other", environ={"TINY_HUB_FLIPPER_ENABLED": "maybe"})


def test_a_section_no_installed_driver_reads_is_kept_and_shown(home: Path) -> None:
    write_config(home, '[drivers.kettle]\nport = "/dev/ttyUSB9"\n')
    settings = load_settings(home=home, environ={})
    assert settings.drivers["kettle"] == {"port": "/dev/ttyUSB9"}
    rows = {row[0]: row for row in describe_settings(settings)}
    assert rows["drivers.kettle.port"][3:] == ("config.toml:2", "(no installed driver reads it)")


def test_the_old_camera_and_microphone_sections_are_read_as_the_drivers(home: Path) -> None:
    write_config(home, '[camera]\ndevice = ""\n[microphone]\ndevice = "off"\n')
    settings = load_settings(home=home, environ={})
    assert settings.drivers["camera"]["device"] == ""
    assert settings.drivers["microphone"]["device"] == "off"
    assert any("[camera] in config.toml is now [drivers.camera]" in s for s in settings.deprecated)
    assert setting_sources(settings, environ={})["drivers.camera.device"] == "config.toml:2"


def test_the_docs_document_every_shipped_drivers_setting() -> None:
    from drivers.base import load_drivers

    docs = (Path(__file__).parent.parent / "docs" / "configuration.md").read_text()
    for cls in load_drivers():
        for setting in cls.declared_settings():
            assert f"drivers.{cls.section()}.{setting.key}" in docs, (cls.name, setting.key)
            assert setting.variable(cls.section()) in docs, (cls.name, setting.key)

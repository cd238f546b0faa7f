"""Which model answers a turn, and the strands provider that talks to it.

Order (docs/protocol.md, turn step 4): the request's ``x-tiny-model-*`` headers, else the hub's
configured default. The default in ``auto`` mode is Ollama when it answers and has a model, else
the embedded model. Ollama is asked which of its models can call tools (``/api/show``
capabilities); a model that cannot gets no tools, because such a model answers tool specs with
garbage.

It is one module on purpose: the order of choice (headers, a saved choice, the default), what
each choice can do (tools, vision) and the provider and runner built for it must agree, and
they all read the same settings.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from hub import contracts as c
from hub.agent import bundled_models, model_access
from hub.agent.bundled_models import BundledModel
from hub.agent.runner.process import RunnerSpec
from hub.agent.runner.supervisor import RunnerSupervisor
from hub.config import Settings
from hub.core.netguard import Allowance
from hub.people.preferences import SavedModel

if TYPE_CHECKING:  # strands loads in a second; `tiny-hub doctor` reads this module without it
    from strands.models import Model

log = logging.getLogger(__name__)

OLLAMA_PROBE_TIMEOUT_S = 2.0
REPROBE_AFTER_S = 30.0

# OpenAI-compatible providers and where they answer; ``custom`` takes its URL from the request.
OPENAI_COMPATIBLE_URLS: Mapping[str, str] = {
    "openrouter": "https://openrouter.ai/api/v1",
    "groq": "https://api.groq.com/openai/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "mistral": "https://api.mistral.ai/v1",
    "xai": "https://api.x.ai/v1",
    "perplexity": "https://api.perplexity.ai",
    "vercel": "https://ai-gateway.vercel.sh/v1",
}


class ModelUnavailable(Exception):
    """The requested model cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class ModelChoice:
    """One decision: which provider and model, whether tools are mounted, and why."""

    provider: str
    model_id: str
    tools: bool
    reason: str
    api_key: str = field(default="", repr=False)
    base_url: str = ""
    region: str = ""
    max_tokens: int | None = None
    additional_fields: dict[str, Any] = field(default_factory=dict)
    # Whether it can look at images: Ollama says so per model (``vision``); the cloud providers'
    # chat APIs all take images (a model that cannot answers with the provider's own error).
    vision: bool = False

    def describe(self) -> dict[str, Any]:
        """The public part, for /api/health and the log (never the key)."""
        return {
            "provider": self.provider,
            "id": self.model_id,
            "toolsCapable": self.tools,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class OllamaModelInfo:
    name: str
    capabilities: tuple[str, ...]

    @property
    def tools(self) -> bool:
        return "tools" in self.capabilities

    @property
    def vision(self) -> bool:
        return "vision" in self.capabilities


@dataclass(frozen=True)
class OllamaProbe:
    host: str
    answering: bool
    models: tuple[OllamaModelInfo, ...] = ()
    error: str = ""
    # Something listens but did not answer in time (Ollama loading, a busy machine): asked
    # again at the next turn rather than after REPROBE_AFTER_S.
    slow: bool = False


async def probe_ollama(host: str, wait_s: float = OLLAMA_PROBE_TIMEOUT_S) -> OllamaProbe:
    """Ask Ollama for its models and what each can do; never raises."""
    base = host if "://" in host else f"http://{host}"
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=wait_s)) as http:
            async with http.get(f"{base}/api/tags") as response:
                response.raise_for_status()
                names = [m["name"] for m in (await response.json())["models"]]
            models = [
                OllamaModelInfo(name, await _capabilities(http, base, name)) for name in names
            ]
    except (aiohttp.ClientError, TimeoutError, KeyError, TypeError, ValueError) as exc:
        slow = isinstance(exc, TimeoutError)
        return OllamaProbe(host=base, answering=False, error=_describe_error(exc), slow=slow)
    return OllamaProbe(host=base, answering=True, models=tuple(models))


async def _capabilities(http: aiohttp.ClientSession, base: str, name: str) -> tuple[str, ...]:
    # No redirects: Ollama answers /api/show itself, and a base that redirects is not one.
    async with http.post(
        f"{base}/api/show", json={"model": name}, allow_redirects=False
    ) as response:
        shown = await response.json() if response.ok else {}
    return tuple(shown.get("capabilities") or ())


async def ollama_capabilities(
    host: str, name: str, guard: Allowance | None = None
) -> tuple[str, ...]:
    """What one Ollama model lists it can do (``tools``, ``vision``); none when Ollama cannot
    say."""
    base = host if "://" in host else f"http://{host}"
    timeout = aiohttp.ClientTimeout(total=OLLAMA_PROBE_TIMEOUT_S)
    connector = model_access.guarded_aiohttp_connector(guard) if guard is not None else None
    try:
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as http:
            return await _capabilities(http, base, name)
    except (aiohttp.ClientError, TimeoutError, TypeError, ValueError):
        return ()


def _describe_error(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return str(exc) or type(exc).__name__


def choose_from_probe(settings: Settings, probe: OllamaProbe) -> ModelChoice:
    """The default model, given what Ollama said (pure: the selection order lives here)."""
    embedded = embedded_model(settings)
    if settings.model_provider == c.PROVIDER_EMBEDDED:
        return embedded_choice("configured: model.provider = embedded", embedded, settings)
    if settings.model_provider not in ("auto", c.PROVIDER_OLLAMA):
        return ModelChoice(
            provider=settings.model_provider,
            model_id=settings.model_id,
            tools=True,
            reason=f"configured: model.provider = {settings.model_provider}",
            api_key=settings.model_api_key,
            base_url=settings.model_base_url,
            vision=True,
        )
    if not probe.answering:
        return embedded_choice(
            f"Ollama is not answering at {probe.host} ({probe.error})", embedded, settings
        )
    if not probe.models:
        return embedded_choice(
            f"Ollama at {probe.host} has no models (try: ollama pull qwen3)", embedded, settings
        )
    by_name = {m.name: m for m in probe.models}
    wanted = by_name.get(settings.model_id) or by_name.get(f"{settings.model_id}:latest")
    if settings.model_id and wanted is None:
        log.warning("model %r is not in Ollama; choosing another", settings.model_id)
    picked = wanted or next((m for m in probe.models if m.tools), probe.models[0])
    why = "configured model" if wanted else ("first tool-capable" if picked.tools else "first")
    tools_note = "can call tools" if picked.tools else "cannot call tools, so no tools are mounted"
    return ModelChoice(
        provider=c.PROVIDER_OLLAMA,
        model_id=picked.name,
        tools=picked.tools,
        reason=f"Ollama answers at {probe.host}; {why} model {picked.name} {tools_note}",
        vision=picked.vision,
    )


def embedded_model(settings: Settings) -> BundledModel | None:
    """The bundled model ``embedded.model`` names (``auto`` resolved), or None when
    ``embedded.model_path`` names a GGUF file of the user's own."""
    if settings.embedded_model_path:
        return None
    if settings.embedded_model == bundled_models.AUTO:
        return auto_model()
    return bundled_models.MODELS[settings.embedded_model]


@functools.cache
def auto_model() -> BundledModel:
    """What ``embedded.model = auto`` means in this process, decided once: a model that
    followed the free RAM of the moment would change in the middle of a conversation."""
    return bundled_models.pick(bundled_models.AUTO)


def bundled_model_named(name: str) -> BundledModel | None:
    """The bundled model a saved choice or a header names: its key (``qwen2.5-coder-1.5b``)
    or its title (``Qwen2.5-Coder-1.5B-Instruct``), in any case; None for any other name."""
    wanted = name.strip().lower()
    for model in bundled_models.MODELS.values():
        if wanted in (model.key, model.title.lower()):
            return model
    return None


def settings_for_model(settings: Settings, model: BundledModel | None) -> Settings:
    """The settings with ``embedded.model`` set to ``model`` (None: as configured)."""
    if model is None or model == embedded_model(settings):
        return settings
    return replace(settings, embedded_model=model.key, embedded_model_path="")


def embedded_choice(
    reason: str,
    model: BundledModel | None = bundled_models.SMOLLM2,
    settings: Settings | None = None,
) -> ModelChoice:
    """The embedded model: tools are mounted when it is one the small-model protocol serves
    (``embedded.tools = auto``), or as ``embedded.tools`` says."""
    wanted = settings.embedded_tools if settings is not None else "auto"
    tools = wanted == "on" or (wanted == "auto" and model is not None and model.tools)
    title = model.title if model is not None else "custom GGUF"
    return ModelChoice(provider=c.PROVIDER_EMBEDDED, model_id=title, tools=tools, reason=reason)


def choice_from_headers(headers: Mapping[str, str], default: ModelChoice) -> ModelChoice:
    """Apply the request's x-tiny-model-* headers over the default (docs/protocol.md, turn step
    4)."""
    provider = headers.get(c.H_MODEL_PROVIDER, "").strip().lower()
    model_id = headers.get(c.H_MODEL_ID, "").strip()
    if not provider and not model_id:
        return default
    provider = provider or default.provider
    if provider == "google":
        provider = "gemini"
    if provider not in (*c.CLOUD_PROVIDERS, *c.LOCAL_PROVIDERS):
        raise ModelUnavailable(
            f"unknown model provider {provider!r}; one of: "
            + ", ".join((*c.LOCAL_PROVIDERS, *c.CLOUD_PROVIDERS))
        )
    max_tokens = headers.get(c.H_MODEL_MAX_TOKENS, "").strip()
    if max_tokens and not max_tokens.isdigit():
        raise ModelUnavailable(f"{c.H_MODEL_MAX_TOKENS} must be a whole number")
    extra = headers.get(c.H_MODEL_ADDITIONAL_FIELDS, "").strip()
    try:
        additional = json.loads(extra) if extra else {}
    except json.JSONDecodeError as exc:
        raise ModelUnavailable(f"{c.H_MODEL_ADDITIONAL_FIELDS} is not JSON: {exc}") from None
    if not isinstance(additional, dict):
        raise ModelUnavailable(f"{c.H_MODEL_ADDITIONAL_FIELDS} must be a JSON object")
    same_provider = provider == default.provider
    return ModelChoice(
        provider=provider,
        model_id=model_id or (default.model_id if same_provider else ""),
        tools=default.tools if same_provider and not model_id else provider != c.PROVIDER_EMBEDDED,
        reason=f"request headers: {c.H_MODEL_PROVIDER}",
        api_key=headers.get(c.H_MODEL_API_KEY, "").strip(),
        base_url=headers.get(c.H_MODEL_BASE_URL, "").strip(),
        region=headers.get(c.H_MODEL_REGION, "").strip(),
        max_tokens=int(max_tokens) if max_tokens else None,
        additional_fields=additional,
        vision=default.vision if same_provider and not model_id else provider in c.CLOUD_PROVIDERS,
    )


def names_the_default(saved: SavedModel, default: ModelChoice) -> bool:
    """Whether a saved choice names the model that is the default anyway: the same provider
    with no id or the same id (an embedded model by its key or its title)."""
    if saved.provider != default.provider:
        return False
    if saved.model_id in ("", default.model_id):
        return True
    named = bundled_model_named(saved.model_id)
    return (
        saved.provider == c.PROVIDER_EMBEDDED
        and named is not None
        and (named == bundled_model_named(default.model_id))
    )


@functools.cache
def shared_tls_context() -> ssl.SSLContext:
    """strands makes a new Ollama client for every model call, and httpx builds a TLS context
    (reading the CA bundle, ~20 ms) for each new client, even for plain http. One shared
    context takes that off every turn."""
    return ssl.create_default_context()


class ModelRouter:
    """Keeps the default choice fresh (Ollama may start after the hub) and builds providers."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._default: ModelChoice | None = None
        self._chosen_at = 0.0
        self._ask_again = False  # the last probe timed out
        self._lock = asyncio.Lock()
        self._runner: RunnerSupervisor | None = None  # the configured embedded model's
        self._runners: dict[str, RunnerSupervisor] = {}  # other bundled models', by key
        self._capabilities: dict[tuple[str, str], tuple[str, ...]] = {}
        for sentence in settings.deprecated:
            log.warning("config: %s", sentence)

    async def default(self) -> ModelChoice:
        async with self._lock:
            stale = self._ask_again or time.monotonic() - self._chosen_at > REPROBE_AFTER_S
            probing = self._settings.model_provider in ("auto", c.PROVIDER_OLLAMA)
            if self._default is None or (stale and probing):
                probe = await probe_ollama(self._settings.ollama_host)
                choice = choose_from_probe(self._settings, probe)
                if self._default is None or choice.describe() != self._default.describe():
                    log.info("model: %s %s (%s)", choice.provider, choice.model_id, choice.reason)
                self._default, self._chosen_at = choice, time.monotonic()
                self._ask_again = probe.slow
            return self._default

    @property
    def current(self) -> ModelChoice | None:
        return self._default

    async def resolve(
        self, headers: Mapping[str, str], saved: SavedModel | None = None
    ) -> ModelChoice:
        """docs/protocol.md, turn step 4: request headers, then the user's saved choice, then the
        default."""
        default = await self.default()
        base = default if saved is None else self._from_saved(saved, default)
        choice = choice_from_headers(headers, base)
        guard = model_access.guard_for(choice.base_url, self._settings)
        if guard is not None:
            try:
                await model_access.check_url(choice.base_url, guard)
            except model_access.ModelUrlRefused as exc:
                raise ModelUnavailable(str(exc)) from None
        return await self._with_abilities(choice, default, guard)

    async def check_base_url(self, url: str) -> None:
        """Refuse a base URL a person saves (``PUT /api/model``) that the turn would refuse:
        ModelUrlRefused unless it is the owner's own or passes the guard. A name that does not
        resolve now is kept: each dial checks it again."""
        guard = model_access.guard_for(url, self._settings)
        if guard is None:
            return
        with contextlib.suppress(model_access.ModelUrlUnresolved):
            await model_access.check_url(url, guard)

    async def answering(self, saved: SavedModel | None) -> ModelChoice:
        """What answers this caller's turns when a turn names no model: the saved choice (with
        what it can do) or the hub's default. /api/health says this, so every screen shows the
        model that will really answer."""
        default = await self.default()
        if saved is None:
            return default
        chosen = self._from_saved(saved, default)
        guard = model_access.guard_for(chosen.base_url, self._settings)
        if guard is not None:
            # A member's saved URL is held to the member's guard before anything is dialled:
            # refused, it is not probed, so the answer tells nothing of what listens there.
            try:
                await model_access.check_url(chosen.base_url, guard)
            except model_access.ModelUrlRefused:
                return replace(chosen, tools=False, vision=False)
        return await self._with_abilities(chosen, default, guard)

    async def _with_abilities(
        self, choice: ModelChoice, default: ModelChoice, guard: Allowance | None
    ) -> ModelChoice:
        """The choice with what its model can do: the embedded model's own tools, or what
        Ollama lists for the model."""
        if choice.provider == c.PROVIDER_EMBEDDED:
            wanted = bundled_model_named(choice.model_id) if choice.model_id else None
            model = wanted or embedded_model(self._settings)
            embedded = embedded_choice("", model, self._settings)
            return replace(choice, model_id=embedded.model_id, tools=embedded.tools)
        if choice.provider != c.PROVIDER_OLLAMA:
            return choice
        if choice.model_id == default.model_id and not choice.base_url:
            return replace(choice, tools=default.tools, vision=default.vision)
        host = choice.base_url or self._settings.ollama_host
        known = self._capabilities.get((host, choice.model_id))
        capabilities = known or await ollama_capabilities(host, choice.model_id, guard)
        if capabilities:  # only an answer is kept: a model pulled later must not stay unknown
            self._capabilities[(host, choice.model_id)] = capabilities
        return replace(choice, tools="tools" in capabilities, vision="vision" in capabilities)

    def _from_saved(self, saved: SavedModel, default: ModelChoice) -> ModelChoice:
        if saved.provider == c.PROVIDER_EMBEDDED and saved.model_id not in bundled_models.MODELS:
            # Saved before embedded choices were pinned by key (the picker stored the title of
            # whatever ran then): it meant "the embedded model", so it follows embedded.model.
            saved = replace(saved, model_id="")
        if names_the_default(saved, default):
            return replace(default, reason="the user's saved choice", max_tokens=saved.max_tokens)
        # The hub's key goes only to a URL from the hub's own config, never to one a member saved.
        configured_key = saved.provider == self._settings.model_provider and (
            model_access.is_configured_url(saved.base_url, self._settings)
        )
        return ModelChoice(
            provider=saved.provider,
            model_id=saved.model_id,
            tools=saved.provider != c.PROVIDER_EMBEDDED,
            reason="the user's saved choice",
            api_key=self._settings.model_api_key if configured_key else "",
            base_url=saved.base_url,
            max_tokens=saved.max_tokens,
            vision=saved.provider in c.CLOUD_PROVIDERS,
        )

    def embedded_runner(self, model: BundledModel | None = None) -> RunnerSupervisor:
        """The runner of ``model`` (None: the configured embedded model), started on its first
        turn and kept warm after. A person's saved choice of another bundled model gets a
        runner of its own."""
        if model is None or model == embedded_model(self._settings):
            if self._runner is None:
                self._runner = self._new_runner(self._settings)
            return self._runner
        runner = self._runners.get(model.key)
        if runner is None:
            runner = self._runners[model.key] = self._new_runner(
                settings_for_model(self._settings, model)
            )
        return runner

    def _new_runner(self, settings: Settings) -> RunnerSupervisor:
        return RunnerSupervisor(
            embedded_spec(settings), keep_alive_s=self._settings.embedded_keep_alive_s
        )

    def embedded_status(self) -> dict[str, Any]:
        """The runner's state for /api/health: stopped, ready, busy, failed (with the reason),
        or unavailable when there is no model file; which model it is and whether it calls
        tools."""
        choice = embedded_choice("", embedded_model(self._settings), self._settings)
        which = {"title": choice.model_id, "tools": choice.tools}
        try:
            return {**self.embedded_runner().status(), **which}
        except ModelUnavailable as exc:
            return {"state": "unavailable", "reason": str(exc), **which}

    async def close(self) -> None:
        """Stop the runner processes (the hub is shutting down)."""
        for runner in (self._runner, *self._runners.values()):
            if runner is not None:
                await runner.close()

    def build(self, choice: ModelChoice) -> Model:
        max_tokens = choice.max_tokens or self._settings.model_max_tokens
        if choice.provider == c.PROVIDER_EMBEDDED:
            from hub.agent.embedded import EmbeddedModel

            return EmbeddedModel(
                self.embedded_runner(bundled_model_named(choice.model_id)),
                max_tokens=max_tokens,
                call_grammar=self._settings.embedded_call_grammar == "on",
            )
        if choice.provider == c.PROVIDER_OLLAMA:
            from strands.models.ollama import OllamaModel

            host = choice.base_url or self._settings.ollama_host
            client_args: dict[str, Any] = {"verify": shared_tls_context()}
            if (guard := model_access.guard_for(choice.base_url, self._settings)) is not None:
                client_args.update(model_access.guarded_client_args(guard, shared_tls_context()))
            return OllamaModel(
                host,
                model_id=choice.model_id,
                max_tokens=max_tokens,
                ollama_client_args=client_args,
            )
        guard = model_access.guard_for(choice.base_url, self._settings)
        return build_cloud_model(replace(choice, max_tokens=max_tokens), guard)


def embedded_spec(settings: Settings) -> RunnerSpec:
    """The GGUF and settings the embedded model runs with; ModelUnavailable without a file.
    A joined model's file may not exist yet: the runner joins and checks it before loading."""
    threads = settings.embedded_threads  # 0: the runner uses the cores that are idle
    configured = settings.embedded_model_path
    if configured:
        path = Path(configured).expanduser()
        if not path.is_file():
            raise ModelUnavailable(
                f"embedded model file not found ({configured}); "
                "set embedded.model_path to a GGUF file, or empty for embedded.model"
            )
        return RunnerSpec(
            path,
            settings.embedded_context,
            threads,
            cache_mb=settings.embedded_prompt_cache_mb,
            cache_dir=prompt_cache_dir(settings, path),
        )
    model = embedded_model(settings)
    assert model is not None  # no model_path: embedded.model names a bundled model
    found = bundled_models.model_path(model, settings.home)
    if found is None:
        raise ModelUnavailable(
            f"embedded model {model.title} is not installed; {model.install}, "
            "or set embedded.model_path to a GGUF file"
        )
    return RunnerSpec(
        found,
        settings.embedded_context,
        threads,
        bundled=model.key,
        cache_mb=settings.embedded_prompt_cache_mb,
        cache_dir=prompt_cache_dir(settings, found),
    )


def prompt_cache_dir(settings: Settings, model: Path) -> str:
    """Where the runner keeps what it read of prompts for ``model`` between runs."""
    return str(settings.home / bundled_models.MODELS_DIR / "prompt-cache" / model.stem)


def build_cloud_model(choice: ModelChoice, guard: Allowance | None = None) -> Model:
    """A bring-your-own provider through strands; a missing SDK is a clear error. ``guard``:
    what a base URL that is not the owner's own may reach (see model_access)."""
    api_key = choice.api_key
    if choice.provider == "google":
        choice = replace(choice, provider="gemini")
    if not choice.model_id:
        raise ModelUnavailable(f"provider {choice.provider} needs a model id ({c.H_MODEL_ID})")
    try:
        if choice.provider == "anthropic":
            from strands.models.anthropic import AnthropicModel

            return AnthropicModel(
                client_args={"api_key": api_key},
                model_id=choice.model_id,
                max_tokens=choice.max_tokens or 1024,
                params=dict(choice.additional_fields),
            )
        if choice.provider == "bedrock":
            from strands.models.bedrock import BedrockModel

            return BedrockModel(
                model_id=choice.model_id,
                region_name=choice.region or None,
                max_tokens=choice.max_tokens,
                additional_request_fields=choice.additional_fields or None,
            )
        if choice.provider == "gemini":
            from strands.models.gemini import GeminiModel

            return GeminiModel(
                client_args={"api_key": api_key},
                model_id=choice.model_id,
                params=dict(choice.additional_fields),
            )
        from strands.models.openai import OpenAIModel
    except ImportError as exc:
        raise ModelUnavailable(
            f"provider {choice.provider} needs an SDK that is not installed ({exc.name}); "
            f"pip install 'tiny-hub[{choice.provider}]'"
        ) from None
    base_url = choice.base_url or OPENAI_COMPATIBLE_URLS.get(choice.provider, "")
    if choice.provider == "custom" and not base_url:
        raise ModelUnavailable(f"provider custom needs a base URL ({c.H_MODEL_BASE_URL})")
    client_args: dict[str, Any] = {"api_key": api_key or "none"}
    if base_url:
        client_args["base_url"] = base_url
    params = {"max_tokens": choice.max_tokens, **choice.additional_fields}
    if guard is not None:
        client = model_access.guarded_openai_client(guard, client_args)
        return OpenAIModel(client=client, model_id=choice.model_id, params=params)
    return OpenAIModel(client_args=client_args, model_id=choice.model_id, params=params)

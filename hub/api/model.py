"""/api/model: the caller's saved model choice (docs/protocol.md, turn step 4's middle rung).

GET shows it and the hub's default; PUT saves ``{provider, id?, baseUrl?, maxTokens?}``;
DELETE forgets it. An API key is refused here: keys come per request or from the hub's config.
``GET /api/models`` lists what there is to choose from: Ollama's models with whether each can
call tools (asked now, not cached), the embedded models (the configured one, and each bundled
model with whether it is installed and calls tools), the cloud providers.

An embedded choice is saved by the bundled model's key (``qwen2.5-coder-1.5b``), which pins
that model with its own tools; without an id it follows ``embedded.model`` in the hub's config.
"""

from __future__ import annotations

from aiohttp import web

from hub import contracts as c
from hub.agent import bundled_models
from hub.agent.model_access import ModelUrlRefused
from hub.agent.models import bundled_model_named, embedded_choice, embedded_model, probe_ollama
from hub.api.auth import Access, access, caller, signed_in
from hub.api.body import read_json_body
from hub.api.errors import http_error
from hub.api.keys import HUB
from hub.api.lengths import MODEL_MAX_CHARS, check_lengths
from hub.api.spec import STRING, Operation, array, closed, documented, nullable, obj
from hub.config import Settings
from hub.people.preferences import SavedModel, save_model, saved_model

routes = web.RouteTableDef()
MODEL_FIELDS = ("provider", "id", "baseUrl", "maxTokens")


def _describe(saved: SavedModel | None) -> dict[str, object] | None:
    if saved is None:
        return None
    return {
        "provider": saved.provider,
        "id": saved.model_id,
        "baseUrl": saved.base_url,
        "maxTokens": saved.max_tokens,
    }


@routes.get("/api/model")
@access(Access.USER)
@documented(
    Operation(
        "your saved model choice and the hub's default",
        answers={200: obj({"saved": nullable(obj()), "default": obj()})},
    )
)
async def get_model(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    default = await hub.models.default()
    return web.json_response(
        {"saved": _describe(saved_model(hub.db, caller(request))), "default": default.describe()}
    )


@routes.put("/api/model")
@access(Access.USER)
@documented(
    Operation(
        "save your model choice",
        answers={200: obj({"saved": nullable(obj())})},
        body=closed(
            {"provider": {"enum": [*c.LOCAL_PROVIDERS, *c.CLOUD_PROVIDERS]}},
            id={"type": "string", "maxLength": MODEL_MAX_CHARS["id"]},
            baseUrl={"type": "string", "maxLength": MODEL_MAX_CHARS["baseUrl"]},
            maxTokens={"type": "integer", "minimum": 1},
        ),
    )
)
async def put_model(request: web.Request) -> web.Response:
    body = await read_json_body(request)
    if not isinstance(body, dict):
        raise http_error(web.HTTPBadRequest, "body must be a JSON object")
    if "apiKey" in body or "api_key" in body:
        raise http_error(
            web.HTTPBadRequest,
            "API keys are not stored; send x-tiny-model-api-key "
            "with each request or set model.api_key in the hub's config",
        )
    unknown = sorted(set(body) - set(MODEL_FIELDS))
    if unknown:
        raise http_error(
            web.HTTPBadRequest,
            f"unknown field(s): {', '.join(unknown)} ({', '.join(MODEL_FIELDS)})",
        )
    provider = body.get("provider")
    if provider not in (*c.LOCAL_PROVIDERS, *c.CLOUD_PROVIDERS):
        raise http_error(
            web.HTTPBadRequest,
            "provider must be one of: " + ", ".join((*c.LOCAL_PROVIDERS, *c.CLOUD_PROVIDERS)),
        )
    for field in ("id", "baseUrl"):
        if not isinstance(body.get(field, ""), str):
            raise http_error(web.HTTPBadRequest, f"{field} must be a string")
    check_lengths(body, MODEL_MAX_CHARS)
    max_tokens = body.get("maxTokens")
    if isinstance(max_tokens, float) and max_tokens.is_integer():
        max_tokens = body["maxTokens"] = int(max_tokens)  # 5881.0 is a whole number in JSON
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise http_error(web.HTTPBadRequest, "maxTokens must be a whole number above 0")
    base_url = body.get("baseUrl", "")
    if base_url:
        try:
            await request.app[HUB].models.check_base_url(base_url)
        except ModelUrlRefused as exc:
            raise http_error(web.HTTPBadRequest, str(exc)) from None
    model_id = body.get("id", "")
    if provider == c.PROVIDER_EMBEDDED and model_id:
        model_id = _installed_embedded_key(model_id)
    saved = SavedModel(provider, model_id, base_url, max_tokens)
    user = signed_in(request)
    save_model(request.app[HUB].db, user, saved)
    return web.json_response({"saved": _describe(saved)})


def _installed_embedded_key(model_id: str) -> str:
    """The key an embedded choice is saved by; 400 for a name that is no bundled model or a
    model that is not installed (the sentence says how to install it)."""
    model = bundled_model_named(model_id)
    if model is None:
        raise http_error(
            web.HTTPBadRequest,
            f"no embedded model {model_id!r}; one of: "
            + ", ".join(bundled_models.MODELS)
            + " (or no id: the hub's embedded.model)",
        )
    if not bundled_models.installed(model):
        raise http_error(
            web.HTTPBadRequest, f"embedded model {model.key} is not installed: {model.install}"
        )
    return model.key


@routes.delete("/api/model")
@access(Access.USER)
@documented(Operation("forget your model choice", answers={200: obj({"saved": nullable(obj())})}))
async def delete_model(request: web.Request) -> web.Response:
    user = signed_in(request)
    save_model(request.app[HUB].db, user, None)
    return web.json_response({"saved": None})


@routes.get("/api/models")
@access(Access.USER)
@documented(
    Operation(
        "the models there are to choose",
        answers={200: obj({"ollama": obj(), "embedded": obj(), "cloud": array(STRING)})},
    )
)
async def list_models(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    probe = await probe_ollama(hub.settings.ollama_host)
    return web.json_response(
        {
            "ollama": {
                "host": probe.host,
                "answering": probe.answering,
                "error": probe.error,
                "models": [
                    {"id": m.name, "tools": m.tools, "capabilities": list(m.capabilities)}
                    for m in probe.models
                ],
            },
            "embedded": embedded_listing(hub.settings),
            "cloud": list(c.CLOUD_PROVIDERS),
        }
    )


def embedded_listing(settings: Settings) -> dict[str, object]:
    """The configured embedded model (what an embedded choice without an id gets) and every
    bundled model: installed or not (with how to install it), and whether it calls tools."""
    model = embedded_model(settings)
    configured = embedded_choice("", model, settings)
    return {
        "key": model.key if model is not None else None,
        "id": configured.model_id,
        "tools": configured.tools,
        "models": [
            {
                "key": bundled.key,
                "id": bundled.title,
                "tools": embedded_choice("", bundled, settings).tools,
                "installed": bundled_models.installed(bundled),
                "install": bundled.install,
            }
            for bundled in bundled_models.MODELS.values()
        ],
    }

"""The household over HTTP (docs/people.md), owner only: list, add, rename and remove people,
and give one a pairing code or a token. The rules live in :mod:`hub.people.household`."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hub.api.auth import Access, access
from hub.api.body import read_json_body
from hub.api.keys import HUB
from hub.api.spec import (
    LOGIN,
    OK,
    STRING,
    Operation,
    array,
    closed,
    documented,
    obj,
)
from hub.lan.pairing import make_offer
from hub.people.household import MAX_NAME, NAME_PATTERN, People, PeopleError

routes = web.RouteTableDef()
# hub.people.household.check_name's rule, stated once for both
PERSON_NAME = {"type": "string", "pattern": NAME_PATTERN, "maxLength": MAX_NAME}

#: A request about one person is a few short fields.
MAX_PEOPLE_BODY_BYTES = 4096
CREDENTIALS = ("code", "token")
PERSON = obj(
    {"login": STRING, "name": STRING, "role": STRING},
    createdAt={"type": "number"},
    removedAt={"type": ["number", "null"]},
)


def _people(request: web.Request) -> People:
    return People(request.app[HUB])


async def _object_body(request: web.Request) -> dict[str, Any]:
    body = await read_json_body(request, MAX_PEOPLE_BODY_BYTES)
    if not isinstance(body, dict):
        raise PeopleError("body must be a JSON object")
    return body


def _credential(request: web.Request, login: str, wanted: Any) -> dict[str, Any]:
    """A pairing code (and its QR) or a token for the person; each is shown only here."""
    if wanted not in CREDENTIALS:
        raise PeopleError('"with" must be "code" (a pairing code for their phone) or "token"')
    people = _people(request)
    person = people.active(login)
    if wanted == "token":
        return {"token": people.issue_token(login, "added by the owner")}
    hub = request.app[HUB]
    offer = make_offer(hub, lan_url=hub.lan.url, fingerprint=hub.lan.fingerprint, person=person)
    return {"pairing": offer.as_json()}


@routes.get("/api/people")
@access(Access.OWNER)
@documented(Operation("the people of this hub", answers={200: obj({"people": array(PERSON)})}))
async def list_people(request: web.Request) -> web.Response:
    return web.json_response({"people": [p.as_json() for p in _people(request).list()]})


@routes.post("/api/people")
@access(Access.OWNER)
@documented(
    Operation(
        "add a person; a pairing code for their phone (or a token) is shown once",
        answers={200: obj({"person": PERSON}, pairing=obj(), token=STRING)},
        body=closed({"name": PERSON_NAME}, login=LOGIN, **{"with": {"enum": list(CREDENTIALS)}}),
        errors=(409,),
    )
)
async def add_person(request: web.Request) -> web.Response:
    body = await _object_body(request)
    unknown = sorted(set(body) - {"name", "login", "with"})
    if unknown:
        raise PeopleError(f"unknown field(s): {', '.join(unknown)} (name, login, with)")
    wanted = body.get("with", "code")
    if wanted not in CREDENTIALS:
        raise PeopleError('"with" must be "code" (a pairing code for their phone) or "token"')
    user = _people(request).add(body.get("name"), body.get("login"))
    answer = _credential(request, user.login, wanted)
    person = _people(request).get(user.login)
    return web.json_response({"person": person.as_json(), **answer})


@routes.post("/api/people/{login}/credential")
@access(Access.OWNER)
@documented(
    Operation(
        "a new pairing code (or a token) for a person, shown once",
        answers={200: obj(pairing=obj(), token=STRING)},
        body=closed({"with": {"enum": list(CREDENTIALS)}}),
        errors=(404, 409),
    )
)
async def person_credential(request: web.Request) -> web.Response:
    body = await _object_body(request)
    return web.json_response(_credential(request, request.match_info["login"], body.get("with")))


@routes.patch("/api/people/{login}")
@access(Access.OWNER)
@documented(
    Operation(
        "rename a person",
        answers={200: obj({"person": PERSON})},
        body=closed({"name": PERSON_NAME}),
        errors=(404,),
    )
)
async def rename_person(request: web.Request) -> web.Response:
    body = await _object_body(request)
    unknown = sorted(set(body) - {"name"})
    if unknown:
        raise PeopleError(f"unknown field(s): {', '.join(unknown)} (only name changes)")
    person = _people(request).rename(request.match_info["login"], body.get("name"))
    return web.json_response({"person": person.as_json()})


@routes.delete("/api/people/{login}")
@access(Access.OWNER)
@documented(
    Operation(
        "remove a person: their tokens stop at once; their data is kept or purged, as told",
        answers={200: OK},
        body=closed({"data": {"enum": ["keep", "purge"]}}),
        query={"data": {"enum": ["keep", "purge"]}},
        errors=(404, 409),
    )
)
async def remove_person(request: web.Request) -> web.Response:
    choice: Any = request.query.get("data")
    if choice is None and (request.content_length or request.body_exists):
        choice = (await _object_body(request)).get("data")
    removal = _people(request).remove(request.match_info["login"], choice)
    return web.json_response(removal.as_json())

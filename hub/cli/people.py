"""``tiny-hub people add|list|rename|remove``: the household, from the owner's terminal.

It opens the hub's database in this process, as ``tiny-hub pair`` does; a running hub sees
each change at its next request (a removed person's next request is a 401).
"""

from __future__ import annotations

import argparse
import time

from hub.cli.common import CliError, settings_of
from hub.core.errors import Refused
from hub.people.household import People, Person
from hub.runtime.hub import Hub


def people_command(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    hub = Hub.open(settings)
    try:
        return ACTIONS[args.people_action](hub, args)
    except Refused as exc:
        raise CliError(str(exc)) from None
    finally:
        hub.close()


def _add(hub: Hub, args: argparse.Namespace) -> int:
    people = People(hub)
    user = people.add(args.name, args.login)
    print(f"added {user.name} as @{user.login}")
    if args.token:
        token = people.issue_token(user.login, "tiny-hub people add")
        print(f"their token (shown once): {token}")
        print(f"they open the hub with: tiny-hub tui --token {token}")
        return 0
    _print_offer(hub, user.login)
    return 0


def _code(hub: Hub, args: argparse.Namespace) -> int:
    _print_offer(hub, args.login)
    return 0


def _print_offer(hub: Hub, login: str) -> None:
    from hub.lan.address import lan_url
    from hub.lan.pairing import make_offer, render_terminal
    from hub.lan.tls import local_fingerprint

    settings = hub.settings
    person = People(hub).active(login)
    url = lan_url(settings.lan_url, settings.host, settings.port, tls=settings.lan_tls)
    fingerprint = local_fingerprint(settings.home) if settings.lan_tls else None
    offer = make_offer(hub, lan_url=url, fingerprint=fingerprint, person=person)
    print(render_terminal(offer))
    minutes = max(1, round((offer.expires_at - time.time()) / 60))
    print(f"pairing code for @{person.login}: {offer.code} (valid {minutes} minutes, once)")
    print(f"their phone dials: {url or 'no LAN address (set lan.url)'}")


def _list(hub: Hub, args: argparse.Namespace) -> int:
    for person in People(hub).list():
        print(_line(person))
    return 0


def _line(person: Person) -> str:
    state = "removed (data kept)" if person.removed_at is not None else person.user.role
    return (
        f"@{person.user.login:<20} {person.user.name:<24} {state:<20} "
        f"{person.tokens} token(s), {person.devices} device(s)"
    )


def _rename(hub: Hub, args: argparse.Namespace) -> int:
    person = People(hub).rename(args.login, args.name)
    print(f"@{person.user.login} is now {person.user.name}")
    return 0


def _remove(hub: Hub, args: argparse.Namespace) -> int:
    if not (args.keep_data or args.purge_data):
        raise CliError(
            "say what happens to their data: --keep-data (memory, tinys, archives stay on "
            "this hub) or --purge-data (all of it is deleted); their tokens end either way"
        )
    data = "keep" if args.keep_data else "purge"
    removal = People(hub).remove(args.login, data)
    kept = "kept" if removal.data == "keep" else "purged"
    print(
        f"removed @{removal.login}: {removal.tokens_revoked} token(s) and "
        f"{removal.devices_revoked} device token(s) revoked; their data is {kept}"
    )
    return 0


ACTIONS = {
    "add": _add,
    "code": _code,
    "list": _list,
    "rename": _rename,
    "remove": _remove,
}

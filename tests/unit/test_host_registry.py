"""HostRegistry: a host registered lazily is built once, when a unit of its kind first needs it."""

from __future__ import annotations

import threading
import time

from shared.loop.host import Host, HostRegistry


class _Chat(Host):
    kind = "chat"


def test_a_lazy_host_is_built_on_first_get_and_once() -> None:
    built: list[Host] = []

    def make() -> Host:
        time.sleep(0.01)  # a slow import: requests arriving together must still share one host
        built.append(_Chat())
        return built[-1]

    hosts = HostRegistry()
    hosts.register_lazy("chat", make)
    assert built == []
    assert hosts.get("plan") is None
    got: list[Host | None] = []
    threads = [threading.Thread(target=lambda: got.append(hosts.get("chat"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1
    assert got == [built[0]] * 4
    assert hosts.get("chat") is built[0]


def test_a_registered_host_replaces_a_lazy_one_of_its_kind() -> None:
    def make() -> Host:
        raise AssertionError("never built")

    hosts = HostRegistry()
    hosts.register_lazy("chat", make)
    chat = _Chat()
    hosts.register(chat)
    assert hosts.get("chat") is chat

"""The DocStore contract: every test runs against SqliteDocStore and FirestoreDocStore (emulator)."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from shared.state.docstore import (
    DocStore,
    PreconditionFailed,
    Query,
    StoreError,
    Transaction,
    TransactionContention,
    Write,
)


def ids(docs: list[Any]) -> list[str]:
    return [d.id for d in docs]


def exact(value: Any) -> str:
    """A JSON rendering that tells 1 from 1.0 and True from 1, for exact round-trip checks."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


# -- single documents ---------------------------------------------------------------------------


def test_get_missing_and_existing(docstore: DocStore) -> None:
    assert docstore.get("runs/nope") is None
    (token,) = docstore.commit([Write("create", "runs/r1", {"status": "queued", "n": 1})])
    doc = docstore.get("runs/r1")
    assert doc is not None
    assert (doc.path, doc.id, doc.data, doc.token) == ("runs/r1", "r1", {"status": "queued", "n": 1}, token)
    assert token


def test_create_conflict_leaves_document(docstore: DocStore) -> None:
    docstore.commit([Write("create", "runs/r1", {"v": 1})])
    with pytest.raises(PreconditionFailed):
        docstore.commit([Write("create", "runs/r1", {"v": 2})])
    assert docstore.get("runs/r1").data == {"v": 1}  # type: ignore[union-attr]


def test_set_replaces_and_merge_merges_top_level(docstore: DocStore) -> None:
    docstore.commit([Write("set", "users/u", {"a": 1, "b": {"x": 1, "y": 2}})])
    docstore.commit([Write("set", "users/u", {"c": 3})])
    assert docstore.get("users/u").data == {"c": 3}  # type: ignore[union-attr]
    docstore.commit([Write("set", "users/u", {"b": {"x": 9}, "d": None}, merge=True)])
    assert docstore.get("users/u").data == {"c": 3, "b": {"x": 9}, "d": None}  # type: ignore[union-attr]
    docstore.commit([Write("set", "users/new", {"k": "v"}, merge=True)])
    assert docstore.get("users/new").data == {"k": "v"}  # type: ignore[union-attr]


def test_update_merges_and_fails_on_missing(docstore: DocStore) -> None:
    with pytest.raises(PreconditionFailed):
        docstore.commit([Write("update", "runs/missing", {"a": 1})])
    assert docstore.get("runs/missing") is None
    docstore.commit([Write("create", "runs/r", {"a": 1, "b": 2})])
    docstore.commit([Write("update", "runs/r", {"b": 3, "a.b": 4, "with space": [1]})])
    assert docstore.get("runs/r").data == {"a": 1, "b": 3, "a.b": 4, "with space": [1]}  # type: ignore[union-attr]


def test_if_token_success_and_stale_token_applies_nothing(docstore: DocStore) -> None:
    (t1,) = docstore.commit([Write("create", "runs/r", {"v": 1})])
    t2, _ = docstore.commit([Write("set", "runs/r", {"v": 2}, if_token=t1),
                                   Write("create", "runs/r/events/00000001", {"seq": 1})])
    assert t2 != t1
    assert docstore.get("runs/r").token == t2  # type: ignore[union-attr]
    with pytest.raises(PreconditionFailed):
        docstore.commit([Write("create", "runs/r/events/00000002", {"seq": 2}),
                         Write("update", "runs/r", {"v": 3}, if_token=t1)])
    with pytest.raises(PreconditionFailed):
        docstore.commit([Write("set", "runs/r", {"v": 3}, merge=True, if_token="not-a-token")])
    assert docstore.get("runs/r/events/00000002") is None
    doc = docstore.get("runs/r")
    assert doc is not None and doc.data == {"v": 2} and doc.token == t2
    with pytest.raises(PreconditionFailed):  # a token never matches a missing document
        docstore.commit([Write("set", "runs/gone", {"v": 1}, if_token=t2)])


def test_a_set_that_changes_nothing_keeps_the_token_whatever_the_key_order(docstore: DocStore) -> None:
    """As in Firestore, a replacing ``set`` of the values the document holds keeps its version,
    with the keys in any order; one value of the same length changed is a change (the SQLite store
    compares the encoded lengths first, issue 33 session 3)."""
    (t1,) = docstore.commit([Write("create", "runs/r", {"a": 1, "b": {"x": "yz", "w": [1.5]}})])
    (same,) = docstore.commit([Write("set", "runs/r", {"b": {"w": [1.5], "x": "yz"}, "a": 1}, if_token=t1)])
    assert same == t1
    (changed,) = docstore.commit([Write("set", "runs/r", {"a": 2, "b": {"x": "yz", "w": [1.5]}}, if_token=t1)])
    assert changed != t1
    (retyped,) = docstore.commit([Write("set", "runs/r", {"a": 2, "b": {"x": "yz", "w": [1.0]}}, if_token=changed)])
    assert retyped != changed  # 1.5 -> 1.0: same length, another value


def test_delete(docstore: DocStore) -> None:
    (t1,) = docstore.commit([Write("create", "audit/a", {"x": 1})])
    assert docstore.commit([Write("delete", "audit/missing")]) == [""]
    docstore.commit([Write("update", "audit/a", {"x": 2})])
    with pytest.raises(PreconditionFailed):
        docstore.commit([Write("delete", "audit/a", if_token=t1)])
    assert docstore.get("audit/a") is not None
    current = docstore.get("audit/a").token  # type: ignore[union-attr]
    assert docstore.commit([Write("delete", "audit/a", if_token=current)]) == [""]
    assert docstore.get("audit/a") is None


def test_token_changes_on_every_write(docstore: DocStore) -> None:
    tokens = docstore.commit([Write("create", "runs/r", {"i": 0})])
    for i in range(1, 4):
        tokens += docstore.commit([Write("set", "runs/r", {"i": i}, if_token=tokens[-1])])
    tokens += docstore.commit([Write("update", "runs/r", {"i": 9})])
    tokens += docstore.commit([Write("update", "runs/r", {"i": 9.0})])  # a new type is a change
    assert len(set(tokens)) == len(tokens)
    assert docstore.get("runs/r").token == tokens[-1]  # type: ignore[union-attr]
    # As in Firestore, a write that leaves the document as it was keeps its version.
    assert docstore.commit([Write("set", "runs/r", {"i": 9.0}, if_token=tokens[-1]),
                            Write("update", "runs/r", {})]) == [tokens[-1], tokens[-1]]
    docstore.commit([Write("delete", "runs/r")])
    (recreated,) = docstore.commit([Write("create", "runs/r", {"i": 0})])
    assert recreated not in tokens


def test_get_many_keeps_order(docstore: DocStore) -> None:
    docstore.commit([Write("set", f"users/u{i}", {"i": i}) for i in range(3)])
    docs = docstore.get_many(["users/u2", "users/none", "users/u0", "users/u2"])
    assert [d.data["i"] if d else None for d in docs] == [2, None, 0, 2]
    assert docstore.get_many([]) == []


def test_invalid_paths_are_refused(docstore: DocStore) -> None:
    for bad in ("runs", "runs/r1/events", "runs//x", ""):
        with pytest.raises(ValueError):
            docstore.get(bad)
    with pytest.raises(ValueError):
        docstore.query(Query("runs/r1"))


# -- queries ------------------------------------------------------------------------------------


@pytest.fixture
def people(docstore: DocStore) -> DocStore:
    rows = {
        "ann": {"team": "a", "age": 30, "active": True},
        "bob": {"team": "b", "age": 25, "active": True},
        "cid": {"team": "a", "age": 41, "active": False},
        "dee": {"team": "a", "age": 25.5, "active": True},
        "eve": {"team": "b", "active": 1},  # no age; active is a number, not a boolean
    }
    docstore.commit([Write("set", f"people/{k}", v) for k, v in rows.items()])
    docstore.commit([Write("set", "people/ann/pets/rex", {"team": "a", "age": 3})])  # a subcollection
    return docstore


def test_query_by_id(people: DocStore) -> None:
    assert ids(people.query(Query("people"))) == ["ann", "bob", "cid", "dee", "eve"]
    assert ids(people.query(Query("people", descending=True, limit=2))) == ["eve", "dee"]
    assert ids(people.query(Query("people", start_after="bob"))) == ["cid", "dee", "eve"]
    assert ids(people.query(Query("people", start_after="cid", descending=True))) == ["bob", "ann"]
    assert ids(people.query(Query("people/ann/pets"))) == ["rex"]
    assert people.query(Query("nothing")) == []


def test_query_where(people: DocStore) -> None:
    assert ids(people.query(Query("people", where=(("team", "a"),)))) == ["ann", "cid", "dee"]
    assert ids(people.query(Query("people", where=(("team", "a"), ("active", True))))) == ["ann", "dee"]
    assert ids(people.query(Query("people", where=(("active", 1),)))) == ["eve"]
    assert ids(people.query(Query("people", where=(("age", 25.0),)))) == ["bob"]
    assert ids(people.query(Query("people", where=(("team", "z"),)))) == []
    docs = people.query(Query("people", where=(("team", "b"),), limit=1))
    assert [(d.id, d.data) for d in docs] == [("bob", {"team": "b", "age": 25, "active": True})]


def test_query_order_by_field(people: DocStore) -> None:
    # Documents without the order field are left out, as Firestore does.
    assert ids(people.query(Query("people", order_by="age"))) == ["bob", "dee", "ann", "cid"]
    assert ids(people.query(Query("people", order_by="age", descending=True))) == ["cid", "ann", "dee", "bob"]
    assert ids(people.query(Query("people", order_by="age", start_after=25.5))) == ["ann", "cid"]
    assert ids(people.query(Query("people", order_by="age", start_after=30, descending=True))) == ["dee", "bob"]
    assert ids(people.query(Query("people", order_by="age", limit=2))) == ["bob", "dee"]
    assert ids(people.query(Query("people", where=(("team", "a"),), order_by="age", descending=True,
                                  limit=2))) == ["cid", "ann"]


def test_a_value_and_id_cursor_pages_through_equal_values_once(docstore: DocStore) -> None:
    """Pages of 2 over documents whose order field is equal for most (created in the same instant):
    ``start_after`` + ``start_after_id`` resumes after exactly the last document seen."""
    at = {"d1": 5.0, "d2": 7.0, "d3": 7.0, "d4": 7.0, "d5": 7.0, "d6": 9.0}
    docstore.commit([Write("set", f"items/{k}", {"u": "x", "at": v}) for k, v in at.items()])
    for descending in (True, False):
        seen: list[str] = []
        cursor: tuple[float, str] | None = None
        while True:
            page = docstore.query(Query("items", where=(("u", "x"),), order_by="at", descending=descending, limit=2,
                                        start_after=cursor[0] if cursor else None,
                                        start_after_id=cursor[1] if cursor else None))
            if not page:
                break
            seen += ids(page)
            cursor = (page[-1].data["at"], page[-1].id)
        expected = sorted(at, key=lambda k: (at[k], k), reverse=descending)
        assert seen == expected


def test_sum_of_adds_the_numbers_the_query_matches(people: DocStore) -> None:
    assert people.sum_of(Query("people"), "age") == 30 + 25 + 41 + 25.5  # eve has no age
    assert people.sum_of(Query("people", where=(("team", "b"),)), "age") == 25
    assert people.sum_of(Query("people", where=(("team", "a"),), order_by="age"), "age") == 96.5
    assert people.sum_of(Query("people", order_by="age", start_after=25.5), "age") == 71
    assert people.sum_of(Query("people", where=(("team", "z"),)), "age") == 0
    assert people.sum_of(Query("nothing"), "age") == 0
    whole = people.sum_of(Query("people", where=(("team", "b"),)), "age")
    assert isinstance(whole, int)  # integers sum to an integer (token counts stay exact)
    people.commit([Write("set", "people/fay", {"team": "b", "age": "old"}),  # not a number: adds nothing
                   Write("set", "people/gus", {"team": "b", "age": True})])
    assert people.sum_of(Query("people", where=(("team", "b"),)), "age") == 25
    assert people.sum_of(Query("people/ann/pets"), "age") == 3  # one collection, not its subcollections


def test_query_ties_order_by_id_in_query_direction(docstore: DocStore) -> None:
    docstore.commit([Write("set", f"msgs/{k}", {"at": 1}) for k in ("b", "a", "c")])
    assert ids(docstore.query(Query("msgs", order_by="at"))) == ["a", "b", "c"]
    assert ids(docstore.query(Query("msgs", order_by="at", descending=True))) == ["c", "b", "a"]


def test_delete_collection_is_not_recursive(people: DocStore) -> None:
    people.delete_collection("people")
    assert people.query(Query("people")) == []
    assert ids(people.query(Query("people/ann/pets"))) == ["rex"]


# -- values -------------------------------------------------------------------------------------


def test_values_round_trip_exactly(docstore: DocStore) -> None:
    data = {
        "nested": [[1, [2, []]], {"x": [[]]}, [], [[[None]]]],
        "unicode": "héllo ☃ 𝄞 日本語 \u0000 \n\"quoted\"",
        "ключ": "ü",
        "float": 1.0, "int": 2, "big": 2**53 + 1, "neg": -5, "tiny": 1e-300, "pi": 3.141592653589793,
        "bool": False, "none": None, "empty_map": {}, "empty_list": [],
        "deep": {"a": {"b": {"c": [1, "two", 3.5, True, None, {"d": [[1]]}]}}},
        "looks_wrapped": {"@array": [1]}, "also": {"@map": {"@array": []}}, "two_keys": {"@array": [], "x": 1},
    }
    (token,) = docstore.commit([Write("create", "threads/t/messages/m1", data)])
    doc = docstore.get("threads/t/messages/m1")
    assert doc is not None and doc.token == token
    assert exact(doc.data) == exact(data)
    assert exact(docstore.query(Query("threads/t/messages"))[0].data) == exact(data)
    docstore.commit([Write("update", "threads/t/messages/m1", {"nested": [[["x"]]]})])
    assert docstore.get("threads/t/messages/m1").data["nested"] == [[["x"]]]  # type: ignore[union-attr]


# -- transactions -------------------------------------------------------------------------------


def test_transaction_read_modify_write(docstore: DocStore) -> None:
    docstore.commit([Write("create", "counters/c", {"n": 1})])

    def bump(t: Transaction) -> int:
        doc = t.get("counters/c")
        missing = t.get("counters/none")
        assert doc is not None and missing is None
        n = int(doc.data["n"]) + 1
        t.write(Write("set", "counters/c", {"n": n}, if_token=doc.token))
        t.write(Write("create", f"counters/c/log/{n}", {"n": n}))
        return n

    assert docstore.run_transaction(bump) == 2
    assert docstore.run_transaction(bump) == 3
    assert docstore.get("counters/c").data == {"n": 3}  # type: ignore[union-attr]
    assert ids(docstore.run_transaction(lambda t: t.query(Query("counters/c/log")))) == ["2", "3"]


def test_transaction_get_many_reads_in_order(docstore: DocStore) -> None:
    """``Transaction.get_many``: the documents in the order asked (missing ones None, a repeated
    path twice), read by the transaction whose writes commit with it."""
    docstore.commit([Write("create", "counters/a", {"n": 1}), Write("create", "counters/b", {"n": 2})])

    def both(t: Transaction) -> list[Any]:
        docs = t.get_many(["counters/b", "counters/none", "counters/a", "counters/b"])
        b, _, a, _ = docs
        assert a is not None and b is not None
        t.write(Write("set", "counters/sum", {"n": int(a.data["n"]) + int(b.data["n"])}))
        t.write(Write("update", "counters/a", {"n": 10}, if_token=a.token))
        return [None if d is None else d.data["n"] for d in docs]

    assert docstore.run_transaction(lambda t: t.get_many([])) == []
    assert docstore.run_transaction(both) == [2, None, 1, 2]
    assert docstore.get("counters/sum").data == {"n": 3}  # type: ignore[union-attr]
    assert docstore.get("counters/a").data == {"n": 10}  # type: ignore[union-attr]


def test_transaction_exception_rolls_back(docstore: DocStore) -> None:
    docstore.commit([Write("create", "counters/c", {"n": 1})])

    class Boom(Exception):
        pass

    def fail(t: Transaction) -> None:
        t.get("counters/c")
        t.write(Write("set", "counters/c", {"n": 100}))
        t.write(Write("create", "counters/d", {"n": 1}))
        raise Boom

    with pytest.raises(Boom):
        docstore.run_transaction(fail)
    assert docstore.get("counters/c").data == {"n": 1}  # type: ignore[union-attr]
    assert docstore.get("counters/d") is None


def test_transaction_failed_precondition_applies_nothing(docstore: DocStore) -> None:
    docstore.commit([Write("create", "counters/c", {"n": 1}), Write("create", "counters/taken", {})])

    def clash(t: Transaction) -> None:
        t.get("counters/c")
        t.write(Write("update", "counters/c", {"n": 2}))
        t.write(Write("create", "counters/taken", {"mine": True}))

    with pytest.raises(PreconditionFailed):
        docstore.run_transaction(clash)
    assert docstore.get("counters/c").data == {"n": 1}  # type: ignore[union-attr]
    assert docstore.get("counters/taken").data == {}  # type: ignore[union-attr]


def test_transactions_racing_on_one_document_lose_no_update(docstore: DocStore) -> None:
    """Two read-modify-write transactions overlap; a conflict re-runs one (or ends in contention)."""
    docstore.commit([Write("create", "counters/c", {"n": 0})])
    first_read = threading.Event()
    second_read = threading.Event()
    reads: list[tuple[str, int]] = []  # (transaction, value it read), one per attempt
    outcome: dict[str, Any] = {}

    def increment(name: str) -> None:
        def txn(t: Transaction) -> None:
            doc = t.get("counters/c")
            assert doc is not None
            reads.append((name, int(doc.data["n"])))
            if name == "A" and not first_read.is_set():
                first_read.set()
                # Let B read the same version too. Where transactions serialise (SQLite holds the
                # write lock from the first read) B cannot read yet and the wait just runs out.
                second_read.wait(timeout=1.0)
            if name == "B":
                second_read.set()
            t.write(Write("update", "counters/c", {"n": int(doc.data["n"]) + 1}))

        try:
            docstore.run_transaction(txn)
            outcome[name] = "ok"
        except TransactionContention as exc:
            outcome[name] = exc

    a = threading.Thread(target=increment, args=("A",))
    a.start()
    assert first_read.wait(timeout=30)
    b = threading.Thread(target=increment, args=("B",))
    b.start()
    a.join()
    b.join()
    succeeded = [k for k, v in outcome.items() if v == "ok"]
    assert len(outcome) == 2 and succeeded, outcome
    assert docstore.get("counters/c").data["n"] == len(succeeded), (reads, outcome)  # type: ignore[union-attr]
    # The attempts that committed read different versions: a loser was re-run from a fresh read.
    committed_reads = [[n for who, n in reads if who == name][-1] for name in succeeded]
    assert sorted(committed_reads) == list(range(len(succeeded))), reads


def test_increment_adds_to_fields_and_creates_the_document(docstore: DocStore) -> None:
    docstore.commit([Write("increment", "counters/day", {"tokens": 5, "calls": 1})])
    assert exact(docstore.get("counters/day").data) == exact({"tokens": 5, "calls": 1})  # type: ignore[union-attr]
    docstore.commit([Write("set", "counters/day", {"note": "kept"}, merge=True)])
    before = docstore.get("counters/day")
    assert before is not None
    (token,) = docstore.commit([Write("increment", "counters/day", {"tokens": 7, "calls": 1, "cost": 0.5})])
    after = docstore.get("counters/day")
    assert after is not None and token == after.token != before.token
    assert exact(after.data) == exact({"tokens": 12, "calls": 2, "cost": 0.5, "note": "kept"})
    docstore.commit([Write("increment", "counters/day", {"note": 3})])  # not a number: counts as 0
    assert docstore.get("counters/day").data["note"] == 3  # type: ignore[union-attr]


def test_increment_applies_with_its_batch_or_not_at_all(docstore: DocStore) -> None:
    entry_and_counter = [Write("create", "ledger/e1", {"tokens": 5}), Write("increment", "counters/day", {"tokens": 5})]
    docstore.commit(entry_and_counter)
    with pytest.raises(PreconditionFailed):  # a replayed entry: the counter does not move either
        docstore.commit(entry_and_counter)
    assert docstore.get("counters/day").data == {"tokens": 5}  # type: ignore[union-attr]
    for bad in (Write("increment", "counters/day", {"tokens": "5"}), Write("increment", "counters/day", {"x": True}),
                Write("increment", "counters/day", {"tokens": 1}, if_token="1")):
        with pytest.raises(ValueError):
            docstore.commit([bad])
    assert docstore.get("counters/day").data == {"tokens": 5}  # type: ignore[union-attr]


def test_concurrent_increments_lose_nothing(docstore: DocStore) -> None:
    workers, each = 4, 5
    barrier = threading.Barrier(workers)
    errors: list[BaseException] = []

    def add(i: int) -> None:
        barrier.wait()
        try:
            for n in range(each):
                docstore.commit([Write("create", f"ledger/w{i}-{n}", {"tokens": 2}),
                                 Write("increment", "counters/day", {"tokens": 2, "calls": 1})])
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert docstore.get("counters/day").data == {"tokens": 2 * workers * each, "calls": workers * each}  # type: ignore[union-attr]
    assert docstore.sum_of(Query("ledger"), "tokens") == 2 * workers * each


def test_concurrent_conditional_commits_exactly_one_wins(docstore: DocStore) -> None:
    (token,) = docstore.commit([Write("create", "runs/r", {"owner": None})])
    workers = 4
    barrier = threading.Barrier(workers)
    results: dict[int, Any] = {}

    def claim(i: int) -> None:
        barrier.wait()
        try:
            results[i] = docstore.commit([Write("set", "runs/r", {"owner": i}, if_token=token)])[0]
        except StoreError as exc:
            results[i] = exc

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, r in results.items() if isinstance(r, str)]
    assert len(winners) == 1, results
    assert all(isinstance(r, PreconditionFailed) for i, r in results.items() if i != winners[0]), results
    doc = docstore.get("runs/r")
    assert doc is not None and doc.data == {"owner": winners[0]} and doc.token == results[winners[0]]


def test_expire_at_round_trips_as_epoch_seconds(docstore: DocStore) -> None:
    """``expireAt`` is a TTL field: Firestore stores it as a Timestamp; both read back seconds."""
    docstore.commit([Write("create", "ttl/a", {"expireAt": 1_900_000_000.25, "n": 1})])
    doc = docstore.get("ttl/a")
    assert doc is not None and doc.data == {"expireAt": 1_900_000_000.25, "n": 1}


def test_firestore_stores_expire_at_as_a_timestamp(firestore_docstore: DocStore,
                                                   firestore_client: Any) -> None:
    """Firestore TTL policies only act on Timestamp fields."""
    import datetime

    firestore_docstore.commit([Write("create", "ttl/b", {"expireAt": 1_900_000_000.0})])
    raw = firestore_client.document("ttl/b").get().to_dict()
    assert isinstance(raw["expireAt"], datetime.datetime)

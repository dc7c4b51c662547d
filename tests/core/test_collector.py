"""The garbage collector's settings are put back as they were found: a paused block turns the
collector back on (only if it was on, also after an error), a freezer unfreezes what it froze and
leaves a host's own freeze alone; objects frozen inside a freezer are never scanned; a reference
cycle made while the collector was paused is still collected afterwards."""

from __future__ import annotations

import gc
import weakref

import pytest

from sourcebias.core import collector


@pytest.fixture(autouse=True)
def _collector_as_found():
    enabled, frozen = gc.isenabled(), gc.get_freeze_count()
    yield
    assert gc.isenabled() == enabled and gc.get_freeze_count() == frozen
    gc.enable()


def test_paused_turns_the_collector_back_on_only_if_it_was_on():
    gc.enable()
    with collector.paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    with collector.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
    gc.enable()
    with pytest.raises(RuntimeError), collector.paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_cycle_made_while_paused_is_collected_afterwards():
    class Node:
        pass

    with collector.paused():
        a, b = Node(), Node()
        a.other, b.other = b, a
        ref = weakref.ref(a)
        del a, b
        assert ref() is not None  # reference counting alone cannot free a cycle
    gc.collect()
    assert ref() is None


def test_a_freezer_freezes_and_puts_back():
    assert gc.get_freeze_count() == 0
    kept = [[i] for i in range(1000)]  # containers the collector tracks
    with collector.Freezer() as frozen:
        frozen.now()
        assert gc.get_freeze_count() >= len(kept)
        before = gc.get_freeze_count()
        with collector.paused():
            made = [[i] for i in range(500)]
        assert gc.get_freeze_count() >= before + len(made)  # what the paused block made is frozen at its end
        assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_a_freezer_leaves_a_hosts_freeze_alone():
    gc.freeze()
    host = gc.get_freeze_count()
    try:
        with collector.Freezer() as frozen:
            frozen.now()
            with collector.paused():
                _ = [[i] for i in range(100)]
            assert gc.get_freeze_count() == host  # nothing more frozen
        assert gc.get_freeze_count() == host  # and the host's freeze is kept
    finally:
        gc.unfreeze()

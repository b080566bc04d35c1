"""Mailbox rules (PRD §4.3 消息队列管理; DESIGN.md §4): priority, FIFO, capacity, eviction, TTL."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from teamclaw.runtime import AgentMessage, MessageType, Party, Priority
from teamclaw.runtime.mailbox import Mailbox
from teamclaw.runtime.messages import MessageContext


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def message(priority: Priority, clock: Clock, ttl: int = 60_000, label: str = "") -> AgentMessage:
    return AgentMessage(
        MessageType.HOOK_EVENT,
        Party("a"),
        Party("b"),
        {"label": label},
        MessageContext("t", "t"),
        clock.ms,
        priority,
        ttl,
    )


def test_delivers_urgent_before_high_before_normal_before_low_and_fifo_within_one():
    clock = Clock()
    box = Mailbox(10, now_ms=clock)
    order = [
        (Priority.LOW, "l1"),
        (Priority.NORMAL, "n1"),
        (Priority.URGENT, "u1"),
        (Priority.NORMAL, "n2"),
        (Priority.HIGH, "h1"),
        (Priority.URGENT, "u2"),
        (Priority.LOW, "l2"),
    ]
    for priority, label in order:
        assert box.put(message(priority, clock, label=label)).accepted
    assert [box.pop().payload["label"] for _ in order] == ["u1", "u2", "h1", "n1", "n2", "l1", "l2"]
    assert box.pop() is None


def test_full_mailbox_evicts_the_oldest_message_of_the_lowest_lower_priority():
    clock = Clock()
    box = Mailbox(3, now_ms=clock)
    for label, priority in (("n1", Priority.NORMAL), ("l1", Priority.LOW), ("l2", Priority.LOW)):
        box.put(message(priority, clock, label=label))
    result = box.put(message(Priority.HIGH, clock, label="h1"))
    assert result.accepted
    assert result.evicted.payload["label"] == "l1"
    assert len(box) == 3


def test_full_mailbox_refuses_an_arrival_with_nothing_lower_to_evict():
    clock = Clock()
    box = Mailbox(2, now_ms=clock)
    box.put(message(Priority.NORMAL, clock, label="n1"))
    box.put(message(Priority.HIGH, clock, label="h1"))
    refused = box.put(message(Priority.NORMAL, clock, label="n2"))
    assert not refused.accepted
    assert refused.evicted is None
    assert [box.pop().payload["label"], box.pop().payload["label"]] == ["h1", "n1"]


def test_expired_messages_are_never_delivered_wherever_they_sit():
    clock = Clock()
    expired = []
    box = Mailbox(10, now_ms=clock, on_expired=expired.append)
    box.put(message(Priority.URGENT, clock, ttl=100, label="short"))
    box.put(message(Priority.LOW, clock, ttl=10_000, label="long"))
    box.put(message(Priority.NORMAL, clock, ttl=50, label="shorter"))
    clock.ms += 101
    assert box.pop().payload["label"] == "long"
    assert {m.payload["label"] for m in expired} == {"short", "shorter"}
    assert box.pop() is None


def test_a_full_mailbox_clears_expired_messages_before_evicting_or_refusing():
    clock = Clock()
    expired = []
    box = Mailbox(2, now_ms=clock, on_expired=expired.append)
    box.put(message(Priority.URGENT, clock, ttl=10, label="old"))
    box.put(message(Priority.URGENT, clock, ttl=10_000, label="keep"))
    clock.ms += 11
    result = box.put(message(Priority.LOW, clock, label="new"))
    assert result.accepted
    assert result.evicted is None
    assert [m.payload["label"] for m in result.expired] == ["old"]


class MailboxModel(RuleBasedStateMachine):
    """The mailbox against a plain reference model, over random puts, pops and time."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()
        self.expired: list[AgentMessage] = []
        self.box = Mailbox(5, now_ms=self.clock, on_expired=self.expired.append)
        self.model: list[AgentMessage] = []  # queued, in arrival order
        self.dropped: list[AgentMessage] = []
        self.counter = 0

    def _live(self) -> list[AgentMessage]:
        return [m for m in self.model if not m.expired(self.clock.ms)]

    @rule(priority=st.sampled_from(list(Priority)), ttl=st.integers(1, 50))
    def put(self, priority, ttl):
        self.counter += 1
        arrival = message(priority, self.clock, ttl=ttl, label=str(self.counter))
        # reference: if full, expired go first; then evict oldest of the lowest lower priority
        if len(self.model) >= 5:
            self.model = self._live()
        expected_evicted = None
        expected_accept = True
        if len(self.model) >= 5:
            lower = [m for m in self.model if m.priority < priority]
            if lower:
                lowest = min(m.priority for m in lower)
                expected_evicted = next(m for m in self.model if m.priority == lowest)
                self.model.remove(expected_evicted)
            else:
                expected_accept = False
        result = self.box.put(arrival)
        assert result.accepted == expected_accept
        assert result.evicted is expected_evicted
        if expected_accept:
            self.model.append(arrival)
        else:
            self.dropped.append(arrival)

    @precondition(lambda self: True)
    @rule()
    def pop(self):
        live = self._live()
        expected = max(live, key=lambda m: (m.priority, -self.model.index(m))) if live else None
        got = self.box.pop()
        assert got is expected
        # everything expired or delivered before it is gone from the box
        self.model = [m for m in self.model if m is not got and not m.expired(self.clock.ms)]

    @rule(ms=st.integers(0, 30))
    def advance(self, ms):
        self.clock.ms += ms

    @invariant()
    def never_delivers_or_keeps_more_than_capacity(self):
        assert len(self.box) <= 5

    @invariant()
    def expired_messages_were_expired(self):
        assert all(m.expired(self.clock.ms) for m in self.expired)


TestMailboxModel = MailboxModel.TestCase
TestMailboxModel.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)

"""Messages' ``seq`` (``teamclaw.runtime.messages.SendOrder``): the order the message log
lists and records messages in, within a process and across processes (a task resumed by
another worker sends its later messages from a new process)."""

from __future__ import annotations

import subprocess
import sys
import threading

from teamclaw.runtime import AgentMessage, MessageType, Party
from teamclaw.runtime.messages import MessageContext, SendOrder

MINT = (
    "from teamclaw.runtime import AgentMessage, MessageType, Party;"
    "from teamclaw.runtime.messages import MessageContext;"
    "print(AgentMessage(MessageType.HOOK_EVENT, Party(role='a'), Party(role='b'), {},"
    " MessageContext('t', 't', 'c'), 0).seq)"
)


def a_message() -> AgentMessage:
    return AgentMessage(MessageType.HOOK_EVENT, Party(role="a"), Party(role="b"), {}, MessageContext("t", "t", "c"), 0)


def test_a_message_sent_by_a_process_started_later_sorts_after_this_ones_even_after_many_sends():
    """This process sends many messages, then a new OS process sends one, then this one
    again: the log's order is the order they were sent. Before, each process counted from
    1, so the later process's message sorted first."""
    earlier = [a_message().seq for _ in range(50_000)][-1]
    minted = subprocess.run([sys.executable, "-c", MINT], check=True, capture_output=True, text=True)
    in_other_process = int(minted.stdout)
    later = a_message().seq
    assert earlier < in_other_process < later


def test_seq_is_strictly_increasing_across_threads():
    order = SendOrder()
    seen: list[list[int]] = [[] for _ in range(4)]

    def mint(into: list[int]) -> None:
        into.extend(order.next() for _ in range(20_000))

    threads = [threading.Thread(target=mint, args=(into,)) for into in seen]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    values = [v for into in seen for v in into]
    assert len(set(values)) == len(values)  # no two messages share a place in the order
    assert all(into == sorted(into) for into in seen)
    assert max(values) < 2**53  # exact as a JSON number in a browser

"""Benchmark: the live sink fanning 1,000 events/s out to 20 connected browsers (issue #6).

Everything real but the network and the runtime: the project's ASGI application (session
login, origin check, ``LiveConsumer``), Channels' in-memory layer, the live sink's thread,
and 20 websocket clients (channels' WebsocketCommunicator) on a "server" event loop thread,
as daphne runs them. 15 clients keep up (they acknowledge every frame, as the page's script
does); 5 are stalled (they never read or acknowledge anything after connecting). A producer
thread plays the recorder: every 50 ms it hands the sink a committed batch of 50 runtime
events (40 messages, 10 updates of 5 execution contexts), i.e. 1,000 events/s.

``--chinese N`` gives N of the keeping-up clients the ``django_language=zh-hans`` cookie: the
sink then renders every event in English and Chinese (once per language, not per client), so
comparing ``sink_busy_s_per_wall_s`` with ``--chinese 0`` shows what the second language costs.
``--zoned N`` gives N of the keeping-up clients a ``teamclaw_tz`` cookie (Asia/Shanghai,
America/New_York, Europe/Berlin in turn): each of those sockets rewords the times of every
event it sends (``monitoring.live_times.in_zone``, cached per text and zone), so comparing
``cpu_s_per_wall_s`` with ``--zoned 0`` shows what zones cost; ``in_zone_us_per_event``
is one uncached rewording of a message row.

It prints ``name value`` lines: throughput, delivery to the keeping-up clients, end-to-end
latency (event created -> client parsed it), what the stalled clients hold, the process's
resident memory over time and its growth after warm-up, and CPU per second of wall time.

    .venv/bin/python bench/live_sink_bench.py [--seconds 20] [--rate 1000] [--clients 20] [--stalled 5]
        [--chinese 0] [--zoned 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


ZONES = ("Asia/Shanghai", "America/New_York", "Europe/Berlin")
FRAME_HEAD = re.compile(r'\{"type": ?"(\w+)", ?"seq": ?(\d+)')


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def setup_django(data_dir: str) -> None:
    os.environ["TEAMCLAW_DATA_DIR"] = data_dir
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "teamclaw.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("load_builtin", verbosity=0)


class Client:
    """One websocket client on the server loop: reads frames and (unless stalled) acks them."""

    def __init__(self, communicator, stalled: bool) -> None:
        self.communicator = communicator
        self.stalled = stalled
        self.events = 0
        self.frames = 0
        self.latencies_ms: list[float] = []
        self.behind = 0
        self.resyncs = 0

    async def run(self) -> None:
        first = json.loads(await self.communicator.receive_from(timeout=30))
        assert first["type"] == "state"
        if self.stalled:
            return  # never reads or acknowledges again
        await self.communicator.send_to(text_data=json.dumps({"type": "ack", "seq": first["seq"]}))
        while True:
            try:
                raw = await self.communicator.receive_from(timeout=5)
            except TimeoutError:
                return
            now = time.time()
            self.frames += 1
            head = FRAME_HEAD.match(raw)
            assert head is not None, raw[:80]
            kind, seq = head.group(1), int(head.group(2))
            if kind == "events":
                self.events += raw.count('{"kind":')
                if self.frames % 10 == 0:  # a browser parses every frame; here one in ten is enough
                    for event in json.loads(raw)["events"]:
                        if event["kind"] == "message":
                            at = datetime.fromisoformat(event["data"]["at"]).timestamp()
                            self.latencies_ms.append((now - at) * 1000)
            elif kind == "behind":
                self.behind += 1
            elif kind == "state":
                self.resyncs += 1
            await self.communicator.send_to(text_data=json.dumps({"type": "ack", "seq": seq}))


def in_zone_cost_us() -> float:
    """Microseconds of one uncached ``in_zone`` of a message row's text (Shanghai, English)."""
    from zoneinfo import ZoneInfo

    from monitoring import live_events, live_times
    from monitoring.live_items import from_epoch

    item = {"id": "m", "seq": 1, "type": "invoke_request", "from_role": "main", "to_role": "pm", "task_id": "t"}
    item |= {"from_instance": "main-1", "to_instance": "pm-1", "capability_id": "requirement_writing"}
    item |= {"priority": "normal", "status": "delivered", "reason": "", "at": from_epoch(time.time())}
    item |= {"summary": "params {idea}", "summary_parts": ["params", {"keys": "idea"}]}
    text = live_events.render_one("message", "message:m", item).texts["en"]
    zone, rounds = ZoneInfo("Asia/Shanghai"), 2000
    started = time.perf_counter()
    for _ in range(rounds):
        live_times.in_zone.__wrapped__(text, zone, "en")
    return (time.perf_counter() - started) / rounds * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40)
    parser.add_argument("--rate", type=int, default=1000, help="events per second")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--stalled", type=int, default=5)
    parser.add_argument("--chinese", type=int, default=0, help="keeping-up clients reading Chinese")
    parser.add_argument("--zoned", type=int, default=0, help="keeping-up clients in a zone other than UTC")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="teamclaw-bench-") as data_dir:
        setup_django(data_dir)
        run(args)


def run(args: argparse.Namespace) -> None:
    from channels.testing import WebsocketCommunicator
    from django.contrib.auth import get_user_model

    from monitoring import live_times
    from monitoring.live_sink import get_live_sink
    from monitoring.models import Task
    from teamclaw.asgi import application
    from teamclaw.runtime.context import ContextStatus, ExecutionContext
    from teamclaw.runtime.events import ContextChanged, MessageSent
    from teamclaw.runtime.messages import AgentMessage, DeliveryStatus, MessageContext, MessageType, Party
    from tests.live_helpers import session_cookie

    user = get_user_model().objects.create_user("bench", password="x", is_staff=True)
    task = Task.objects.create(id="benchtask", title="Bench", status="running", created_by=user)
    cookie = session_cookie(user)
    sink = get_live_sink()

    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="server-loop", daemon=True).start()

    async def connect_all() -> list[Client]:
        clients = []
        for i in range(args.clients):
            chinese = i >= args.clients - args.chinese
            sent = cookie + b"; django_language=zh-hans" if chinese else cookie
            if args.stalled <= i < args.stalled + args.zoned:
                sent += b"; teamclaw_tz=" + ZONES[(i - args.stalled) % len(ZONES)].encode()
            communicator = WebsocketCommunicator(
                application,
                "/ws/live/",
                headers=[(b"host", b"localhost"), (b"origin", b"http://localhost"), (b"cookie", sent)],
            )
            connected, code = await communicator.connect(timeout=30)
            assert connected, code
            clients.append(Client(communicator, stalled=i < args.stalled))
        return clients

    clients = asyncio.run_coroutine_threadsafe(connect_all(), loop).result(120)
    runners = [asyncio.run_coroutine_threadsafe(c.run(), loop) for c in clients]
    time.sleep(1)

    contexts = [
        ExecutionContext(f"pm-{i}", "pm", task.id, "bench", task.id, None, 1, created_at=time.time()) for i in range(5)
    ]
    batch_every = 0.05
    per_batch = max(1, int(args.rate * batch_every))
    stop = threading.Event()
    produced = [0]

    def produce() -> None:
        tick = time.monotonic()
        n = 0
        while not stop.is_set():
            batch = []
            for k in range(per_batch):
                n += 1
                if k % 5 == 4:
                    context = contexts[(k // 5) % len(contexts)]
                    context.status = ContextStatus.EXECUTING
                    context.progress = n % 100
                    context.current_step = f"step {n}"
                    context.updated_at = time.time()
                    batch.append(ContextChanged(context, at=time.time()))
                else:
                    message = AgentMessage(
                        type=MessageType.INVOKE_REQUEST if n % 2 else MessageType.INVOKE_RESPONSE,
                        sender=Party(role="main", instance_id="main-1"),
                        recipient=Party(role="pm", instance_id="pm-1"),
                        payload={"capability_id": "requirement_analysis", "params": {"requirement": f"r{n}"}},
                        context=MessageContext(task.id, task.id, f"c{n}"),
                        timestamp=int(time.time() * 1000),
                    )
                    batch.append(MessageSent(message, DeliveryStatus.DELIVERED, at=time.time()))
            sink.on_batch(batch)  # what the recorder calls after each commit
            produced[0] += len(batch)
            tick += batch_every
            time.sleep(max(0.0, tick - time.monotonic()))

    rss = [rss_mb()]
    cpu_start = resource.getrusage(resource.RUSAGE_SELF)
    wall_start = time.monotonic()
    producer = threading.Thread(target=produce, name="producer", daemon=True)
    producer.start()
    samples = []
    backlog = []
    while time.monotonic() - wall_start < args.seconds:
        time.sleep(1)
        samples.append(rss_mb())
        backlog.append(sink.backlog)
    stop.set()
    producer.join()
    wall = time.monotonic() - wall_start
    sink.flush(30)
    cpu_end = resource.getrusage(resource.RUSAGE_SELF)
    for runner in runners:
        runner.result(60)

    fast = [c for c in clients if not c.stalled]
    stalled = [c for c in clients if c.stalled]
    latencies = sorted(x for c in fast for x in c.latencies_ms)
    # Warm-up: the sink's ring of recent batches (RING_BATCHES, ~6 s at this rate) fills first.
    warm = samples[min(9, len(samples) - 1)]
    cpu = (cpu_end.ru_utime + cpu_end.ru_stime) - (cpu_start.ru_utime + cpu_start.ru_stime)
    messages_sent = produced[0] * 4 // 5
    print(f"seconds {wall:.1f}")
    print(f"clients {len(clients)}")
    print(f"stalled_clients {len(stalled)}")
    print(f"chinese_clients {args.chinese}")
    print(f"zoned_clients {args.zoned}")
    rewordings = live_times.in_zone.cache_info()
    print(f"in_zone_calls {rewordings.hits + rewordings.misses}")
    print(f"in_zone_cache_hits {rewordings.hits}")
    print(f"in_zone_us_per_event {in_zone_cost_us():.1f}")
    print(f"languages_rendered {','.join(sink.languages())}")
    print(f"events_produced {produced[0]}")
    print(f"events_produced_per_s {produced[0] / wall:.0f}")
    print(f"live_items_published {sink.events}")
    print(f"live_items_published_per_s {sink.events / wall:.0f}")
    print(f"sink_group_sends {sink.group_sends}")
    print(f"sink_dropped_batches {sink.dropped_batches}")
    print(f"sink_failed_sends {sink.failed_sends}")
    print(f"fast_client_events_min {min(c.events for c in fast)}")
    print(f"fast_client_events_max {max(c.events for c in fast)}")
    print(f"fast_client_messages_expected {messages_sent}")
    print(f"fast_client_behind_notices {sum(c.behind for c in fast)}")
    print(f"fast_client_frames_avg {statistics.mean(c.frames for c in fast):.0f}")
    print(f"fast_client_resyncs {sum(c.resyncs for c in fast)}")
    print(f"latency_ms_p50 {latencies[len(latencies) // 2]:.1f}")
    print(f"latency_ms_p99 {latencies[int(len(latencies) * 0.99)]:.1f}")
    print(f"latency_ms_max {latencies[-1]:.1f}")
    print(f"stalled_client_frames_held_max {max(c.communicator.output_queue.qsize() for c in stalled)}")
    print(f"rss_mb_before {rss[0]:.1f}")
    print(f"rss_mb_after_warmup {warm:.1f}")
    print(f"rss_mb_end {samples[-1]:.1f}")
    print(f"rss_mb_growth_after_warmup {samples[-1] - warm:.1f}")
    print(f"rss_mb_samples {' '.join(f'{s:.0f}' for s in samples)}")
    print(f"sink_backlog_batches_samples {' '.join(str(b) for b in backlog)}")
    print(f"sink_busy_s_per_wall_s {sink.busy_s / wall:.2f}")
    print(f"cpu_s_per_wall_s {cpu / wall:.2f}")


if __name__ == "__main__":
    main()

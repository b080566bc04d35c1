"""Benchmark: the live page and the message log with 100,000 recorded messages (issue #6).

Builds a throw-away SQLite database (WAL, as the server uses) holding 100,000 messages over
500 tasks, 2,000 execution contexts and their snapshots, then times the server side of each
page through Django's test client (middleware, views, queries, templates; no network):
median and p95 in milliseconds over repeated requests, and the SQL queries per page. It
prints one ``name value`` line per figure, and the query plans of the log's queries.

    .venv/bin/python bench/message_log_bench.py [--messages 100000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django(data_dir: str) -> None:
    os.environ["TEAMCLAW_DATA_DIR"] = data_dir
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "teamclaw.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("load_builtin", verbosity=0)


ROLES = ["main", "pm", "designer", "architect", "coderA", "coderB", "dba", "devops", "ai_expert", "domain_expert"]
TYPES = ["invoke_request", "invoke_response", "hook_event", "hook_ack", "status_update", "progress_report"]


def populate(messages: int, tasks: int = 500) -> dict[str, object]:
    from django.contrib.auth import get_user_model

    from monitoring.models import ExecutionContext, Message, Snapshot, Task

    rng = random.Random(6)
    user = get_user_model().objects.create_user("bench", password="x", is_staff=True)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    task_rows = [
        Task(id=f"task{i:06d}", title=f"Bench task {i}", status="completed", created_by=user) for i in range(tasks)
    ]
    Task.objects.bulk_create(task_rows)
    contexts = []
    for i, task in enumerate(task_rows):
        for role in rng.sample(ROLES, 4):
            contexts.append(
                ExecutionContext(
                    id=f"ctx{len(contexts):07d}",
                    task=task,
                    instance_id=f"{role}-{i:04d}",
                    role=role,
                    status="completed",
                    progress=100,
                    input_tokens=rng.randint(100, 4000),
                    output_tokens=rng.randint(50, 2000),
                    total_tokens=0,
                    api_calls=rng.randint(1, 12),
                    tokens_estimated=True,
                    created_at=start + timedelta(minutes=i),
                    updated_at=start + timedelta(minutes=i + 1),
                    input_context={"artifacts": [], "messages": [], "user_instructions": []},
                    output_state={"generated_artifacts": [], "pending_questions": [], "errors": []},
                )
            )
    for c in contexts:
        c.total_tokens = c.input_tokens + c.output_tokens
    ExecutionContext.objects.bulk_create(contexts, batch_size=2000)
    Snapshot.objects.bulk_create(
        (
            Snapshot(
                id=f"snap{c.id}{k}",
                context=c,
                type="auto",
                trigger="start" if k == 0 else "after invoke x",
                sequence=k + 1,
                state={"id": c.id},
                created_at=c.created_at + timedelta(seconds=k),
                event_seq=None,
            )
            for c in contexts
            for k in range(3)
        ),
        batch_size=5000,
    )
    batch = []
    for seq in range(1, messages + 1):
        task = task_rows[seq * tasks // (messages + 1)]
        sender, receiver = rng.sample(ROLES, 2)
        batch.append(
            Message(
                id=f"msg{seq:09d}",
                seq=seq,
                type=rng.choice(TYPES),
                from_role=sender,
                from_instance=f"{sender}-x",
                to_role=receiver,
                to_instance=f"{receiver}-y",
                capability_id="schema_query",
                task_id=task.id,
                payload={"capability_id": "schema_query", "params": {"table": f"t{seq % 97}"}},
                priority="normal",
                ttl_ms=60_000,
                timestamp_ms=int(start.timestamp() * 1000) + seq * 10,
                status=rng.choices(["delivered", "denied", "dropped", "expired"], [96, 2, 1, 1])[0],
                event_seq=seq,
            )
        )
        if len(batch) == 5000:
            Message.objects.bulk_create(batch)
            batch = []
    if batch:
        Message.objects.bulk_create(batch)
    return {"user": user, "task": task_rows[tasks // 2], "context": contexts[len(contexts) // 2]}


def time_page(client, url: str, repeat: int) -> tuple[float, float, int, int]:
    """(median ms, p95 ms, queries, status) of GET ``url``."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(url)  # warm caches (templates, role labels)
    samples = []
    queries = 0
    status = 0
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as captured:
            begin = time.perf_counter()
            response = client.get(url)
            samples.append((time.perf_counter() - begin) * 1000)
        queries = len(captured)
        status = response.status_code
    samples.sort()
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))], queries, status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="teamclaw-bench-") as data_dir:
        setup_django(data_dir)
        from django.test import Client

        from monitoring.models import Message

        began = time.perf_counter()
        made = populate(args.messages)
        print(f"populate_s {time.perf_counter() - began:.1f}")
        print(f"messages {Message.objects.count()}")
        client = Client(HTTP_HOST="localhost")
        client.force_login(made["user"])
        task_id = made["task"].id
        deep = Message.objects.order_by("seq").values_list("seq", flat=True)[args.messages // 50]
        mid = Message.objects.order_by("seq").values_list("seq", flat=True)[args.messages // 2]
        pages = {
            "live_page": "/live/",
            "live_page_task": f"/live/?task={task_id}",
            "log_newest": "/live/log/",
            "log_page_1000": f"/live/log/?before={deep}",
            "log_page_mid": f"/live/log/?before={mid}",
            "log_role": "/live/log/?role=dba",
            "log_type": "/live/log/?type=hook_ack",
            "log_role_type": "/live/log/?role=devops&type=status_update",
            "log_task": f"/live/log/?task={task_id}",
            "log_role_deep": f"/live/log/?role=dba&before={deep}",
            "call_graph_all": "/live/graph/",
            "call_graph_task": f"/live/graph/?task={task_id}",
            "task_page": f"/tasks/{task_id}/",
            "replay_page": f"/replay/{made['context'].id}/",
            "token_stats_page": "/stats/tokens/?group_by=task",
            "api_stats_role": "/api/v1/stats/tokens?group_by=role",
            "api_contexts": "/api/v1/contexts?role=pm",
        }
        for name, url in pages.items():
            median, p95, queries, status = time_page(client, url, args.repeat)
            assert status == 200, (url, status)
            print(f"{name}_ms_median {median:.1f}")
            print(f"{name}_ms_p95 {p95:.1f}")
            print(f"{name}_queries {queries}")
        plans(task_id)


def plans(task_id: str) -> None:
    """The SQLite query plans of the log's newest-page queries (index use, no full sort)."""
    from django.db import connection

    from monitoring.live_filters import LiveFilters
    from monitoring.message_log import filtered_messages

    class Staff:
        is_authenticated = is_active = is_staff = is_superuser = True
        pk = 0

        def has_perm(self, perm: str) -> bool:
            return True

    every = filtered_messages(Staff(), LiveFilters())
    for name, queryset in {
        "plan_newest": every,
        "plan_role_sent": every.filter(from_role="dba"),
        "plan_role_received": every.filter(to_role="dba").exclude(from_role="dba"),
        "plan_type": filtered_messages(Staff(), LiveFilters(type="hook_ack")),
        "plan_task": filtered_messages(Staff(), LiveFilters(task=task_id)),
    }.items():
        queryset = queryset.order_by("-seq")[:51]
        sql, params = queryset.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
            detail = " | ".join(row[-1] for row in cursor.fetchall())
        print(f"{name} {detail}")


if __name__ == "__main__":
    main()

"""Role concurrency limits that hold across runtime workers (PRD §4.7: at most
``max_concurrent_instances`` instances per role; issue 13; ``runs.instance_slots``).

- Two runtime workers in this process (two ``RuntimeHost``s on this test's database), a role
  limited to one instance, calls to it through both at once: sampled all along, the two
  runtimes never hold more than one live instance of the role between them, every call is
  answered, and both workers served some (the slot moved from one to the other).
- A ``runtime_worker`` OS process holding the role's only slot is killed (``kill -9``): a
  worker in this process waits for the slot, takes it once the dead worker's lease has
  expired, never before, and its call is answered.

The tests use no SQL of their own, so they run on PostgreSQL as on SQLite.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future

import pytest
from django.utils import timezone

from capabilities.models import Project, RoleConstraint
from monitoring.models import AgentInstance, ExecutionContext
from runs.host import RuntimeHost
from runs.models import InstanceSlot, RuntimeCommand, RuntimeWorker
from runs.workers import worker_rows
from teamclaw.runtime import ExecutorRegistry, InvokeRequest, InvokeResult, OfflineExecutor
from teamclaw.runtime.executors.offline import synthesise
from tests.processes import manage, process_env, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

ROLE = "dba"
CALLS_PER_WORKER = 6


@pytest.fixture
def one_dba(builtin, settings):
    """dba may run one instance at a time; leases as short as the child processes' (2 s)."""
    RoleConstraint.objects.filter(project=None, role__role=ROLE).update(max_concurrent_instances=1)
    settings.TEAMCLAW = {**settings.TEAMCLAW, "LEASE_S": 2, "WORKER_HEARTBEAT_S": 1}


def slow_brain() -> ExecutorRegistry:
    """The offline brain with a ``schema_query`` that takes a moment, so calls overlap."""

    async def schema_query(call):
        await asyncio.sleep(0.05)
        return synthesise(call.card.output_schema, call.params, call.card.capability_id)

    return ExecutorRegistry({"offline": OfflineExecutor({"schema_query": schema_query})})


def invoke_dba(host: RuntimeHost, table: str, project: str | None = None) -> Future[InvokeResult]:
    runtime = host.runtime
    assert runtime is not None
    request = InvokeRequest("schema_query", {"table": table}, target_role=ROLE)
    return host.submit(runtime.invoke(request, from_role="coderA", project_id=project))


def live_instances(host: RuntimeHost) -> int:
    runtime = host.runtime
    return 0 if runtime is None else len(runtime.pool.alive(ROLE))


@pytest.fixture
def two_workers(one_dba) -> Iterator[tuple[RuntimeHost, RuntimeHost]]:
    hosts = [RuntimeHost(name, worker="worker", executors=slow_brain()).start() for name in ("slots-a", "slots-b")]
    try:
        yield hosts[0], hosts[1]
    finally:
        for host in hosts:
            host.stop()


@pytest.fixture
def two_shop_workers(one_dba, settings) -> Iterator[tuple[RuntimeHost, RuntimeHost]]:
    """Two workers on which project ``shop`` shares its instances (``INSTANCE_LIMIT_PER_PROJECT``,
    ``teamclaw.runtime.scopes``): its tasks' dba helpers take the shared slots."""
    Project.objects.create(slug="shop", name="Shop")
    settings.TEAMCLAW = {**settings.TEAMCLAW, "INSTANCE_LIMIT_PER_PROJECT": ["shop"]}
    hosts = [RuntimeHost(name, worker="worker", executors=slow_brain()).start() for name in ("shop-a", "shop-b")]
    try:
        yield hosts[0], hosts[1]
    finally:
        for host in hosts:
            host.stop()


def test_two_workers_never_run_more_instances_of_a_role_than_its_limit(two_workers):
    first, second = two_workers
    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(live_instances(first) + live_instances(second))
            done.wait(0.002)

    sampler = threading.Thread(target=sample, name="sample-instances")
    sampler.start()
    try:
        calls = [invoke_dba(host, f"t{i}") for i in range(CALLS_PER_WORKER) for host in (first, second)]
        results = [call.result(120) for call in calls]
    finally:
        done.set()
        sampler.join(10)
    assert all(result.success for result in results), [r.error for r in results if not r.success]
    assert len(samples) > 100  # sampled all along the calls
    assert max(samples) == 1, f"{max(samples)} live {ROLE} instances at once across both workers"
    # The slot went from one worker to the other: each answered calls of its own.
    served = {result.from_instance for result in results}
    for host in (first, second):
        assert host.runtime is not None
        assert served & set(host.runtime.instances), f"{host.name} never got the {ROLE} slot"
    slots = InstanceSlot.objects.filter(role=ROLE)
    assert [row.index for row in slots] == [0]  # one row for a limit of one
    assert slots.get().owner in {first.worker_id, second.worker_id, ""}
    # What was recorded: every instance that answered, from both workers.
    assert set(AgentInstance.objects.filter(role=ROLE).values_list("instance_id", flat=True)) >= served


def test_a_killed_workers_slot_is_taken_again_once_its_lease_expired(one_dba, tmp_path):
    worker = manage("runtime_worker", "--concurrency", "2", env=process_env(), log=tmp_path / "worker.log")
    host: RuntimeHost | None = None
    try:
        dead = wait_until(
            lambda: RuntimeWorker.objects.filter(pid=worker.process.pid).first(), 60, f"the worker\n{worker.output()}"
        )
        # An outside invoke (no task: any worker with room takes it) makes it spawn the dba.
        command = RuntimeCommand.objects.create(
            task_id="",
            kind="invoke",
            payload={"capability": "schema_query", "from_role": "coderA", "params": {"table": "users"}},
        )
        wait_until(lambda: RuntimeCommand.objects.filter(pk=command.pk, status="done").exists(), 60, worker.output)
        assert RuntimeCommand.objects.get(pk=command.pk).result["success"]
        held = InstanceSlot.objects.get(role=ROLE)
        assert held.owner == dead.id and held.instance_id
        worker.kill()
        held.refresh_from_db()
        assert held.owner == dead.id  # nobody freed it: the process died
        dead_lease = held.lease_expires_at
        assert dead_lease is not None

        host = RuntimeHost("slots-survivor", worker="worker", executors=slow_brain()).start()
        result = invoke_dba(host, "orders").result(60)
        assert result.success, result.error
        taken = InstanceSlot.objects.get(role=ROLE)
        assert (taken.owner, taken.instance_id) == (host.worker_id, result.from_instance)
        assert taken.acquired_at is not None
        assert taken.acquired_at >= dead_lease  # never while the dead worker's lease ran
        assert taken.acquired_at <= timezone.now()
        # The workers' list (dashboard, GET /api/v1/workers) says who holds the role's slot.
        slots = {row["id"]: row["slots"] for row in worker_rows()}
        assert slots[host.worker_id] == {ROLE: 1}
        assert slots[dead.id] == {}  # its lease expired
    finally:
        worker.stop()
        if host is not None:
            host.stop()
    assert InstanceSlot.objects.get(role=ROLE).owner == ""  # a clean stop frees its slots


def test_a_task_helper_that_answered_hands_its_slot_to_a_call_waiting_on_another_worker(two_shop_workers):
    """dba limit 1 over two workers, in a project that shares its instances. A task on the
    first asks dba and goes on running, so its dba instance is idle with a context open in
    that task. A call of the project on the second worker waits for the slot; the first
    worker's heartbeat (1 s here) hands it over: the waiting call is answered, and the first
    task's dba context is recorded ``completed``. Before, the slot stayed with the idle
    instance until its task ended, and the call timed out."""
    first, second = two_shop_workers
    assert first.runtime is not None
    task = first.call(
        first.runtime.begin_task(entry_role="coderA", description="holds a dba helper", project_id="shop"), 10
    )
    request = InvokeRequest("schema_query", {"table": "kept"}, target_role=ROLE)
    kept = first.call(first.runtime.invoke(request, from_role="coderA", task_id=task.task_id), 30)
    assert kept.success, kept.error
    waiting = invoke_dba(second, "waits", project="shop")
    result = waiting.result(30)
    assert result.success, result.error
    assert second.runtime is not None and result.from_instance in second.runtime.instances
    context = first.runtime.tasks[task.task_id].contexts[kept.from_instance]
    assert context.status == "completed"
    wait_until(
        lambda: ExecutionContext.objects.filter(id=context.id, status="completed").exists(),
        10,
        "the handed-over context recorded completed",
    )
    runtime = first.runtime

    async def end_task() -> None:
        runtime.end_task(task.task_id, "completed")

    first.call(end_task(), 10)


GATE = threading.Event()


def gated_brain() -> ExecutorRegistry:
    """The offline brain whose ``schema_query`` of table ``busy`` runs until ``GATE`` is set."""

    async def schema_query(call):
        await asyncio.sleep(0.05)
        if call.params.get("table") == "busy":
            await asyncio.to_thread(GATE.wait, 30)
        return synthesise(call.card.output_schema, call.params, call.card.capability_id)

    return ExecutorRegistry({"offline": OfflineExecutor({"schema_query": schema_query})})


@pytest.fixture
def two_dbas(builtin, settings) -> Iterator[tuple[RuntimeHost, RuntimeHost]]:
    """dba limit 2 on two workers with short leases (2 s, heartbeat 1 s), in project ``shop``
    whose tasks share their instances (a task's own are never wanted by another worker)."""
    GATE.clear()
    RoleConstraint.objects.filter(project=None, role__role=ROLE).update(max_concurrent_instances=2)
    Project.objects.create(slug="shop", name="Shop")
    settings.TEAMCLAW = {
        **settings.TEAMCLAW,
        "LEASE_S": 2,
        "WORKER_HEARTBEAT_S": 1,
        "INSTANCE_LIMIT_PER_PROJECT": ["shop"],
    }
    hosts = [RuntimeHost(name, worker="worker", executors=gated_brain()).start() for name in ("hand-a", "hand-b")]
    try:
        yield hosts[0], hosts[1]
    finally:
        GATE.set()
        for host in hosts:
            host.stop()


def helpers_in_tasks(host: RuntimeHost, count: int) -> list[tuple[object, InvokeResult]]:
    """``count`` running tasks on ``host`` that each asked dba at once: ``count`` idle dba
    instances, each with a context open (``ready``) in its task. Returns (task, result) pairs."""
    runtime = host.runtime
    assert runtime is not None
    tasks = [
        host.call(runtime.begin_task(entry_role="coderA", description=f"task {i}", project_id="shop"), 10)
        for i in range(count)
    ]

    async def ask_all() -> list[InvokeResult]:
        requests = [InvokeRequest("schema_query", {"table": f"t{i}"}, target_role=ROLE) for i in range(count)]
        calls = [
            runtime.invoke(request, from_role="coderA", task_id=task.task_id)
            for request, task in zip(requests, tasks, strict=True)
        ]
        return list(await asyncio.gather(*calls))

    results = host.call(ask_all(), 30)
    assert all(r.success for r in results), [r.error for r in results]
    assert len({r.from_instance for r in results}) == count
    return list(zip(tasks, results, strict=True))


def test_one_waiting_call_makes_the_holder_hand_over_one_helper_not_all(two_dbas):
    """Both dba slots are held by idle helpers of two running tasks on the first worker, and
    one call on the second worker waits: one helper hands its slot over, the other keeps its
    context. Before, the waiter's stamps stayed on both rows for a lease, so each renewal
    handed one more over and the second freed row sat unused."""
    first, second = two_dbas
    assert first.runtime is not None
    pairs = helpers_in_tasks(first, 2)
    result = invoke_dba(second, "waits", project="shop").result(30)
    assert result.success, result.error
    time.sleep(3)  # three more renewals of the first worker; nobody waits now
    statuses = sorted(first.runtime.tasks[t.task_id].contexts[r.from_instance].status for t, r in pairs)
    assert statuses == ["completed", "ready"], statuses
    assert not InstanceSlot.objects.filter(wanted_at__isnull=False).exists()


def test_a_call_that_queues_behind_its_own_workers_instance_makes_nobody_hand_over(two_dbas):
    """The second worker runs a dba of its own (busy), the first holds the other slot with
    an idle helper in a running task. Another call on the second worker finds no free slot
    and queues behind its own busy instance: it does not wait for a slot, so the helper
    keeps its slot and its context."""
    first, second = two_dbas
    assert first.runtime is not None
    [(task, kept)] = helpers_in_tasks(first, 1)
    busy = invoke_dba(second, "busy", project="shop")
    wait_until(lambda: InstanceSlot.objects.filter(role=f"{ROLE}@shop", owner=second.worker_id).exists(), 10, "held")
    queued = invoke_dba(second, "queued", project="shop")
    time.sleep(2.5)  # two renewals of the first worker
    context = first.runtime.tasks[task.task_id].contexts[kept.from_instance]
    assert context.status == "ready", context.status
    assert not queued.done()  # behind the busy instance
    GATE.set()
    assert busy.result(10).success and queued.result(10).success


@pytest.mark.django_db(transaction=True)
def test_a_renewal_reports_a_row_taken_over_as_lost_but_not_one_given_back():
    from runs.instance_slots import DatabaseSlots

    slots = DatabaseSlots("w-renew", lease_s=10, retry_s=0.1)
    try:
        assert slots._take("dba", 2, "dba-kept") == 0
        assert slots._take("dba", 2, "dba-given") == 1
        assert slots._take("dba", 2, "dba-lost") is None  # both rows held
        InstanceSlot.objects.filter(instance_id="dba-kept").update(owner="w-other", instance_id="dba-elsewhere")
        slots.release("dba-given")  # leaves ``held`` at once, the row is freed on the slots' thread
        slots.close()
        renewal = slots.renew()
        assert renewal.lost == ["dba-kept"]  # taken over while this worker was paused
        assert slots.held == {}
    finally:
        slots.close()


@pytest.mark.django_db(transaction=True)
def test_a_renewal_reports_each_wanted_stamp_once_and_a_cleared_one_not_at_all():
    """A stamp left by a call that got its slot or gave up moves nothing twice; a call still
    waiting stamps again at each retry and is reported again; ``stop_wanting_slot`` clears
    the stamps (``runs.instance_slots``)."""
    from runs.instance_slots import DatabaseSlots, stop_wanting_slot, want_slot

    holder = DatabaseSlots("w-holder", lease_s=10, retry_s=0.1)
    try:
        assert holder._take("dba", 1, "dba-held") == 0
        assert holder.renew().wanted == []
        assert want_slot("w-waiter", "dba", 1) == 1
        assert holder.renew().wanted == ["dba-held"]
        assert holder.renew().wanted == []  # the same stamp: reported once
        want_slot("w-waiter", "dba", 1)  # still waiting: stamped again at its retry
        assert holder.renew().wanted == ["dba-held"]
        assert stop_wanting_slot("w-waiter", "dba") == 1
        assert holder.renew().wanted == []
        assert not InstanceSlot.objects.filter(wanted_at__isnull=False).exists()
    finally:
        holder.close()


@pytest.mark.django_db(transaction=True)
def test_an_entry_takes_only_the_rows_below_the_last_and_stamps_only_those():
    """A role that may invoke itself keeps its last row for the calls inside tasks
    (``take_slot(use=SlotUse.ENTRY)``): two workers' entries hold at most ``limit - 1`` rows
    between them, the waiting one stamps only the rows it could take, and a call inside a
    task takes the last row first (``SlotUse.HELPER``), leaving the entries' rows free."""
    from runs.instance_slots import take_slot, want_slot
    from teamclaw.runtime.slots import SlotUse

    assert take_slot("w-a", "main", 2, "main-entry-a", 10, use=SlotUse.ENTRY) == 0
    assert take_slot("w-b", "main", 2, "main-entry-b", 10, use=SlotUse.ENTRY) is None
    assert not InstanceSlot.objects.filter(wanted_at__isnull=False).exists()  # taking nothing tells nobody
    assert want_slot("w-b", "main", 2, use=SlotUse.ENTRY) == 1  # the entry waits
    rows = {row.index: row for row in InstanceSlot.objects.filter(role="main")}
    assert rows[0].wanted_at is not None and rows[1].wanted_at is None and rows[1].owner == ""
    assert take_slot("w-b", "main", 2, "main-helper-b", 10, use=SlotUse.HELPER) == 1
    # The limit raised to 4: a helper takes the new last row, not the free row 1 an entry may use.
    assert take_slot("w-b", "main", 4, "main-helper-b2", 10, use=SlotUse.HELPER) == 3
    assert take_slot("w-b", "main", 4, "main-entry-b", 10, use=SlotUse.ENTRY) == 2
    assert take_slot("w-a", "main", 4, "main-entry-c", 10, use=SlotUse.ENTRY) is None
    assert take_slot("w-a", "main", 4, "main-any", 10) is None  # every row held


def test_tasks_started_at_once_on_one_worker_each_run_at_once_whatever_the_roles_limit(one_dba):
    """dba limit 1, a real worker host (its slots in the database). Four tasks whose entry
    is dba start at once: each runs on a dba instance of its own task at once (issue 28 item
    3: the limit counts per task), none waits for the slot another task holds (before: one
    ran, the others waited for its slot), and none takes a shared slot row."""
    GATE.clear()
    host = RuntimeHost("per-task", worker="worker", executors=gated_brain()).start()
    runtime = host.runtime
    assert runtime is not None
    try:
        runs = [
            host.submit(runtime.run_task(capability_id="schema_query", params={"table": "busy"}, entry_role=ROLE))
            for _ in range(4)
        ]
        wait_until(
            lambda: sum(1 for i in runtime.pool.alive(ROLE) if i.busy_with) == 4,
            30,
            "four dba instances busy at once",
        )
        assert not InstanceSlot.objects.filter(role=ROLE).exclude(owner="").exists()
        GATE.set()
        results = [run.result(30) for run in runs]
        assert all(r.success for r in results), [r.error for r in results]
        assert len({r.from_instance for r in results}) == 4
    finally:
        GATE.set()
        host.stop()

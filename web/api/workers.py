"""Runtime workers (docs/architecture.md §3): which processes run agents, and what each runs.

Every signed-in user sees whether workers are alive and how loaded they are (the dashboard
shows it, so a user can tell whether their queued task will be taken); which host and
process each one is (``runs.workers.HOST_FIELDS``) is for staff only (issue 31)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from runs.workers import worker_rows_for
from teamclaw import api_fields

STAFF_ONLY = "Staff only: absent from the rows other users get."


class WorkerSerializer(api_fields.StrictSerializer):
    """One worker's row (documents the answer; ``runs.workers.worker_rows`` makes it)."""

    id = api_fields.StrictCharField(required=False, help_text=f"``<hostname>-<pid>-<hex>``. {STAFF_ONLY}")
    kind = api_fields.StrictChoiceField(choices=["embedded", "worker", "command"])
    hostname = api_fields.StrictCharField(required=False, help_text=STAFF_ONLY)
    pid = api_fields.StrictIntegerField(required=False, help_text=STAFF_ONLY)
    concurrency = api_fields.StrictIntegerField(help_text="How many tasks it runs at once at most.")
    started_at = serializers.DateTimeField()
    heartbeat_at = serializers.DateTimeField()
    stopped_at = serializers.DateTimeField(allow_null=True)
    state = api_fields.StrictChoiceField(choices=["alive", "silent", "stopped"])
    running = api_fields.StrictIntegerField(help_text="Tasks it runs now.")
    slots = serializers.DictField(child=api_fields.StrictIntegerField(), help_text="Instance slots it holds per role.")


class WorkerListSerializer(api_fields.StrictSerializer):
    results = WorkerSerializer(many=True)


class WorkerListView(APIView):
    """``GET /workers``: live workers first, then recently stopped or silent ones, each with
    ``state`` (``alive``, ``silent``, ``stopped``), how many tasks it ``running`` and the
    instance ``slots`` it holds per role (PRD §4.7, ``runs.instance_slots``); ``id``,
    ``hostname`` and ``pid`` for staff only."""

    @extend_schema(operation_id="workers_list", responses=WorkerListSerializer)
    def get(self, request: Request) -> Response:
        return Response({"results": worker_rows_for(request.user)})

"""Runtime workers (docs/architecture.md §3): which processes run agents, and what each runs."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from runs.workers import worker_rows


class WorkerListView(APIView):
    """``GET /workers``: live workers first, then recently stopped or silent ones, each with
    ``state`` (``alive``, ``silent``, ``stopped``), how many tasks it ``running`` and the
    instance ``slots`` it holds per role (PRD §4.7, ``runs.instance_slots``)."""

    @extend_schema(operation_id="workers_list", responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        return Response({"results": worker_rows()})

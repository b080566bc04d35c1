"""The team as an A2A agent, driven by the official ``a2a-sdk`` client against a real daphne
process on this test's database (``tests/processes.py``): the public card with the skills'
schemas in their extension, a streamed interview answered through A2A until the task
completes, a document reviewed into ``requirement_final.md`` (an A2A artifact), ``GetTask``,
``CancelTask`` ending the product task ``terminated``, and the refusals (no or a bad token:
401; another role's task: not found; a role the invoke matrix keeps from main; bad input)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, AuthInterceptor, ClientCallContext, ClientConfig, ClientFactory
from a2a.client.auth import CredentialService
from a2a.client.client import Client
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from a2a.utils.errors import (
    InvalidParamsError,
    InvalidRequestError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Value
from rest_framework.authtoken.models import Token

from capabilities.models import CapabilityCard
from interop import role_tokens
from interop.a2a_card import LANGUAGES_EXTENSION, SKILL_SCHEMAS_EXTENSION
from monitoring.models import Task, ToolConfirmation
from runs.tasks import sample_requirement
from teamclaw.runtime.messages import new_id
from tests.processes import Server, process_env

pytestmark = pytest.mark.django_db(transaction=True)

IDEA = "Add a CSV export of the order list for shop admins"
STOPS = {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED}


class Secret(CredentialService):
    """The role token, for the SDK's ``AuthInterceptor`` (bearer scheme from the card)."""

    def __init__(self, secret: str) -> None:
        self.secret = secret

    async def get_credentials(self, security_scheme_name: str, context: ClientCallContext | None) -> str | None:
        return self.secret


@pytest.fixture
def server(builtin, staff_user, tmp_path) -> Iterator[Server]:
    """One daphne process for the whole file (starting one is most of its time)."""
    token = Token.objects.create(user=staff_user).key
    child = Server(process_env(TEAMCLAW_DEMO_THINK_MS="0"), tmp_path / "server.log", token)
    try:
        yield child
    finally:
        child.stop()


def base(server: Server) -> str:
    return f"http://127.0.0.1:{server.port}"


def text_message(text: str = "", *, task_id: str = "", context_id: str = "", data: Any = None) -> Message:
    parts = [Part(text=text)] if text else []
    if data is not None:
        value = Value()
        value.struct_value.update(data)
        parts.append(Part(data=value))
    return Message(message_id=new_id(), role=Role.ROLE_USER, parts=parts, task_id=task_id, context_id=context_id)


async def connect(
    http: httpx.AsyncClient, url: str, secret: str, *, streaming: bool = True
) -> tuple[AgentCard, Client]:
    card = await A2ACardResolver(http, url).get_agent_card()
    client = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(
        card, interceptors=[AuthInterceptor(Secret(secret))]
    )
    return card, client


async def stream(client: Client, message: Message) -> list[StreamResponse]:
    """Every event of one ``SendStreamingMessage`` until the task stops or asks for input."""
    events = []
    async for event in client.send_message(SendMessageRequest(message=message)):
        events.append(event)
        if event.HasField("status_update") and event.status_update.status.state in STOPS:
            break
    return events


def status_data(event: StreamResponse) -> dict[str, Any]:
    parts = event.status_update.status.message.parts
    return next((MessageToDict(p.data) for p in parts if p.HasField("data")), {})


def answers_for(waiting: dict[str, Any]) -> dict[str, Any]:
    """An answer to each pending question, or the phase 5 choice ``end``."""
    first = waiting["inputs"][0]
    if first["what"] == "next_action":
        return {"action": "end"}
    return {"answers": {q["id"]: f"Answer to {q['id']}." for q in first["request"]["questions"]}}


async def interview_and_review(url: str, secret: str) -> dict[str, Any]:
    """The card; an idea streamed and answered through A2A until it completes; GetTask; a
    document sent without streaming, reviewed to the end."""
    async with httpx.AsyncClient(timeout=60) as http:
        card_response = await http.get(url + "/.well-known/agent-card.json")  # no token: the card is public
        raw_card = card_response.json()
        card, client = await connect(http, url, secret)
        rounds = [await stream(client, text_message(IDEA))]
        task_id, context_id = rounds[0][0].task.id, rounds[0][0].task.context_id
        while (last := rounds[-1][-1]).status_update.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            data = answers_for(status_data(last))
            message = (
                text_message("end", task_id=task_id, context_id=context_id)
                if "action" in data
                else text_message(task_id=task_id, context_id=context_id, data=data)
            )
            rounds.append(await stream(client, message))
            assert len(rounds) < 8, "the interview never ended"
        fetched = await client.get_task(GetTaskRequest(id=task_id))
        _, polling = await connect(http, url, secret, streaming=False)
        review = [e async for e in polling.send_message(SendMessageRequest(message=text_message(sample_requirement())))]
        return {
            "raw": raw_card,
            "card_headers": card_response.headers,
            "card": card,
            "rounds": rounds,
            "task": fetched,
            "review": review,
        }


async def refused(call: Any) -> Any:
    """What ``call`` returns, or the exception it raised (the refusal is what is checked)."""
    try:
        return await call
    except Exception as exc:
        return exc


async def cancel_and_refusals(url: str, secret: str, pm: str) -> dict[str, Any]:
    """No or a bad token; a task waiting for input, cancelled; what may not be done then."""
    rpc = url + "/a2a"
    out: dict[str, Any] = {}
    async with httpx.AsyncClient(timeout=60) as http:
        out["no_token"] = await http.post(rpc, json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}})
        out["bad_token"] = await http.post(
            rpc,
            json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}},
            headers={"Authorization": "Bearer tcr_not-a-token"},
        )
        out["too_big"] = await http.post(
            rpc,
            content=b" " * (6 * 1024 * 1024 + 1),
            headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
        )
        _, client = await connect(http, url, secret, streaming=False)
        waiting = [e async for e in client.send_message(SendMessageRequest(message=text_message(IDEA)))][-1].task
        out["waiting"] = waiting
        out["canceled"] = await client.cancel_task(CancelTaskRequest(id=waiting.id))
        out["fetched"] = await client.get_task(GetTaskRequest(id=waiting.id))
        out["listed"] = await client.list_tasks(ListTasksRequest())
        out["cancel_again"] = await refused(client.cancel_task(CancelTaskRequest(id=waiting.id)))
        out["answer_ended"] = await refused(
            stream(client, text_message("end", task_id=waiting.id, context_id=waiting.context_id))
        )
        out["unknown_field"] = await refused(stream(client, text_message(data={"descripton": IDEA})))
        out["v0_3"] = (
            await http.post(
                rpc,
                json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": waiting.id}},
                headers={"Authorization": f"Bearer {secret}", "A2A-Version": "0.3"},
            )
        ).json()
        _, pm_client = await connect(http, url, pm)
        out["stranger"] = await refused(pm_client.get_task(GetTaskRequest(id=waiting.id)))
        out["pm"] = await refused(stream(pm_client, text_message(IDEA)))
    return out


def test_the_official_a2a_client_drives_the_team_on_a_real_server(server):
    main = role_tokens.issue("main", "a2a test").secret
    pm = role_tokens.issue("pm", "pm token").secret
    started = time.monotonic()
    got = asyncio.run(interview_and_review(base(server), main))
    tasks_before = Task.objects.count()
    refusals = asyncio.run(cancel_and_refusals(base(server), main, pm))
    elapsed = time.monotonic() - started

    card, raw = got["card"], got["raw"]
    assert got["card_headers"]["x-content-type-options"] == "nosniff"
    # The card: the JSON-RPC endpoint, streaming, bearer auth, languages, skills with schemas.
    assert card.supported_interfaces[0].url == base(server) + "/a2a"
    assert card.supported_interfaces[0].protocol_binding == "JSONRPC" and card.capabilities.streaming
    assert card.security_schemes["role_token"].http_auth_security_scheme.scheme == "Bearer"
    assert "role_token" in card.security_requirements[0].schemes
    skills = [s.id for s in card.skills]
    assert skills[0] == "task_orchestration"
    reachable = CapabilityCard.objects.filter(enabled=True, capability_type__in=["ENTRY", "EXPOSED"])
    assert set(skills) == set(reachable.values_list("capability_id", flat=True))
    assert not CapabilityCard.objects.filter(capability_id__in=skills, capability_type="INTERNAL").exists()
    extensions = {e["uri"]: e for e in raw["capabilities"]["extensions"]}
    schemas = extensions[SKILL_SCHEMAS_EXTENSION]["params"]["skills"]
    entry = CapabilityCard.objects.get(capability_id="task_orchestration")
    assert set(schemas) == set(skills)
    assert schemas["task_orchestration"]["input_schema"] == entry.input_schema
    assert schemas["task_orchestration"]["output_schema"] == entry.output_schema
    assert extensions[LANGUAGES_EXTENSION]["params"]["languages"] == ["en", "zh-CN"]

    # The interview: submitted, then input-required with the questions, answered through A2A.
    rounds = got["rounds"]
    task_id = rounds[0][0].task.id
    assert rounds[0][0].task.status.state == TaskState.TASK_STATE_SUBMITTED
    assert rounds[0][-1].status_update.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert status_data(rounds[0][-1])["inputs"][0]["request"]["questions"]
    assert rounds[-1][-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    streamed = {e.artifact_update.artifact.name for r in rounds for e in r if e.HasField("artifact_update")}
    assert {"requirement.md", "interview_result.json"} <= streamed
    product = Task.objects.get(pk=task_id)
    assert product.status == "completed"
    signed = set(ToolConfirmation.objects.filter(task_id=task_id, kind="input").values_list("decided_by", flat=True))
    assert signed == {"a2a:main:a2a test"}
    result = json.loads(product.artifacts.get(name="interview_result.json").content)
    assert all(a["answer"] == f"Answer to {a['id']}." for a in result["answers"])
    # GetTask: the product's state and artifacts, every message the client sent in the history.
    fetched = got["task"]
    assert fetched.id == task_id and fetched.status.state == TaskState.TASK_STATE_COMPLETED
    assert {a.name for a in fetched.artifacts} == set(product.artifacts.values_list("name", flat=True))
    sent = [m for m in fetched.history if m.role == Role.ROLE_USER]
    assert len(sent) == len(rounds) and sent[0].parts[0].text == IDEA and sent[-1].parts[0].text == "end"
    # A document: reviewed, requirement_final.md is an artifact, findings are said as such.
    reviewed = got["review"][-1].task
    assert reviewed.status.state == TaskState.TASK_STATE_COMPLETED, reviewed.status
    final = next(a for a in reviewed.artifacts if a.name == "requirement_final.md")
    assert final.parts[0].text == Task.objects.get(pk=reviewed.id).artifacts.get(name="requirement_final.md").content
    verdict = MessageToDict(reviewed.status.message.parts[1].data)["outcome"]["verdict"]
    said = reviewed.status.message.parts[0].text
    assert ("with findings" in said) == (verdict == "findings"), said

    # No token or a bad one: 401, with the scheme to use.
    for key in ("no_token", "bad_token"):
        assert refusals[key].status_code == 401, refusals[key].text
        assert refusals[key].headers["www-authenticate"].startswith("Bearer")
    assert refusals["too_big"].status_code == 413, refusals["too_big"].text
    # Cancel: A2A canceled, the product task terminated; then nothing more can be done to it.
    waiting = refusals["waiting"]
    assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert refusals["canceled"].status.state == TaskState.TASK_STATE_CANCELED
    assert refusals["fetched"].status.state == TaskState.TASK_STATE_CANCELED
    cancelled = Task.objects.get(pk=waiting.id)
    assert cancelled.status == "terminated" and cancelled.error["code"] == "cancelled"
    assert isinstance(refusals["cancel_again"], TaskNotCancelableError), refusals["cancel_again"]
    assert isinstance(refusals["answer_ended"], UnsupportedOperationError), refusals["answer_ended"]
    assert "has ended (terminated)" in str(refusals["answer_ended"])
    assert isinstance(refusals["unknown_field"], InvalidParamsError), refusals["unknown_field"]
    assert refusals["unknown_field"].data["errors"] == [
        {"field": "descripton", "message": "not a field a task starts with"}
    ]
    assert {t.id for t in refusals["listed"].tasks} == {task_id, reviewed.id, waiting.id}
    assert refusals["v0_3"].get("result", {}).get("status", {}).get("state") == "canceled", refusals["v0_3"]
    # Another role sees none of main's tasks, and the invoke matrix keeps it from starting one.
    assert isinstance(refusals["stranger"], TaskNotFoundError), refusals["stranger"]
    assert isinstance(refusals["pm"], InvalidRequestError) and "may not invoke main" in str(refusals["pm"])
    assert Task.objects.count() == tasks_before + 1, "a refused message started a task"
    assert elapsed < 60, f"the A2A scenarios took {elapsed:.1f} s"

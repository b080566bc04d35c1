"""What the offline reviewers find in a requirement document (seed 002 §6.2 review focus).

Each expert reads the document from its own perspective and reports findings that point at
the user's own lines, so a different document gives different findings:

- ``dev`` (development expert, role architect): feasibility, performance, risk - vague
  performance words without a target, numbers without a unit, no error handling, external
  integrations and notifications without failure behaviour, capacity limits without what
  happens at the limit, open-ended lists.
- ``pm`` (product manager): goals, users, scenarios, acceptance criteria - missing or
  untestable acceptance criteria, goals or users, roles without permissions, metrics
  without a definition, vague quality words, user stories without a benefit, undecided
  wording.
- ``ai`` (AI expert): AI features without an evaluation target, a fallback or a data source.
- ``domain`` (domain expert): undefined terms and acronyms; personal, health or payment
  data without privacy, consent and retention rules for the jurisdiction the text implies
  (or an open point when it implies none); notifications without consent; times and time
  windows without a time zone or boundary rule.

English and Chinese documents get the same rules; what a finding says and what it would
write into the document is in the document's language (``RequirementDocument.language``),
and a figure an expert proposes is marked as proposed (``review_text.proposed``). A finding's ``change`` says how the
consolidator could apply it: ``replace`` (rewrite words in the line), ``append_section``
(add requirements), ``scope_reduction`` (weaken or drop what the user asked for: never
adopted, seed 002 merge rule 3) or ``open_point`` (needs the requirement owner).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from teamclaw.workflows.document import RequirementDocument, Statement
from teamclaw.workflows.domain_review import review_domain
from teamclaw.workflows.quality_engine import check_document, checked_lines, pack_rule_ids
from teamclaw.workflows.review_findings import Finding, clip, q, quote
from teamclaw.workflows.review_text import PROPOSED, proposed, say
from teamclaw.workflows.review_vocabulary import (
    ACCEPTANCE_HEADINGS,
    AI_DATA,
    AI_FALLBACK,
    AI_METRIC,
    AI_TERMS,
    CAPACITY_LIMIT,
    CJK_UNITS,
    COMPARATOR_NUMBER,
    CONDITION,
    CONTRACT,
    DEFINITION,
    ERROR_HANDLING,
    GOAL_HEADINGS,
    INTEGRATION,
    LIMIT_BEHAVIOUR,
    MEASURE,
    METRIC,
    NOT_METRIC,
    NOTIFICATION,
    OPEN_ENDED,
    PERMISSION,
    PERMISSION_HEADINGS,
    RESULT,
    ROLE_HEADINGS,
    SHOULD,
    SO_THAT,
    TIME_UNIT_WORDS,
    UNDECIDED,
    UNITS,
    UNTESTABLE,
    USER_STORY,
    USERS,
    VAGUE_PERFORMANCE,
    VAGUE_QUALITY,
)

__all__ = ["UNDECIDED", "acceptance_criterion", "requirement_statements", "review", "review_domain", "testable"]

PERSPECTIVES: dict[str, dict[str, Any]] = {
    "dev": {
        "label": "Development expert",
        "focus": "technical feasibility, architecture, performance, risk",
        "affinity": {"performance", "reliability", "scalability", "integration", "units", "scope"},
    },
    "pm": {
        "label": "Product manager",
        "focus": "business goals, user value, scenario completeness, acceptance",
        "affinity": {"acceptance", "users", "goals", "ambiguity", "scope", "performance"},
    },
    "ai": {
        "label": "AI expert",
        "focus": "reasonable use of AI, AI capability limits, evaluation, fallbacks",
        "affinity": {"ai", "data", "evaluation", "reliability"},
    },
    "domain": {
        "label": "Domain expert",
        "focus": "domain compliance, industry norms, terminology",
        "affinity": {"compliance", "privacy", "terminology", "time", "ambiguity"},
    },
}
ROLE_PERSPECTIVE = {"architect": "dev", "pm": "pm", "ai_expert": "ai", "domain_expert": "domain"}


def perspective_of(role: str) -> str:
    """The review perspective key of a role (custom reviewer roles use their own slug)."""
    return ROLE_PERSPECTIVE.get(role, role)


def label_of(perspective: str) -> str:
    return PERSPECTIVES.get(perspective, {}).get("label", perspective)


def _unit_missing(after: str) -> bool:
    token = after.strip().lower().rstrip(".,;:)。，；")
    if not token:
        return True
    if any(token.startswith(u.lower()) for u in CJK_UNITS):
        return False
    word = token.split("/")[0]
    if word in UNITS or token in UNITS:
        return False
    return not (word.isascii() and word.isalpha() and len(word) > 3 and word.endswith("s"))  # a counted noun


def _likely_unit(statement: str, number: float) -> str | None:
    lowered = statement.lower()
    if re.search(r"respon|latenc|load|render|return|reply|wait|页面|响应|加载|返回", lowered):
        return "ms" if number >= 50 else "s"
    if re.search(r"timeout|expire|session|token|超时|过期", lowered):
        return "s" if number < 600 else "min"
    if re.search(r"upload|file|attachment|image|storage|size|上传|文件|附件|图片", lowered):
        return "MB"
    return None


ZH_UNITS = {"ms": "毫秒", "s": "秒", "min": "分钟", "MB": "MB"}


def review_dev(document: RequirementDocument) -> list[Finding]:
    """Development expert (seed 002 §6.2: feasibility, architecture, performance, risk):
    vague performance words, numbers without units, capacity limits without behaviour at the
    limit, integrations and notifications without failure handling, no error handling."""
    lang = document.language
    findings: list[Finding] = []
    for statement in document.statements:
        vague = VAGUE_PERFORMANCE.search(statement.text)
        if vague and not MEASURE.search(statement.text):
            word = vague.group(0)
            lowered = word.lower()
            if lowered in ("real-time", "realtime", "实时", "instant", "instantly", "及时"):
                target = say(lang, "updated within 5 s of the change", "数据变更后 5 秒内更新")
            elif lowered in ("scalable", "高并发"):
                target = say(
                    lang,
                    "handles 10x the expected peak load with a p95 response time of at most 2 s",
                    "可承受预期峰值 10 倍的负载，p95 响应时间不超过 2 秒",
                )
            else:
                target = say(
                    lang,
                    "p95 response time of at most 2 s under the expected load",
                    "在预期负载下 p95 响应时间不超过 2 秒",
                )
            findings.append(
                Finding(
                    "no_measurable_target",
                    "performance",
                    "major",
                    say(
                        lang,
                        f"'{word}' has no measurable target, so it cannot be tested or accepted.",
                        f"“{word}”没有可度量的目标，无法测试，也无法验收。",
                    ),
                    say(lang, f"State a measurable target, e.g. {target}.", f"给出可度量的目标，例如：{target}。"),
                    statement.number,
                    statement.section,
                    quote(statement),
                    {"action": "replace", "old": word, "new": word + proposed(lang, target), "proposed": target},
                )
            )
            if lowered in ("real-time", "realtime", "实时", "instant", "instantly"):
                simpler = say(lang, "refreshed every 60 s", "每 60 秒刷新一次")
                findings.append(
                    Finding(
                        "scope_simplification",
                        "scope",
                        "minor",
                        say(
                            lang,
                            f"'{word}' updates are expensive to build and operate.",
                            f"“{word}”更新的开发和运维成本高。",
                        ),
                        say(
                            lang,
                            "Drop the real-time requirement and refresh the data every 60 s instead.",
                            "放弃实时要求，改为每 60 秒刷新一次。",
                        ),
                        statement.number,
                        statement.section,
                        quote(statement),
                        {"action": "scope_reduction", "old": word, "new": simpler},
                    )
                )
        for match in COMPARATOR_NUMBER.finditer(statement.text):
            if not _unit_missing(match.group("after")):
                continue
            number = float(match.group("num").replace(",", "."))
            unit = _likely_unit(statement.text, number)
            old = match.group(0).rstrip(" 。.，,；;")
            if unit:
                shown = ZH_UNITS.get(unit, unit) if lang == "zh" else unit
                guess = f"{match.group('cmp')} {match.group('num')} {shown}"
                change: dict[str, Any] = {"action": "replace", "old": old, "new": old + proposed(lang, guess)}
                change["proposed"] = guess
            else:
                change = {
                    "action": "open_point",
                    "question": say(
                        lang, f"What is the unit of {match.group('num')} in: {clip(statement.text, 80)}?",
                        f"“{clip(statement.text, 80)}”中的 {match.group('num')} 是什么单位？",
                    ),
                }  # fmt: skip
            findings.append(
                Finding(
                    "number_without_unit",
                    "units",
                    "major",
                    say(
                        lang,
                        f"'{old}' gives a number without a unit.",
                        f"“{old}”只有数字，没有单位。",
                    ),
                    say(
                        lang,
                        f"Give the unit ({unit} is what the sentence implies).",
                        f"给出单位（从句意看可能是{ZH_UNITS.get(unit, unit)}）。",
                    )
                    if unit
                    else say(lang, "Give the unit of the number.", "给出该数字的单位。"),
                    statement.number,
                    statement.section,
                    quote(statement),
                    change,
                )
            )
        limit = CAPACITY_LIMIT.search(statement.text)
        if limit and not TIME_UNIT_WORDS.search(limit.group(0)) and not LIMIT_BEHAVIOUR.search(statement.text):
            text = limit.group("limit").strip()
            findings.append(
                Finding(
                    "limit_without_behaviour",
                    "scalability",
                    "major",
                    say(
                        lang,
                        f"'{text}' sets a limit but not what happens when it is reached.",
                        f"“{text}”规定了上限，但没有说明达到上限时系统如何处理。",
                    ),
                    say(
                        lang,
                        "Say what happens at the limit: reject with a message, queue, or allow with a warning.",
                        "说明达到上限时的行为：拒绝并提示、排队候补，或允许但给出警告。",
                    ),
                    statement.number,
                    statement.section,
                    quote(statement),
                    {
                        "action": "open_point",
                        "question": say(
                            lang,
                            f"What happens when '{text}' is reached: is the request rejected, queued or allowed, "
                            "and what does the user see?",
                            f"达到“{text}”的上限时如何处理：拒绝、排队还是放行？用户看到什么提示？",
                        ),
                    },
                )
            )
        if OPEN_ENDED.search(statement.text) and statement.text.rstrip().endswith(
            ("etc.", "etc", "等", "等。", "and more")
        ):
            findings.append(
                Finding(
                    "open_ended_list",
                    "scope",
                    "minor",
                    say(
                        lang,
                        "The list ends open ('etc.'), so the scope cannot be estimated or tested.",
                        "列表以“等”结尾，范围不封闭，无法估算，也无法测试。",
                    ),
                    say(lang, "List every item that is in scope and drop 'etc.'.", "列出范围内的全部条目，去掉“等”。"),
                    statement.number,
                    statement.section,
                    quote(statement),
                    {
                        "action": "open_point",
                        "question": say(
                            lang,
                            f"Which items does 'etc.' stand for in: {clip(statement.text, 80)}?",
                            f"“{clip(statement.text, 80)}”中的“等”具体包括哪些条目？",
                        ),
                    },
                )
            )
        if INTEGRATION.search(statement.text) and not ERROR_HANDLING.search(statement.text):
            retries = proposed(lang, say(lang, "up to 3 times with backoff", "最多 3 次，间隔递增"))
            findings.append(
                Finding(
                    "integration_failure_undefined",
                    "integration",
                    "major",
                    say(
                        lang,
                        "An external integration is required but its failure behaviour is not.",
                        "需求依赖外部系统，但没有说明外部系统失败时的行为。",
                    ),
                    say(
                        lang,
                        "Say what happens when the external system is slow or down (timeout, retries, user message).",
                        "说明外部系统响应慢或不可用时的处理：超时、重试次数、给用户的提示。",
                    ),
                    statement.number,
                    statement.section,
                    quote(statement),
                    {
                        "action": "append_section",
                        "section": "Error handling",
                        "lines": [
                            say(
                                lang,
                                f"When an external system named in {q(lang, clip(statement.text))} is slow or "
                                f"unavailable, the operation is retried{retries}, then the user sees what failed and "
                                "can retry later.",
                                f"{q(lang, clip(statement.text))}涉及的外部系统响应慢或不可用时，操作自动重试"
                                f"{retries}，仍失败则告知用户失败原因，用户可稍后重试。",
                            )
                        ],
                    },
                )
            )
    notices = [s for s in document.statements if NOTIFICATION.search(s.text)]
    if notices and not any(ERROR_HANDLING.search(s.text) for s in notices):
        first = notices[0]
        retries = proposed(lang, say(lang, "up to 3 times", "最多 3 次"))
        findings.append(
            Finding(
                "notification_failure_undefined",
                "reliability",
                "major",
                say(
                    lang,
                    "Notifications are sent but nothing says what happens when one cannot be delivered.",
                    "需求要求发送通知，但没有说明通知发送失败时如何处理。",
                ),
                say(
                    lang,
                    "Say how delivery failures are retried, logged and made visible.",
                    "说明发送失败时的重试、记录方式，以及用户如何得知。",
                ),
                first.number,
                first.section,
                quote(first),
                {
                    "action": "append_section",
                    "section": "Error handling",
                    "lines": [
                        say(
                            lang,
                            f"When a notification cannot be delivered, it is retried{retries}; the failure is logged "
                            "and the information stays visible in the product.",
                            f"通知发送失败时自动重试{retries}；失败记录到日志，通知内容在系统内仍可查看。",
                        )
                    ],
                },
            )
        )
    if document.statements and not document.mentions(ERROR_HANDLING):
        findings.append(
            Finding(
                "no_error_handling",
                "reliability",
                "major",
                say(
                    lang,
                    "The document never says what happens when something fails.",
                    "文档没有说明任何操作失败时的处理。",
                ),
                say(
                    lang,
                    "Add error handling requirements: what the user sees, what is retried, what is logged.",
                    "补充异常处理要求：用户看到什么、哪些操作重试、记录哪些信息。",
                ),
                None,
                "",
                "",
                {
                    "action": "append_section",
                    "section": "Error handling",
                    "lines": [
                        say(
                            lang,
                            "Every failed operation tells the user what failed and what to do next.",
                            "每个失败的操作都告知用户失败原因和下一步可以做什么。",
                        ),
                        say(
                            lang,
                            "Failures are logged with enough context to diagnose them.",
                            "失败记录到日志，并附带足以定位问题的上下文。",
                        ),
                    ],
                },
            )
        )
    return findings


REQUIREMENT_SECTIONS = ("requirement", "feature", "story", "stories", "scope", "functional", "需求", "功能", "故事")
NOT_REQUIREMENT_SECTIONS = ("out of scope", "non-goal", "background", "不包括", "背景")


def requirement_statements(document: RequirementDocument) -> list[Statement]:
    """What the user asks for: statements with 'must/shall/will/...', user stories, and every
    statement under a requirements/features heading (not under 'out of scope')."""
    out = []
    for statement in document.statements:
        section = statement.section.lower()
        if any(k in section for k in NOT_REQUIREMENT_SECTIONS) or any(k in section for k in ACCEPTANCE_HEADINGS):
            continue
        if (
            CONTRACT.search(statement.text)
            or USER_STORY.search(statement.text)
            or any(k in section for k in REQUIREMENT_SECTIONS)
        ):
            out.append(statement)
    return out


def testable(text: str) -> bool:
    """True when an acceptance criterion is testable (seed 002 §6.7 闭环性): it names an
    observable condition and an expected result, or a measurable quantity, and no vague
    judgement ("works well", "用户满意")."""
    if UNTESTABLE.search(text) or (VAGUE_QUALITY.search(text) and not MEASURE.search(text)):
        return False
    return bool((CONDITION.search(text) and RESULT.search(text)) or MEASURE.search(text))


_EN_MODAL = re.compile(
    r"^(?P<who>(?:\S+\s+){0,5}?\S+?)\s+"
    r"(?:must|shall|can|will|should|may|is able to|are able to|needs? to|wants? to|has to|have to)"
    r"\s+(?!not\b|never\b)(?P<what>.+)$",
    re.I,
)
"""An actor of at most six words, a modal, the action: "Shop admins need to export ...". A
negated modal ("must not delete") is no action a test performs, so it does not match."""
_EN_CLAUSE = re.compile(r"\b(?:who|that|which|if|when|whose)\b", re.I)
"""Words that make an "actor" a clause ("Users who can log in ..."): no actor then."""
_ZH_MODAL = re.compile(r"^(?P<who>[^，,：:]{1,12}?)(?:必须|需要|应当|可以|能够|可在|可)(?P<what>.+)$")


def acceptance_criterion(text: str, language: str) -> str:
    """A testable acceptance criterion for the requirement ``text`` (seed 002 §6.6 细化, §6.7
    闭环性): an observable condition and an expected result, not the requirement copied."""
    text = text.strip().rstrip(".。")
    measured = MEASURE.search(PROPOSED.sub("", text))
    marks = PROPOSED.findall(text)
    if language == "zh":
        match = _ZH_MODAL.match(text)
        if match:
            who, what = match.group("who").strip(), match.group("what").strip()
            result = f"{measured.group(0)}的要求在每次测试中均满足" if measured else f"操作无报错完成，结果对{who}可见"
            if marks:
                result = "达到" + marks[0] + "，且操作无报错完成"
            return f"给定{who}，当{who}在测试环境中{what}时，预期：{result}。"
        # No actor and action the rules can build a result from: the result to expect is asked
        # for, marked as a proposal (the quality check then does not pass), never made up.
        expected = proposed("zh", "应观察到的结果，评审无法从这一行推出").strip()
        return f"在测试环境中执行“{clip(text, 80)}”时，预期：{expected}。"
    match = _EN_MODAL.match(text)
    if match and not _EN_CLAUSE.search(match.group("who")):
        # The whole action, purpose and all: cutting "so ..." could drop a second requirement.
        who, what = match.group("who").strip(), PROPOSED.sub("", match.group("what")).strip()
        result = (
            f"the {measured.group(0)} target is met in every run"
            if measured
            else "the action completes without an error and its result is visible to them"
        )
        if marks:
            result = "the target " + marks[0].strip() + " is met in every run"
        return f"Given {who[:1].lower() + who[1:]}, when they {what} in the test environment, then {result}."
    expected = proposed("en", "the result to expect, which the review could not derive from this line").strip()
    return f'When the test exercises "{clip(text, 80)}", then {expected}.'


def _role_name(text: str) -> str:
    name = re.split(r"[：:，,（(]| - | who | that ", text, maxsplit=1)[0].strip()
    return clip(name, 40)


def review_pm(document: RequirementDocument) -> list[Finding]:
    """Product manager (seed 002 §6.2: goals, user value, scenarios, acceptance): acceptance
    criteria missing or untestable, goals and users, roles without permissions, metrics
    without definitions, user stories without a benefit, undecided or vague wording."""
    lang = document.language
    findings: list[Finding] = []
    contracts = requirement_statements(document)
    if not document.has_section(*ACCEPTANCE_HEADINGS):
        findings.append(
            Finding(
                "missing_acceptance_criteria",
                "acceptance",
                "major",
                say(
                    lang,
                    "There are no acceptance criteria, so nobody can tell when the work is done.",
                    "文档没有验收标准，无法判断工作何时算完成。",
                ),
                say(
                    lang,
                    "Add an 'Acceptance criteria' section with one testable criterion (condition and expected "
                    "result) per requirement.",
                    "增加“验收标准”一节，每条需求对应一条可测试的标准（可观察的条件和预期结果）。",
                ),
                None,
                "",
                "",
                {
                    "action": "append_section",
                    "section": "Acceptance criteria",
                    # Criteria are written from these lines as they read after consolidation.
                    "from_lines": [s.number for s in contracts[:20]],
                    "criteria": True,
                    "lines": []
                    if contracts
                    else [
                        say(
                            lang,
                            "When each requirement above is exercised in a test before release, then the test passes.",
                            "发布前，当上述每条需求都在测试中执行时，预期：测试全部通过。",
                        )
                    ],
                },
            )
        )
    for statement in document.statements:
        if any(k in statement.section.lower() for k in ACCEPTANCE_HEADINGS) and not testable(statement.text):
            findings.append(
                Finding(
                    "untestable_acceptance_criterion",
                    "acceptance",
                    "major",
                    say(
                        lang,
                        "This acceptance criterion has no observable condition and expected result, so no test "
                        "can pass or fail it.",
                        "这条验收标准没有可观察的条件和预期结果，无法据此判定测试通过与否。",
                    ),
                    say(
                        lang,
                        "Rewrite it as 'When <condition>, then <expected result>' with a measurable result.",
                        "改写为“当……时，预期：……”，并给出可度量的结果。",
                    ),
                    statement.number,
                    statement.section,
                    quote(statement),
                    {
                        "action": "open_point",
                        "question": say(
                            lang,
                            f"How is {q(lang, clip(statement.text, 80))} verified: under which condition, with "
                            "which expected result?",
                            f"{q(lang, clip(statement.text, 80))}如何验证：在什么条件下，预期什么结果？",
                        ),
                    },
                )
            )
    if not _goal_stated(document):
        findings.append(
            Finding(
                "missing_goal",
                "goals",
                "minor",
                say(
                    lang,
                    "The document does not say what business goal the work serves.",
                    "文档没有说明要达成的业务目标。",
                ),
                say(
                    lang,
                    "Add a short 'Goal' section: the problem, who has it and how success is measured.",
                    "增加“目标”一节：要解决的问题、谁遇到这个问题、如何衡量成功。",
                ),
                None,
                "",
                "",
                {
                    "action": "open_point",
                    "question": say(
                        lang,
                        "What business goal does this serve, and how is success measured?",
                        "这项需求服务于什么业务目标？如何衡量成功？",
                    ),
                },
            )
        )
    if document.statements and not document.mentions(USERS):
        findings.append(
            Finding(
                "missing_users",
                "users",
                "major",
                say(
                    lang,
                    "No user or customer is named, so the value to anyone is unclear.",
                    "文档没有指明用户，价值归属不清。",
                ),
                say(
                    lang, "Name the users (roles or personas) and what each needs.", "写明用户（角色）以及各自的需要。"
                ),
                None,
                "",
                "",
                {
                    "action": "open_point",
                    "question": say(lang, "Who are the users of this feature?", "这个功能的用户是谁？"),
                },
            )
        )
    findings += _roles_without_permissions(document)
    findings += _undefined_metrics(document)
    for statement in document.statements:
        findings += _wording(document, statement)
    return findings


def _roles_without_permissions(document: RequirementDocument) -> list[Finding]:
    lang = document.language
    if document.has_section(*PERMISSION_HEADINGS):
        return []
    findings = []
    for statement in document.statements:
        section = statement.section.lower()
        if not any(k in section for k in ROLE_HEADINGS) or PERMISSION.search(statement.text):
            continue
        role = _role_name(statement.text)
        findings.append(
            Finding(
                "role_without_permissions",
                "users",
                "major",
                say(
                    lang,
                    f"'{role}' is a user role, but what it may see and do is not stated.",
                    f"“{role}”是一个用户角色，但没有说明其可查看、可操作的范围。",
                ),
                say(
                    lang,
                    "State each role's permissions: what it can see and change, and what it cannot.",
                    "为每个角色写明权限：可以查看和修改什么，不可以做什么。",
                ),
                statement.number,
                statement.section,
                quote(statement),
                {
                    "action": "open_point",
                    "question": say(
                        lang,
                        f"What may '{role}' see and do, and what not?",
                        f"“{role}”可以查看和操作哪些内容？哪些不可以？",
                    ),
                },
            )
        )
    return findings


def _undefined_metrics(document: RequirementDocument) -> list[Finding]:
    lang = document.language
    findings, reported = [], set()
    for statement in document.statements:
        for match in METRIC.finditer(statement.text):
            metric = match.group(0).strip()
            if metric in reported or any(n in metric for n in NOT_METRIC):
                continue
            defined = any(metric in s.text and DEFINITION.search(s.text) for s in document.statements)
            if defined or metric.lower() in ("rate", "score", "index"):
                continue
            reported.add(metric)
            findings.append(
                Finding(
                    "undefined_metric",
                    "goals",
                    "major",
                    say(
                        lang,
                        f"The metric '{metric}' is used but not defined, so the goal cannot be measured.",
                        f"指标“{metric}”没有定义，目标无法衡量。",
                    ),
                    say(
                        lang,
                        f"Define '{metric}': numerator, denominator, period and data source.",
                        f"定义“{metric}”：分子、分母、统计周期和数据来源。",
                    ),
                    statement.number,
                    statement.section,
                    quote(statement),
                    {
                        "action": "open_point",
                        "question": say(
                            lang,
                            f"How is '{metric}' calculated (numerator, denominator, period)?",
                            f"“{metric}”如何计算（分子、分母、统计周期）？",
                        ),
                    },
                )
            )
    return findings


def _wording(document: RequirementDocument, statement: Statement) -> list[Finding]:
    lang = document.language
    findings = []
    if USER_STORY.search(statement.text) and not SO_THAT.search(statement.text):
        findings.append(
            Finding(
                "story_without_benefit",
                "users",
                "minor",
                say(
                    lang,
                    "This user story has no 'so that': the benefit is missing.",
                    "这个用户故事没有说明用户得到的好处。",
                ),
                say(
                    lang,
                    "Complete the story with the benefit the user gets ('so that ...').",
                    "补充用户得到的好处（“以便……”）。",
                ),
                statement.number,
                statement.section,
                quote(statement),
                {
                    "action": "open_point",
                    "question": say(
                        lang,
                        f"What does the user gain from: {statement.text[:80]}?",
                        f"用户从“{statement.text[:80]}”中得到什么？",
                    ),
                },
            )
        )
    undecided = UNDECIDED.search(statement.text)
    if undecided:
        findings.append(
            Finding(
                "undecided_requirement",
                "ambiguity",
                "major",
                say(
                    lang,
                    f"'{undecided.group(0)}' leaves this requirement undecided.",
                    f"“{undecided.group(0)}”使这条需求悬而未决。",
                ),
                say(
                    lang,
                    "Decide it: state what is required, or move it out of scope.",
                    "做出决定：写明要求，或移出范围。",
                ),
                statement.number,
                statement.section,
                quote(statement),
                {
                    "action": "open_point",
                    "question": say(lang, f"Decide: {statement.text[:100]}", f"请决定：{statement.text[:100]}"),
                },
            )
        )
    elif (word := _weak_word(statement)) is not None:
        findings.append(
            Finding(
                "weak_wording",
                "ambiguity",
                "minor",
                say(lang, f"'{word}' makes it unclear whether this is required.", f"“{word}”使人不清楚这是否为必须。"),
                say(
                    lang,
                    "Use 'must' if it is required; otherwise mark it optional.",
                    "如果是必须的，写“必须”；否则标为可选。",
                ),
                statement.number,
                statement.section,
                quote(statement),
                {"action": "replace", "old": word, "new": say(lang, "must", "必须"), "strengthens": True},
            )
        )
    vague = VAGUE_QUALITY.search(statement.text)
    if (
        vague
        and not MEASURE.search(statement.text)
        and not any(k in statement.section.lower() for k in ACCEPTANCE_HEADINGS)
    ):
        word = vague.group(0)
        target = say(
            lang,
            "a first-time user completes it without help in under 2 minutes",
            "首次使用的用户无需帮助即可在 2 分钟内完成",
        )
        findings.append(
            Finding(
                "unmeasurable_quality",
                "acceptance",
                "minor",
                say(
                    lang, f"'{word}' cannot be accepted or rejected by a test.", f"“{word}”无法通过测试来判定是否达成。"
                ),
                say(
                    lang,
                    f"Describe the observable behaviour instead (e.g. {target}).",
                    f"改为描述可观察的行为（例如：{target}）。",
                ),
                statement.number,
                statement.section,
                quote(statement),
                {"action": "replace", "old": word, "new": word + proposed(lang, target), "proposed": target},
            )
        )
    return findings


GRANT = re.compile(r"(?<![A-Za-z])(?:only|not|cannot|allowed|permitted)(?![A-Za-z])", re.IGNORECASE)
"""Words beside "may" that make it grant or refuse a permission ("only admins may export,
staff may not") rather than leave a duty optional."""


def _weak_word(statement: Statement) -> str | None:
    """The first word of ``statement`` that leaves open whether it is required ("should",
    "could", "may" ...), or None: none, the statement also says "must" (``CONTRACT``), or the
    word is a "may" that grants a permission, where "must" would turn the right into a duty."""
    if CONTRACT.search(statement.text):
        return None
    permission_section = any(h in statement.section.lower() for h in PERMISSION_HEADINGS)
    for match in SHOULD.finditer(statement.text):
        word = match.group(0)
        if word.lower() == "may" and (permission_section or GRANT.search(statement.text)):
            continue
        return word
    return None


def _goal_stated(document: RequirementDocument) -> bool:
    """True when a goal heading (``GOAL_HEADINGS``) holds at least one statement, in its own
    text or in a subsection of it (the document's title is not a section)."""
    headings = document.headings
    for index, (level, title, line) in enumerate(headings):
        if (index == 0 and level == 1) or not any(k in title.lower() for k in GOAL_HEADINGS):
            continue
        end = next((n for lv, _, n in headings[index + 1 :] if lv <= level), None)
        if any(s.number > line and (end is None or s.number < end) for s in document.statements):
            return True
    return False


def review_ai(document: RequirementDocument) -> list[Finding]:
    """AI expert (seed 002 §6.2: AI capability limits): evaluation targets, fallbacks and
    data for every AI feature."""
    lang = document.language
    findings: list[Finding] = []
    ai_lines = [s for s in document.statements if AI_TERMS.search(s.text)]
    if not ai_lines:
        return findings
    has_metric = document.mentions(AI_METRIC)
    for statement in ai_lines:
        term = AI_TERMS.search(statement.text).group(0)  # type: ignore[union-attr]
        if not has_metric and not MEASURE.search(statement.text):
            target = proposed(lang, say(lang, "at least 80% precision", "准确率不低于 80%"))
            findings.append(
                Finding(
                    "ai_without_evaluation",
                    "evaluation",
                    "major",
                    say(
                        lang,
                        f"The AI feature ('{term}') has no quality target, so it cannot be evaluated.",
                        f"AI 功能（“{term}”）没有质量目标，无法评估。",
                    ),
                    say(
                        lang,
                        "State how it is evaluated and the target, e.g. at least 80% precision on a held-out set.",
                        "说明评估方法和目标，例如在独立评测集上准确率不低于 80%。",
                    ),
                    statement.number,
                    statement.section,
                    quote(statement),
                    {
                        "action": "append_section",
                        "section": "AI behaviour",
                        "lines": [
                            say(
                                lang,
                                f"The AI feature in {q(lang, clip(statement.text))} is evaluated on a held-out "
                                f"evaluation set before release; target:{target}.",
                                f"{q(lang, clip(statement.text))}中的 AI 功能上线前在独立评测集上评估，目标{target}。",
                            )
                        ],
                    },
                )
            )
    first = ai_lines[0]
    if not document.mentions(AI_FALLBACK):
        findings.append(
            Finding(
                "ai_without_fallback",
                "reliability",
                "major",
                say(
                    lang,
                    "Nothing says what happens when the AI is wrong, unsure or unavailable.",
                    "没有说明 AI 出错、把握不足或不可用时怎么办。",
                ),
                say(
                    lang,
                    "Define a fallback: a confidence threshold below which a human decides, and the behaviour when "
                    "the model is down.",
                    "定义兜底方案：置信度低于阈值时由人工决定，以及模型不可用时的行为。",
                ),
                first.number,
                first.section,
                quote(first),
                {
                    "action": "append_section",
                    "section": "AI behaviour",
                    "lines": [
                        say(
                            lang,
                            "When the model is unavailable or its confidence is below the threshold, the system falls "
                            "back to the non-AI behaviour and lets a person decide.",
                            "当模型不可用或置信度低于阈值时，系统回退到非 AI 流程，由人工决定。",
                        )
                    ],
                },
            )
        )
    if not document.mentions(AI_DATA):
        findings.append(
            Finding(
                "ai_without_data",
                "data",
                "minor",
                say(
                    lang,
                    "The AI feature's data source (training or context data) is not named.",
                    "没有说明 AI 功能使用的数据来源（训练数据或上下文数据）。",
                ),
                say(lang, "Name the data the AI uses and who owns it.", "写明 AI 使用哪些数据，以及数据归谁所有。"),
                first.number,
                first.section,
                quote(first),
                {
                    "action": "open_point",
                    "question": say(
                        lang,
                        "Which data does the AI feature learn from or use?",
                        "AI 功能基于哪些数据训练或运行？",
                    ),
                },
            )
        )
    return findings


REVIEWERS = {"dev": review_dev, "pm": review_pm, "ai": review_ai, "domain": review_domain}

ENGINE_CATEGORIES: dict[str, tuple[str, ...]] = {
    "dev": ("missing_unit", "limit_without_overflow", "missing_error_handling", "integration_failure", "absolute"),
    "pm": ("vague_term", "untestable", "compound", "escape_clause", "passive_no_actor", "role_permission_gap",
           "contradiction"),
    "ai": ("ai_without_evaluation",),
    "domain": ("personal_data", "notification_consent", "time_boundary", "undefined_term", "domain_rule_gap"),
}  # fmt: skip
"""The requirement-quality engine's categories (docs/review-rules.md) each expert reports
(seed 002 §6.2 review focus): every category has exactly one owner."""
for _perspective, _categories in ENGINE_CATEGORIES.items():
    PERSPECTIVES[_perspective]["affinity"] |= set(_categories)

LEGACY_CATEGORY = {
    "no_measurable_target": "vague_term", "unmeasurable_quality": "vague_term", "number_without_unit": "missing_unit",
    "limit_without_behaviour": "limit_without_overflow", "open_ended_list": "escape_clause",
    "undecided_requirement": "escape_clause", "integration_failure_undefined": "integration_failure",
    "notification_failure_undefined": "notification_consent", "notification_without_consent": "notification_consent",
    "undefined_metric": "undefined_term", "undefined_term": "undefined_term",
    "ai_without_evaluation": "ai_without_evaluation",
    "ai_without_fallback": "ai_without_evaluation", "personal_data_without_privacy": "personal_data",
    "retention_undefined": "personal_data", "jurisdiction_unknown": "personal_data",
    "time_window_without_boundary": "time_boundary",
    "time_without_zone": "time_boundary",
}  # fmt: skip
"""The taxonomy category of each line rule of the branching reviewers that the engine also
decides. The engine is the judge: such a finding stays (with its richer change, under the
taxonomy category) only where the engine finds the same category on the same line."""


def reconcile(legacy: dict[str, list[Finding]], found: list[Finding], checked: set[int]) -> dict[str, list[Finding]]:
    """Per perspective: its branching findings that the engine confirms or does not judge
    (a line finding of a ``LEGACY_CATEGORY`` rule on a line the engine ``checked`` and found
    nothing of that category on is dropped), then the engine findings of its categories
    (``ENGINE_CATEGORIES``; a domain pack's findings go to the domain expert) that no kept
    branching finding makes."""
    confirmed = {(f.line, f.category) for f in found}
    kept: dict[str, list[Finding]] = {}
    for perspective, findings in legacy.items():
        kept[perspective] = []
        for finding in findings:
            category = LEGACY_CATEGORY.get(finding.rule) if finding.line in checked else None
            if category is None:
                kept[perspective].append(finding)
            elif (finding.line, category) in confirmed:
                kept[perspective].append(dataclasses.replace(finding, category=category))
    made = {(f.line, f.category) for findings in kept.values() for f in findings}
    packs = pack_rule_ids()
    for perspective in ENGINE_CATEGORIES:
        extra = [f for f in found if _owner(f, packs) == perspective and (f.line, f.category) not in made]
        kept.setdefault(perspective, []).extend(extra)
    return kept


def _owner(finding: Finding, packs: frozenset[str]) -> str:
    """The expert who reports an engine finding: the domain expert for a domain pack's rule
    (seed 002 §6.2 领域专家: 行业规范), else the owner of its category (``ENGINE_CATEGORIES``)."""
    if finding.rule in packs:
        return "domain"
    return next((p for p, categories in ENGINE_CATEGORIES.items() if finding.category in categories), "")


def review(document: RequirementDocument, perspective: str) -> list[dict[str, Any]]:
    """The findings of ``perspective`` as ``review_*.json`` issue dicts (ids ``<perspective>-N``;
    seed 002 §6.2), written in the document's language (``document.language``): the
    branching reviewer's findings the requirement-quality engine confirms or does not cover,
    then the engine's own (docs/review-rules.md, ``reconcile``)."""
    legacy = {p: reviewer(document) for p, reviewer in REVIEWERS.items()}
    if perspective not in legacy:
        return []
    found = [f.as_finding() for f in check_document(document)]
    findings = reconcile(legacy, found, checked_lines(document))[perspective]
    return [finding.as_dict(index, perspective) for index, finding in enumerate(findings)]

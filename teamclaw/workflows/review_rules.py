"""What the offline reviewers find in a requirement document (seed 002 §6.2 review focus).

Each expert reads the document from its own perspective and reports findings that point at
the user's own lines, so a different document gives different findings:

- ``dev`` (development expert, role architect): feasibility, performance, risk - vague
  performance words without a target, numbers without a unit, no error handling, external
  integrations without failure behaviour, open-ended lists.
- ``pm`` (product manager): goals, users, scenarios, acceptance criteria - missing
  acceptance criteria, goals or users, user stories without a benefit, undecided wording.
- ``ai`` (AI expert): AI features without an evaluation target, a fallback or a data source.
- ``domain`` (domain expert): undefined terms and acronyms, personal or payment data
  without privacy/compliance rules, times without a time zone.

English and Chinese wording are both recognised. A finding's ``change`` says how the
consolidator could apply it: ``replace`` (rewrite words in the line), ``append_section``
(add requirements), ``scope_reduction`` (weaken or drop what the user asked for: never
adopted, seed 002 merge rule 3) or ``open_point`` (needs the requirement owner).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from teamclaw.workflows.document import RequirementDocument, Statement

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


@dataclass
class Finding:
    """One review issue as written to ``review_*.json``."""

    rule: str
    category: str
    severity: str
    problem: str
    suggestion: str
    line: int | None = None
    section: str = ""
    quote: str = ""
    change: dict[str, Any] = field(default_factory=dict)

    def as_dict(self, index: int, perspective: str) -> dict[str, Any]:
        return {
            "id": f"{perspective}-{index + 1}",
            "rule": self.rule,
            "category": self.category,
            "severity": self.severity,
            "location": {"line": self.line, "section": self.section},
            "quote": self.quote,
            "problem": self.problem,
            "suggestion": self.suggestion,
            "change": self.change,
        }


def _words(*items: str) -> re.Pattern[str]:
    english = [i for i in items if i.isascii()]
    other = [i for i in items if not i.isascii()]
    parts = []
    if english:
        parts.append(r"\b(?:" + "|".join(re.escape(i) for i in english) + r")\b")
    if other:
        parts.append("(?:" + "|".join(re.escape(i) for i in other) + ")")
    return re.compile("|".join(parts), re.IGNORECASE)


VAGUE_PERFORMANCE = _words(
    "fast",
    "faster",
    "quick",
    "quickly",
    "responsive",
    "real-time",
    "realtime",
    "instant",
    "instantly",
    "scalable",
    "high performance",
    "high-performance",
    "efficient",
    "low latency",
    "smooth",
    "lightweight",
    "快速",
    "实时",
    "高性能",
    "高并发",
    "流畅",
    "及时",
    "秒级",
)
VAGUE_QUALITY = _words(
    "user-friendly",
    "user friendly",
    "intuitive",
    "easy to use",
    "simple",
    "modern",
    "robust",
    "secure",
    "reliable",
    "seamless",
    "flexible",
    "友好",
    "易用",
    "简洁",
    "稳定",
    "安全可靠",
)
MEASURE = re.compile(
    r"\d+(?:\.\d+)?\s*(?:ms|s|sec|seconds?|minutes?|min|hours?|%|percent|rps|qps|req/s|"
    r"requests|users|MB|GB|KB|毫秒|秒|分钟|小时|个|次)\b|p\d{2}|percentile|\d+\s*(?:毫秒|秒|分钟|小时|%)",
    re.IGNORECASE,
)
COMPARATOR_NUMBER = re.compile(
    r"(?P<cmp>within|under|below|less than|more than|at least|at most|up to|no more than|maximum|max\.?|minimum|"
    r"min\.?|above|over|exceed(?:s|ing)?|timeout of|limit of|不超过|少于|小于|大于|至少|最多|以内)\s*"
    r"(?P<num>\d+(?:[.,]\d+)?)(?P<after>\s*[A-Za-z%\u4e00-\u9fff/]*)",
    re.IGNORECASE,
)
UNITS = {
    "ms",
    "s",
    "sec",
    "secs",
    "second",
    "seconds",
    "minute",
    "minutes",
    "min",
    "mins",
    "hour",
    "hours",
    "h",
    "day",
    "days",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "%",
    "percent",
    "mb",
    "gb",
    "kb",
    "tb",
    "bytes",
    "users",
    "user",
    "requests",
    "request",
    "rps",
    "qps",
    "req/s",
    "items",
    "item",
    "records",
    "rows",
    "times",
    "px",
    "characters",
    "chars",
    "words",
    "files",
    "orders",
    "products",
    "clicks",
    "steps",
    "attempts",
    "retries",
    "concurrent",
    "sessions",
    "pages",
    "members",
    "people",
    "customers",
    "tickets",
    "messages",
    "tasks",
    "eur",
    "usd",
    "cny",
    "rmb",
    "yuan",
    "dollars",
    "euros",
    "k",
    "m",
}
CJK_UNITS = ("毫秒", "秒", "分钟", "小时", "天", "个", "次", "人", "条", "元", "%", "兆", "页")
ERROR_HANDLING = _words(
    "error",
    "errors",
    "failure",
    "fails",
    "failed",
    "exception",
    "retry",
    "retries",
    "fallback",
    "timeout",
    "outage",
    "recover",
    "失败",
    "异常",
    "重试",
    "错误",
    "降级",
)
INTEGRATION = _words(
    "third-party",
    "third party",
    "external",
    "integrate",
    "integration",
    "integrates",
    "webhook",
    "payment gateway",
    "sync",
    "synchronize",
    "import from",
    "export to",
    "API of",
    "第三方",
    "对接",
    "同步",
    "集成",
)
OPEN_ENDED = _words("etc", "and so on", "and more", "等等", "等")
ACCEPTANCE_HEADINGS = ("acceptance", "验收", "done when", "definition of done", "success criteria")
GOAL_HEADINGS = ("goal", "objective", "background", "purpose", "why", "目标", "背景", "目的")
USERS = _words(
    "user",
    "users",
    "customer",
    "customers",
    "persona",
    "personas",
    "admin",
    "administrator",
    "operator",
    "用户",
    "客户",
    "管理员",
    "角色",
)
USER_STORY = re.compile(r"\bas an? .+?\bi (?:want|need|can)\b", re.IGNORECASE)
SO_THAT = re.compile(r"\bso that\b|以便|从而", re.IGNORECASE)
UNDECIDED = _words(
    "TBD",
    "TODO",
    "to be decided",
    "to be confirmed",
    "maybe",
    "perhaps",
    "possibly",
    "might",
    "待定",
    "待确认",
    "可能",
    "或许",
)
SHOULD = _words("should", "could", "may", "ideally", "nice to have", "应该", "尽量", "最好")
AI_TERMS = _words(
    "AI",
    "artificial intelligence",
    "machine learning",
    "ML",
    "model",
    "LLM",
    "GPT",
    "chatbot",
    "recommend",
    "recommends",
    "recommendation",
    "recommendations",
    "predict",
    "predicts",
    "prediction",
    "classify",
    "classification",
    "intelligent",
    "smart",
    "natural language",
    "NLP",
    "sentiment",
    "auto-tag",
    "automatically detect",
    "computer vision",
    "OCR",
    "人工智能",
    "智能",
    "推荐",
    "预测",
    "识别",
    "大模型",
    "模型",
    "自动分类",
)
AI_METRIC = _words(
    "accuracy",
    "precision",
    "recall",
    "F1",
    "AUC",
    "BLEU",
    "hit rate",
    "click-through",
    "CTR",
    "evaluation",
    "benchmark",
    "准确率",
    "召回率",
    "评测",
    "评估",
)
AI_FALLBACK = _words(
    "fallback", "fall back", "manual", "human", "override", "review by", "confidence", "人工", "兜底", "降级", "置信度"
)
AI_DATA = _words(
    "data", "dataset", "training", "trained", "labelled", "labeled", "history", "historical", "数据", "训练", "样本"
)
PERSONAL_DATA = _words(
    "email",
    "e-mail",
    "phone",
    "address",
    "birthday",
    "date of birth",
    "password",
    "personal data",
    "personal information",
    "name and",
    "ID card",
    "passport",
    "location",
    "health",
    "medical",
    "手机号",
    "身份证",
    "地址",
    "个人信息",
    "密码",
    "位置",
)
PRIVACY = _words(
    "GDPR",
    "privacy",
    "consent",
    "retention",
    "encrypt",
    "encrypted",
    "encryption",
    "anonymi",
    "pseudonym",
    "data protection",
    "PIPL",
    "CCPA",
    "HIPAA",
    "隐私",
    "合规",
    "加密",
    "授权",
    "脱敏",
)
PAYMENT = _words(
    "payment",
    "payments",
    "pay",
    "credit card",
    "card number",
    "invoice",
    "refund",
    "billing",
    "wallet",
    "支付",
    "付款",
    "退款",
    "发票",
    "信用卡",
)
PAYMENT_COMPLIANCE = _words("PCI", "PCI-DSS", "audit", "audit log", "reconciliation", "ledger", "审计", "对账")
TIME_OF_DAY = re.compile(
    r"\b(?:at\s+)?(?:[01]?\d|2[0-3]):[0-5]\d\b|\bmidnight\b|\bnoon\b|\bevery (?:day|morning|night)\b"
    r"|每天|每日|凌晨",
    re.IGNORECASE,
)
TIMEZONE = _words("UTC", "GMT", "time zone", "timezone", "local time", "CET", "PST", "EST", "时区", "北京时间")
ACRONYM = re.compile(r"\b[A-Z][A-Z0-9]{1,5}s?\b")
COMMON_ACRONYMS = {
    "API",
    "APIS",
    "UI",
    "UX",
    "URL",
    "URLS",
    "HTTP",
    "HTTPS",
    "JSON",
    "XML",
    "CSV",
    "PDF",
    "ID",
    "IDS",
    "AI",
    "OK",
    "FAQ",
    "HTML",
    "CSS",
    "SQL",
    "REST",
    "CPU",
    "GPU",
    "RAM",
    "SSD",
    "USB",
    "TODO",
    "TBD",
    "PM",
    "AM",
    "UTC",
    "GMT",
    "CET",
    "PST",
    "EST",
    "US",
    "EU",
    "UK",
    "IT",
    "QA",
    "MVP",
    "KPI",
    "KPIS",
    "CEO",
    "CTO",
    "HR",
    "SMS",
    "PC",
    "IOS",
    "V1",
    "V2",
    "V3",
    "MB",
    "GB",
    "KB",
    "TB",
    "MS",
    "OR",
    "AND",
    "NOT",
    "LLM",
    "GPT",
    "ML",
    "NLP",
    "OCR",
    "AUC",
    "CTR",
    "GDPR",
    "PCI",
    "DSS",
    "PIPL",
    "CCPA",
    "HIPAA",
    "SLA",
    "SLAS",
    "FAQS",
    "PRD",
    "RPS",
    "QPS",
    "P95",
    "P99",
    "A",
    "I",
    "DB",
    "SDK",
    "CI",
    "CD",
    "CLI",
    "JWT",
    "SSO",
    "OTP",
    "TLS",
    "SSL",
    "DNS",
    "CDN",
    "VPN",
    "PNG",
    "JPG",
    "JPEG",
    "GIF",
    "SVG",
    "MP4",
    "F1",
    "BLEU",
    "WCAG",
    "AA",
    "AAA",
}
CONTRACT = _words("must", "shall", "required", "requires", "need to", "needs to", "will", "必须", "需要", "应")


def _quote(statement: Statement) -> str:
    return statement.text[:240]


def _clip(text: str, limit: int = 120) -> str:
    """``text`` without its final period, cut at a word boundary to at most ``limit`` characters."""
    text = text.strip().rstrip(".")
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + "…"


def _unit_missing(after: str) -> bool:
    token = after.strip().lower().rstrip(".,;:)")
    if not token:
        return True
    if any(token.startswith(u) for u in CJK_UNITS):
        return False
    return token.split("/")[0] not in UNITS and token not in UNITS


def _likely_unit(statement: str, number: float) -> str | None:
    lowered = statement.lower()
    if re.search(r"respon|latenc|load|render|return|reply|wait|页面|响应|加载", lowered):
        return "ms" if number >= 50 else "s"
    if re.search(r"timeout|expire|session|token|超时|过期", lowered):
        return "s" if number < 600 else "min"
    if re.search(r"upload|file|attachment|image|storage|size|上传|文件|附件|图片", lowered):
        return "MB"
    return None


def review_dev(document: RequirementDocument) -> list[Finding]:
    """Development expert: performance targets, units, error handling, integrations, scope."""
    findings: list[Finding] = []
    for statement in document.statements:
        vague = VAGUE_PERFORMANCE.search(statement.text)
        if vague and not MEASURE.search(statement.text):
            word = vague.group(0)
            lowered = word.lower()
            if lowered in ("real-time", "realtime", "实时", "instant", "instantly", "及时"):
                target = "updated within 5 s of the change"
            elif lowered in ("scalable", "高并发"):
                target = "handles 10x the expected peak load with a p95 response time of at most 2 s"
            else:
                target = "p95 response time of at most 2 s under the expected load"
            findings.append(
                Finding(
                    "no_measurable_target",
                    "performance",
                    "major",
                    f"'{word}' has no measurable target, so it cannot be tested or accepted.",
                    f"State a measurable target, e.g. {target}.",
                    statement.number,
                    statement.section,
                    _quote(statement),
                    {"action": "replace", "old": word, "new": f"{word} ({target})"},
                )
            )
            if word.lower() in ("real-time", "realtime", "实时", "instant", "instantly"):
                findings.append(
                    Finding(
                        "scope_simplification",
                        "scope",
                        "minor",
                        f"'{word}' updates are expensive to build and operate.",
                        "Drop the real-time requirement and refresh the data every 60 s instead.",
                        statement.number,
                        statement.section,
                        _quote(statement),
                        {"action": "scope_reduction", "old": word, "new": "refreshed every 60 s"},
                    )
                )
        for match in COMPARATOR_NUMBER.finditer(statement.text):
            if _unit_missing(match.group("after")):
                number = float(match.group("num").replace(",", "."))
                unit = _likely_unit(statement.text, number)
                change: dict[str, Any] = (
                    {
                        "action": "replace",
                        "old": match.group(0).rstrip(),
                        "new": f"{match.group('cmp')} {match.group('num')} {unit}",
                    }
                    if unit
                    else {"action": "open_point", "question": f"What is the unit of {match.group('num')}?"}
                )
                findings.append(
                    Finding(
                        "number_without_unit",
                        "units",
                        "major",
                        f"'{match.group(0).strip()}' gives a number without a unit.",
                        f"Give the unit ({unit} is what the sentence implies)."
                        if unit
                        else "Give the unit of the number.",
                        statement.number,
                        statement.section,
                        _quote(statement),
                        change,
                    )
                )
        if OPEN_ENDED.search(statement.text) and statement.text.rstrip().endswith(("etc.", "etc", "等", "and more")):
            findings.append(
                Finding(
                    "open_ended_list",
                    "scope",
                    "minor",
                    "The list ends open ('etc.'), so the scope cannot be estimated or tested.",
                    "List every item that is in scope and drop 'etc.'.",
                    statement.number,
                    statement.section,
                    _quote(statement),
                    {"action": "open_point", "question": "Which items does 'etc.' stand for?"},
                )
            )
        if INTEGRATION.search(statement.text) and not ERROR_HANDLING.search(statement.text):
            findings.append(
                Finding(
                    "integration_failure_undefined",
                    "integration",
                    "major",
                    "An external integration is required but its failure behaviour is not.",
                    "Say what happens when the external system is slow or down (timeout, retries, user message).",
                    statement.number,
                    statement.section,
                    _quote(statement),
                    {
                        "action": "append_section",
                        "section": "Error handling",
                        "lines": [
                            f'When an external system named in "{_clip(statement.text)}" is slow or unavailable, the '
                            "operation is retried up to 3 times with backoff, then the user sees what failed and can "
                            "retry later."
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
                "The document never says what happens when something fails.",
                "Add error handling requirements: what the user sees, what is retried, what is logged.",
                None,
                "",
                "",
                {
                    "action": "append_section",
                    "section": "Error handling",
                    "lines": [
                        "Every failed operation tells the user what failed and what to do next.",
                        "Failures are logged with enough context to diagnose them.",
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
        if any(k in section for k in NOT_REQUIREMENT_SECTIONS):
            continue
        if (
            CONTRACT.search(statement.text)
            or USER_STORY.search(statement.text)
            or any(k in section for k in REQUIREMENT_SECTIONS)
        ):
            out.append(statement)
    return out


def review_pm(document: RequirementDocument) -> list[Finding]:
    """Product manager: acceptance criteria, goals, users, user stories, undecided wording."""
    findings: list[Finding] = []
    contracts = requirement_statements(document)
    if not document.has_section(*ACCEPTANCE_HEADINGS):
        findings.append(
            Finding(
                "missing_acceptance_criteria",
                "acceptance",
                "major",
                "There are no acceptance criteria, so nobody can tell when the work is done.",
                "Add an 'Acceptance criteria' section with one testable criterion per requirement.",
                None,
                "",
                "",
                {
                    "action": "append_section",
                    "section": "Acceptance criteria",
                    # Criteria are written from these lines as they read after consolidation.
                    "from_lines": [s.number for s in contracts[:20]],
                    "line_format": "[ ] {text}",
                    "lines": []
                    if contracts
                    else ["[ ] Each requirement above is demonstrated by a test before release."],
                },
            )
        )
    if not document.has_section(*GOAL_HEADINGS):
        findings.append(
            Finding(
                "missing_goal",
                "goals",
                "minor",
                "The document does not say what business goal the work serves.",
                "Add a short 'Goal' section: the problem, who has it and how success is measured.",
                None,
                "",
                "",
                {
                    "action": "open_point",
                    "question": "What business goal does this serve, and how is success measured?",
                },
            )
        )
    if document.statements and not document.mentions(USERS):
        findings.append(
            Finding(
                "missing_users",
                "users",
                "major",
                "No user or customer is named, so the value to anyone is unclear.",
                "Name the users (roles or personas) and what each needs.",
                None,
                "",
                "",
                {"action": "open_point", "question": "Who are the users of this feature?"},
            )
        )
    for statement in document.statements:
        if USER_STORY.search(statement.text) and not SO_THAT.search(statement.text):
            findings.append(
                Finding(
                    "story_without_benefit",
                    "users",
                    "minor",
                    "This user story has no 'so that': the benefit is missing.",
                    "Complete the story with the benefit the user gets ('so that ...').",
                    statement.number,
                    statement.section,
                    _quote(statement),
                    {"action": "open_point", "question": f"What does the user gain from: {statement.text[:80]}?"},
                )
            )
        undecided = UNDECIDED.search(statement.text)
        if undecided:
            findings.append(
                Finding(
                    "undecided_requirement",
                    "ambiguity",
                    "major",
                    f"'{undecided.group(0)}' leaves this requirement undecided.",
                    "Decide it: state what is required, or move it out of scope.",
                    statement.number,
                    statement.section,
                    _quote(statement),
                    {"action": "open_point", "question": f"Decide: {statement.text[:100]}"},
                )
            )
        elif SHOULD.search(statement.text) and not CONTRACT.search(statement.text):
            word = SHOULD.search(statement.text).group(0)  # type: ignore[union-attr]
            findings.append(
                Finding(
                    "weak_wording",
                    "ambiguity",
                    "minor",
                    f"'{word}' makes it unclear whether this is required.",
                    "Use 'must' if it is required; otherwise mark it optional.",
                    statement.number,
                    statement.section,
                    _quote(statement),
                    {"action": "replace", "old": word, "new": "must", "strengthens": True},
                )
            )
        vague = VAGUE_QUALITY.search(statement.text)
        if vague and not MEASURE.search(statement.text):
            findings.append(
                Finding(
                    "unmeasurable_quality",
                    "acceptance",
                    "minor",
                    f"'{vague.group(0)}' cannot be accepted or rejected by a test.",
                    "Describe the observable behaviour instead (e.g. a first-time user completes the flow "
                    "without help in under 2 minutes).",
                    statement.number,
                    statement.section,
                    _quote(statement),
                    {
                        "action": "replace",
                        "old": vague.group(0),
                        "new": f"{vague.group(0)} (a first-time user completes it without help in under 2 minutes)",
                    },
                )
            )
    return findings


def review_ai(document: RequirementDocument) -> list[Finding]:
    """AI expert: evaluation targets, fallbacks and data for every AI feature."""
    findings: list[Finding] = []
    ai_lines = [s for s in document.statements if AI_TERMS.search(s.text)]
    if not ai_lines:
        return findings
    has_metric = document.mentions(AI_METRIC)
    has_fallback = document.mentions(AI_FALLBACK)
    has_data = document.mentions(AI_DATA)
    for statement in ai_lines:
        term = AI_TERMS.search(statement.text).group(0)  # type: ignore[union-attr]
        if not has_metric and not MEASURE.search(statement.text):
            findings.append(
                Finding(
                    "ai_without_evaluation",
                    "evaluation",
                    "major",
                    f"The AI feature ('{term}') has no quality target, so it cannot be evaluated.",
                    "State how it is evaluated and the target, e.g. at least 80% precision on a held-out set.",
                    statement.number,
                    statement.section,
                    _quote(statement),
                    {
                        "action": "append_section",
                        "section": "AI behaviour",
                        "lines": [
                            f'The AI feature in "{_clip(statement.text)}" reaches at least 80% precision on a '
                            "held-out evaluation set before release."
                        ],
                    },
                )
            )
    if not has_fallback:
        first = ai_lines[0]
        findings.append(
            Finding(
                "ai_without_fallback",
                "reliability",
                "major",
                "Nothing says what happens when the AI is wrong, unsure or unavailable.",
                "Define a fallback: a confidence threshold below which a human decides, and the behaviour when the "
                "model is down.",
                first.number,
                first.section,
                _quote(first),
                {
                    "action": "append_section",
                    "section": "AI behaviour",
                    "lines": [
                        "When the model is unavailable or its confidence is below the threshold, the system falls "
                        "back to the non-AI behaviour and lets a person decide."
                    ],
                },
            )
        )
    if not has_data:
        first = ai_lines[0]
        findings.append(
            Finding(
                "ai_without_data",
                "data",
                "minor",
                "The AI feature's data source (training or context data) is not named.",
                "Name the data the AI uses and who owns it.",
                first.number,
                first.section,
                _quote(first),
                {"action": "open_point", "question": "Which data does the AI feature learn from or use?"},
            )
        )
    return findings


def defined_acronyms(document: RequirementDocument) -> set[str]:
    """Acronyms the document defines: 'Long Name (ABC)', 'ABC (Long Name)', 'ABC: ...', 'ABC means'."""
    defined = set(re.findall(r"\(([A-Z][A-Z0-9]{1,5})s?\)", document.source))
    defined |= set(re.findall(r"\b([A-Z][A-Z0-9]{1,5})\s*\([A-Za-z][^)]{3,}\)", document.source))
    defined |= set(
        re.findall(
            r"^\s*(?:[-*]\s*)?\**([A-Z][A-Z0-9]{1,5})\**\s*(?::|=|means|stands for)", document.source, re.MULTILINE
        )
    )
    return defined


def review_domain(document: RequirementDocument) -> list[Finding]:
    """Domain expert: terminology, privacy and payment compliance, time zones."""
    findings: list[Finding] = []
    defined = defined_acronyms(document)
    reported: set[str] = set()
    for statement in document.statements:
        for match in ACRONYM.finditer(statement.text):
            term = match.group(0)
            if term.endswith("s") and len(term) > 2:
                term = term[:-1]
            if term in COMMON_ACRONYMS or term in defined or term in reported or term.isdigit():
                continue
            reported.add(term)
            findings.append(
                Finding(
                    "undefined_term",
                    "terminology",
                    "major",
                    f"'{term}' is used but never defined; readers outside the team will not know it.",
                    f"Define '{term}' where it first appears or in a glossary.",
                    statement.number,
                    statement.section,
                    _quote(statement),
                    {"action": "open_point", "question": f"What does '{term}' mean?", "term": term},
                )
            )
    personal = [s for s in document.statements if PERSONAL_DATA.search(s.text)]
    if personal and not document.mentions(PRIVACY):
        first = personal[0]
        kinds = sorted({m.lower() for s in personal for m in PERSONAL_DATA.findall(s.text)})
        findings.append(
            Finding(
                "personal_data_without_privacy",
                "privacy",
                "critical",
                f"Personal data ({', '.join(kinds)}) is handled but no privacy or data-protection rule is stated.",
                "State consent, purpose, retention, encryption and deletion rules (GDPR/PIPL where they apply).",
                first.number,
                first.section,
                _quote(first),
                {
                    "action": "append_section",
                    "section": "Privacy and compliance",
                    "lines": [
                        f"Personal data ({', '.join(kinds)}) is collected only with the user's consent and only for "
                        "the purpose stated here.",
                        "Personal data is encrypted in transit and at rest.",
                        "Personal data is deleted within 30 days of a user's request or when no longer needed.",
                    ],
                },
            )
        )
    payments = [s for s in document.statements if PAYMENT.search(s.text)]
    if payments and not document.mentions(PAYMENT_COMPLIANCE):
        first = payments[0]
        findings.append(
            Finding(
                "payment_without_compliance",
                "compliance",
                "critical",
                "Payments are handled but there is no audit trail or payment-card compliance requirement.",
                "Require an audit log of every payment event and PCI-DSS compliant card handling "
                "(card data never stored by the product).",
                first.number,
                first.section,
                _quote(first),
                {
                    "action": "append_section",
                    "section": "Privacy and compliance",
                    "lines": [
                        "Every payment, refund and invoice event is written to an audit log that cannot be edited.",
                        "Card data is handled only by a PCI-DSS compliant payment provider and never stored.",
                    ],
                },
            )
        )
    for statement in document.statements:
        times = [m.group(0) for m in TIME_OF_DAY.finditer(statement.text)]
        if times and not TIMEZONE.search(statement.text):
            moment = next((t for t in times if any(ch.isdigit() for ch in t)), times[0])
            findings.append(
                Finding(
                    "time_without_zone",
                    "time",
                    "minor",
                    f"'{moment}' is a time of day without a time zone.",
                    "Give the time zone (e.g. UTC) or say it is the user's local time.",
                    statement.number,
                    statement.section,
                    _quote(statement),
                    {"action": "replace", "old": moment, "new": f"{moment} (UTC)"},
                )
            )
    return findings


REVIEWERS = {"dev": review_dev, "pm": review_pm, "ai": review_ai, "domain": review_domain}


def review(document: RequirementDocument, perspective: str) -> list[dict[str, Any]]:
    """The findings of ``perspective`` as ``review_*.json`` issue dicts (ids ``<perspective>-N``)."""
    reviewer = REVIEWERS.get(perspective)
    findings = reviewer(document) if reviewer else []
    return [finding.as_dict(index, perspective) for index, finding in enumerate(findings)]

"""The domain expert's offline review (seed 002 §6.2 领域专家: 领域合规性、行业规范、特殊要求).

Framed by the field and the jurisdiction the text implies (``domains.domain_frame``): a
Chinese document about patients is reviewed under PIPL and China's health-data rules, an EU
one under GDPR, and a document that implies no jurisdiction gets an open point instead of a
guessed law. Everything it would write is in the document's language.
"""

from __future__ import annotations

import re
from typing import Any

from teamclaw.workflows.document import RequirementDocument, Statement
from teamclaw.workflows.domains import domain_frame
from teamclaw.workflows.review_findings import Finding, quote
from teamclaw.workflows.review_text import proposed, say
from teamclaw.workflows.review_vocabulary import (
    ACRONYM,
    BOUNDARY,
    COMMON_ACRONYMS,
    CONSENT,
    HEALTH_DATA,
    NOTIFICATION,
    PAYMENT,
    PAYMENT_COMPLIANCE,
    PERSONAL_DATA,
    PRIVACY,
    QUOTED_TERM,
    RETENTION,
    TIME_OF_DAY,
    TIME_WINDOW,
    TIMEZONE,
)


def defined_acronyms(document: RequirementDocument) -> set[str]:
    """Acronyms the document defines: 'Long Name (ABC)', 'ABC (Long Name)', 'ABC: ...', 'ABC means',
    and the Chinese forms '医院信息系统（HIS）', 'HIS（医院信息系统）', 'HIS：…', 'HIS 指…'."""
    source = document.source
    defined = set(re.findall(r"[(（]([A-Z][A-Z0-9]{1,5})s?[)）]", source))
    defined |= set(re.findall(r"(?<![A-Za-z0-9])([A-Z][A-Z0-9]{1,5})\s*[(（][^)）]{2,}[)）]", source))
    defined |= set(
        re.findall(
            r"^\s*(?:[-*]\s*)?\**([A-Z][A-Z0-9]{1,5})\**\s*(?::|：|=|means|stands for|指|是指)", source, re.MULTILINE
        )
    )
    return defined


def defined_terms(document: RequirementDocument) -> set[str]:
    """Quoted terms the document defines: '“X”指…', '“X”：…', 'X（…）', '"X" means …'."""
    defined = set()
    for statement in document.statements:
        for term in re.findall(
            r"^\**[“「]?([^“”「」：:]{2,20}?)[”」]?\**\s*(?:：|:|指|是指|定义为|means|is defined as)", statement.text
        ):
            defined.add(term.strip())
    return defined


def review_domain(document: RequirementDocument) -> list[Finding]:
    """Domain expert (seed 002 §6.2: compliance, industry norms, special requirements), framed
    by the field and jurisdiction the text implies (``domains.domain_frame``): undefined terms;
    personal, health and payment data without privacy, consent and retention rules;
    an unknown jurisdiction as an open point; notifications without consent; times without
    a time zone and time windows without boundary rules."""
    lang = document.language
    frame = domain_frame(document.source, lang)
    findings = _undefined_terms(document)
    findings += _data_protection(document, frame)
    findings += _times(document, frame)
    return findings


def _undefined_terms(document: RequirementDocument) -> list[Finding]:
    lang = document.language
    findings: list[Finding] = []
    defined = defined_acronyms(document) | defined_terms(document)
    reported: set[str] = set()

    def report(term: str, statement: Statement) -> None:
        reported.add(term)
        findings.append(
            Finding(
                "undefined_term",
                "terminology",
                "major",
                say(
                    lang,
                    f"'{term}' is used but never defined; readers outside the team will not know it.",
                    f"“{term}”没有定义，团队以外的读者无法理解。",
                ),
                say(
                    lang,
                    f"Define '{term}' where it first appears or in a glossary.",
                    f"在首次出现处或术语表中定义“{term}”。",
                ),
                statement.number,
                statement.section,
                quote(statement),
                {
                    "action": "open_point",
                    "question": say(lang, f"What does '{term}' mean?", f"“{term}”指什么？"),
                    "term": term,
                },
            )
        )

    for statement in document.statements:
        for match in ACRONYM.finditer(statement.text):
            term = match.group(0)
            if term.endswith("s") and len(term) > 2:
                term = term[:-1]
            if term in COMMON_ACRONYMS or term in defined or term in reported or term.isdigit():
                continue
            report(term, statement)
        for term in QUOTED_TERM.findall(statement.text):
            if term not in defined and term not in reported and not re.search(r"[。，！？,.!?]|\d", term):
                report(term, statement)
    return findings


GENERIC_PERSONAL_DATA = {"personal data", "personal information", "个人信息"}
"""Words that name personal data in general, not a kind of it."""


def _data_protection(document: RequirementDocument, frame: dict[str, Any]) -> list[Finding]:
    lang, code = document.language, frame["jurisdiction"]
    findings: list[Finding] = []
    where = frame["jurisdiction_label"]
    personal = [s for s in document.statements if PERSONAL_DATA.search(s.text)]
    if personal:
        first = personal[0]
        kinds = sorted({m.lower() for s in personal for m in PERSONAL_DATA.findall(s.text)})
        specific = [k for k in kinds if k not in GENERIC_PERSONAL_DATA]
        kinds = specific or kinds  # the generic word only when nothing specific is named
        health = sorted({m.lower() for s in personal for m in HEALTH_DATA.findall(s.text)})
        listed = say(lang, ", ".join(kinds), "、".join(kinds))
        missing = [
            name
            for name, pattern in (
                (say(lang, "privacy and protection", "隐私保护"), PRIVACY),
                (say(lang, "consent", "同意"), CONSENT),
            )
            if not document.mentions(pattern)
        ]
        if missing:
            lines = _privacy_lines(lang, code, listed, health)
            findings.append(
                Finding(
                    "personal_data_without_privacy",
                    "privacy",
                    "critical",
                    say(
                        lang,
                        f"Personal data ({listed}) is handled but no {' or '.join(missing)} rule is stated "
                        f"(jurisdiction: {where}).",
                        f"需求处理个人信息（{listed}），但没有{'和'.join(missing)}方面的规定（适用法域：{where}）。",
                    ),
                    say(
                        lang,
                        "State consent, purpose, encryption and deletion rules under "
                        + "; ".join(frame["norms"])
                        + ".",
                        "按以下规范写明同意、目的、加密和删除规则：" + "；".join(frame["norms"]) + "。",
                    ),
                    first.number,
                    first.section,
                    quote(first),
                    {"action": "append_section", "section": "Privacy and compliance", "lines": lines},
                )
            )
        if not document.mentions(RETENTION):
            findings.append(
                Finding(
                    "retention_undefined",
                    "privacy",
                    "major",
                    say(
                        lang,
                        f"Nothing says how long the personal data ({listed}) is kept or when it is deleted.",
                        f"没有说明个人信息（{listed}）保存多久、何时删除。",
                    ),
                    say(
                        lang,
                        "State the retention period and the deletion trigger.",
                        "写明保存期限和删除条件。",
                    ),
                    first.number,
                    first.section,
                    quote(first),
                    {
                        "action": "open_point",
                        "question": say(
                            lang,
                            f"How long is the personal data ({listed}) kept, and what triggers its deletion?"
                            + (" GDPR art. 5(1)(e) allows no longer than the purpose needs." if code == "EU" else ""),
                            f"个人信息（{listed}）保存多久？何时删除？"
                            + (
                                "《个人信息保护法》第 19 条要求保存期限为实现处理目的所必要的最短时间。"
                                if code == "CN"
                                else ""
                            ),
                        ),
                    },
                )
            )
        if not code:
            findings.append(
                Finding(
                    "jurisdiction_unknown",
                    "compliance",
                    "major",
                    say(
                        lang,
                        "Personal data is handled, but the text implies no jurisdiction, so the applicable data "
                        "protection law (GDPR, PIPL, HIPAA, ...) is unknown.",
                        "需求处理个人信息，但文中没有指明适用的法域，无法确定适用 PIPL、GDPR 还是其他法规。",
                    ),
                    say(
                        lang,
                        "State where the product operates and whose residents' data it processes.",
                        "写明产品运营地点以及处理哪些地区居民的个人信息。",
                    ),
                    first.number,
                    first.section,
                    quote(first),
                    {
                        "action": "open_point",
                        "question": say(
                            lang,
                            "In which jurisdiction does the product operate, and which data protection law applies?",
                            "产品在哪个法域运营？适用哪部个人信息保护法规？",
                        ),
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
                say(
                    lang,
                    "Payments are handled but there is no audit trail or payment-card compliance requirement.",
                    "需求涉及支付，但没有审计记录和支付合规方面的要求。",
                ),
                say(
                    lang,
                    "Require an audit log of every payment event and PCI-DSS compliant card handling "
                    "(card data never stored by the product).",
                    "要求每笔支付事件写入审计日志，支付由持牌支付机构处理，系统不存储银行卡信息。",
                ),
                first.number,
                first.section,
                quote(first),
                {
                    "action": "append_section",
                    "section": "Privacy and compliance",
                    "lines": [
                        say(
                            lang,
                            "Every payment, refund and invoice event is written to an audit log that cannot be edited.",
                            "每笔支付、退款和开票事件写入不可修改的审计日志，并与支付机构对账。",
                        ),
                        say(
                            lang,
                            "Card data is handled only by a PCI-DSS compliant payment provider and never stored.",
                            "支付仅通过持牌支付机构完成，系统不存储银行卡信息。",
                        ),
                    ],
                },
            )
        )
    notices = [s for s in document.statements if NOTIFICATION.search(s.text)]
    if notices and not any(CONSENT.search(s.text) for s in notices):
        first = notices[0]
        findings.append(
            Finding(
                "notification_without_consent",
                "compliance",
                "major",
                say(
                    lang,
                    "Notifications are sent without saying that the recipient agreed to them or how to stop them.",
                    "需求要求发送通知，但没有说明接收人是否同意接收、如何退订。",
                ),
                say(
                    lang,
                    "Send only to recipients who opted in, and offer an opt-out in every message.",
                    "仅向同意接收的用户发送，并在每条通知中提供退订方式。",
                ),
                first.number,
                first.section,
                quote(first),
                {
                    "action": "append_section",
                    "section": "Privacy and compliance",
                    "lines": [
                        say(
                            lang,
                            "Notifications are sent only to recipients who opted in; each message says how to opt out.",
                            "通知仅发送给明确同意接收的用户；每条通知都说明退订方式"
                            + ("（营销类短信须事先取得用户同意）。" if code == "CN" else "。"),
                        )
                    ],
                },
            )
        )
    return findings


def _privacy_lines(lang: str, code: str, listed: str, health: list[str]) -> list[str]:
    if lang == "zh":
        lines = [f"个人信息（{listed}）仅在取得用户同意后、为本文所述目的收集和使用。"]
        if health and code == "CN":
            lines.append(
                f"{'、'.join(health)}属于《个人信息保护法》第 28 条规定的敏感个人信息，处理前须取得个人的单独同意，"
                "并告知处理的必要性及对个人权益的影响。"
            )
        elif health:
            lines.append(f"{'、'.join(health)}属于健康信息，按适用法规作为敏感数据处理。")
        lines.append("个人信息在传输和存储时加密，仅授权人员可访问，访问记录可审计。")
        if code == "CN":
            lines.append("个人信息存储在中国境内；向境外提供须符合《个人信息保护法》第三章的规定。")
        return lines
    lines = [
        f"Personal data ({listed}) is collected only with the user's consent and only for the purpose stated here."
    ]
    if health and code == "EU":
        lines.append(
            f"{', '.join(health).capitalize()} data is special-category data (GDPR art. 9) and needs explicit consent."
        )
    elif health and code == "CN":
        lines.append(f"{', '.join(health).capitalize()} data is sensitive personal information under PIPL art. 28.")
    elif health:
        lines.append(
            f"{', '.join(health).capitalize()} data is treated as sensitive health data under the applicable law."
        )
    lines.append(
        "Personal data is encrypted in transit and at rest; only authorised staff can access it, and access is logged."
    )
    return lines


def _times(document: RequirementDocument, frame: dict[str, Any]) -> list[Finding]:
    lang, code = document.language, frame["jurisdiction"]
    findings: list[Finding] = []
    for statement in document.statements:
        times = [m.group(0) for m in TIME_OF_DAY.finditer(statement.text)]
        if times and not TIMEZONE.search(statement.text):
            moment = next((t for t in times if any(ch.isdigit() for ch in t)), times[0])
            if code == "CN":
                zone = "北京时间 UTC+8" if lang == "zh" else "China Standard Time, UTC+8"
                change: dict[str, Any] = {"action": "replace", "old": moment, "new": moment + proposed(lang, zone)}
            else:
                change = {
                    "action": "open_point",
                    "question": say(
                        lang,
                        f"Which time zone is '{moment}' in (UTC, the user's local time, the site's local time)?",
                        f"“{moment}”按哪个时区计算（北京时间、用户当地时间还是 UTC）？",
                    ),
                }
            findings.append(
                Finding(
                    "time_without_zone",
                    "time",
                    "minor",
                    say(
                        lang,
                        f"'{moment}' is a time of day without a time zone.",
                        f"“{moment}”是一个时刻，但没有指明时区。",
                    ),
                    say(
                        lang,
                        "Give the time zone (e.g. UTC) or say it is the user's local time.",
                        "写明时区（例如北京时间），或说明按用户当地时间。",
                    ),
                    statement.number,
                    statement.section,
                    quote(statement),
                    change,
                )
            )
        window = TIME_WINDOW.search(statement.text)
        if window and not BOUNDARY.search(statement.text):
            span = window.group(0).strip()
            findings.append(
                Finding(
                    "time_window_without_boundary",
                    "time",
                    "major",
                    say(
                        lang,
                        f"The time window '{span}' does not say whether its ends are included or which clock it uses.",
                        f"时间窗口“{span}”没有说明端点是否包含，也没有说明按哪个时钟计算。",
                    ),
                    say(
                        lang,
                        "State whether each end is inclusive, what happens exactly at the boundary, and the time zone.",
                        "写明两端是否包含、恰好在边界时刻如何处理，以及时区。",
                    ),
                    statement.number,
                    statement.section,
                    quote(statement),
                    {
                        "action": "open_point",
                        "question": say(
                            lang,
                            f"Is '{span}' inclusive at each end, what happens to a request exactly at the boundary, "
                            "and in which time zone is it measured?",
                            f"“{span}”两端是否包含？恰好在边界时刻的请求如何处理？按哪个时区计算？",
                        ),
                    },
                )
            )
    return findings

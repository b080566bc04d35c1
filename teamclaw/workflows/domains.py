"""The domain a requirement belongs to (seed 002 §6.1 领域识别): its field and the norms
the domain expert reviews it against."""

from __future__ import annotations

import re
from typing import Any

from teamclaw.workflows.document import parse_document
from teamclaw.workflows.quality_engine import jurisdiction_of, packs_of

DOMAINS: dict[str, dict[str, Any]] = {
    "e-commerce": {
        "keywords": r"cart|checkout|product|order|sku|catalog|shop|store|商品|订单|购物车|电商",
        "norms": ["consumer protection and return rights", "PCI-DSS for card payments", "price and tax display rules"],
    },
    "finance": {
        "keywords": r"bank|loan|account balance|transaction|ledger|invest|credit|金融|贷款|账户|理财",
        "norms": ["KYC and anti-money-laundering checks", "audit trails", "data residency"],
    },
    "healthcare": {
        "keywords": r"patient|doctor|clinic|medical|diagnos|prescription|hospital|患者|医生|医疗|病历|医院|就诊|挂号",
        "norms": [
            "health-data protection (HIPAA, PIPL or GDPR by jurisdiction)",
            "clinical safety",
            "consent for data sharing",
        ],
    },
    "education": {
        "keywords": r"student|course|teacher|lesson|grade|exam|学生|课程|教师|考试",
        "norms": ["children's data protection (COPPA/FERPA)", "accessibility (WCAG)"],
    },
    "human resources": {
        "keywords": r"employee|leave|payroll|recruit|hiring|salary|shift|员工|请假|薪资|招聘|排班",
        "norms": ["labour law", "employee data protection", "equal-opportunity rules"],
    },
    "logistics": {
        "keywords": r"shipment|delivery|warehouse|tracking|courier|物流|仓库|配送",
        "norms": ["customs and dangerous-goods rules", "delivery time commitments"],
    },
}


def identify_domain(text: str) -> tuple[str, list[str]]:
    """The domain whose keywords occur most often in ``text`` (seed 002 §6.1), and its norms."""
    lowered = text.lower()
    scores = {name: len(re.findall(spec["keywords"], lowered)) for name, spec in DOMAINS.items()}
    best = max(scores, key=lambda name: scores[name])
    if scores[best] == 0:
        return "general software", ["data protection (GDPR/PIPL)", "accessibility (WCAG)"]
    return best, DOMAINS[best]["norms"]


JURISDICTIONS: dict[str, dict[str, Any]] = {
    "CN": {
        "cues": r"中国|境内|大陆|北京|上海|广州|深圳|身份证|医保|人民币|微信|支付宝|PIPL|个人信息保护法"
        r"|China|Chinese mainland|RMB|CNY",
        "label": {"zh": "中国（《个人信息保护法》PIPL）", "en": "China (PIPL)"},
    },
    "EU": {
        "cues": r"\bEU\b|European Union|GDPR|Germany|France|Spain|Italy|Netherlands|欧盟|€|\bEUR\b",
        "label": {"zh": "欧盟（GDPR）", "en": "the EU (GDPR)"},
    },
    "US": {
        "cues": r"\bUS\b|\bUSA\b|United States|HIPAA|CCPA|California|美国|\bUSD\b",
        "label": {"zh": "美国（HIPAA / CCPA 等）", "en": "the United States (HIPAA / CCPA where they apply)"},
    },
    "UK": {
        "cues": r"\bUK\b|United Kingdom|Britain|UK GDPR|英国|\bGBP\b|£",
        "label": {"zh": "英国（UK GDPR）", "en": "the United Kingdom (UK GDPR)"},
    },
}

NORMS: dict[tuple[str, str], dict[str, list[str]]] = {
    ("healthcare", "CN"): {
        "zh": [
            "《个人信息保护法》：医疗健康信息属于敏感个人信息（第 28 条），处理需取得个人单独同意（第 29 条）",
            "《数据安全法》《网络安全法》：数据分类分级与境内存储",
            "病历与诊疗信息的保存和访问按国家卫生健康主管部门的规定执行",
        ],
        "en": [
            "PIPL: health information is sensitive personal information (art. 28) and needs separate consent (art. 29)",
            "Data Security Law / Cybersecurity Law: data classification and storage in China",
            "medical records kept and accessed under the national health authority's rules",
        ],
    },
    ("healthcare", "EU"): {
        "zh": ["GDPR 第 9 条：健康数据属于特殊类别数据", "知情同意与数据最小化"],
        "en": ["GDPR art. 9: health data is a special category", "explicit consent and data minimisation"],
    },
    ("healthcare", "US"): {
        "zh": ["HIPAA：受保护健康信息（PHI）", "临床安全"],
        "en": ["HIPAA: protected health information (PHI)", "clinical safety"],
    },
}
GENERIC_NORMS: dict[str, dict[str, list[str]]] = {
    "CN": {
        "zh": ["《个人信息保护法》：告知、同意、最小必要与保存期限（第 13、14、19 条）", "《数据安全法》"],
        "en": ["PIPL: notice, consent, minimum necessity and retention (arts. 13, 14, 19)", "Data Security Law"],
    },
    "EU": {
        "zh": ["GDPR：合法性基础、目的限制、存储限制（第 5、6 条）"],
        "en": ["GDPR: lawful basis, purpose limitation, storage limitation (arts. 5, 6)"],
    },
    "US": {"zh": ["州隐私法（如 CCPA）"], "en": ["state privacy laws (e.g. CCPA)"]},
    "UK": {"zh": ["UK GDPR 与《2018 年数据保护法》"], "en": ["UK GDPR and the Data Protection Act 2018"]},
    "": {
        "zh": ["适用法域未明确：无法确定适用 PIPL、GDPR 还是其他法规"],
        "en": ["jurisdiction not stated: whether PIPL, GDPR or another law applies is unknown"],
    },
}
FIELD_LABELS = {
    "e-commerce": "电子商务",
    "finance": "金融",
    "healthcare": "医疗健康",
    "education": "教育",
    "human resources": "人力资源",
    "logistics": "物流",
    "general software": "通用软件",
}


def identify_jurisdiction(text: str) -> tuple[str, list[str]]:
    """``(code, cues)``: the jurisdiction the text implies ("CN", "EU", "US", "UK") and the
    words that imply it, or ``("", [])`` when it implies none (seed 002 §6.1: the domain
    expert's frame; the language a document is written in is not a jurisdiction). The
    requirement-quality engine's segmented hints decide first (社区诊所, 居民, 医保 → CN, as
    for its personal-data findings), then the cues below."""
    code, hints = jurisdiction_of(parse_document(text))
    if code != "unknown":
        return code, hints
    best, best_cues = "", list[str]()
    for code, spec in JURISDICTIONS.items():
        cues = sorted(set(re.findall(spec["cues"], text, re.IGNORECASE)))
        if len(cues) > len(best_cues):
            best, best_cues = code, cues
    return best, best_cues


def domain_frame(text: str, language: str) -> dict[str, Any]:
    """The domain expert's frame for ``text`` (seed 002 §6.1 领域识别与角色生成):
    ``{"field", "packs", "field_label", "jurisdiction", "jurisdiction_label", "cues", "norms"}``,
    labels and norms in ``language``; ``jurisdiction`` is "" (label says unknown) when the
    text implies none. ``field`` is the domain pack (teamclaw/workflows/pack_files) that fits
    the text best, and ``packs`` every pack that applies; a text no pack applies to falls back
    to the keyword table ``DOMAINS``."""
    code, cues = identify_jurisdiction(text)
    packs = packs_of(parse_document(text))
    if packs:  # a domain pack applies: its label and its norms for the jurisdiction
        field, label = packs[0].domain, packs[0].label[language]
        norms = [*packs[0].norms.get(code or "unknown", packs[0].norms["unknown"])[language]]
        norms += GENERIC_NORMS.get(code, GENERIC_NORMS[""])[language] if code else []
    else:
        field, _ = identify_domain(text)
        label = FIELD_LABELS.get(field, field) if language == "zh" else field
        norms = NORMS.get((field, code), GENERIC_NORMS.get(code, GENERIC_NORMS[""]))[language]
        if code and (field, code) in NORMS:
            norms = [*norms, *GENERIC_NORMS[code][language]]
    unknown = {"zh": "未明确（文中没有指明适用的法域）", "en": "unknown (the text names no jurisdiction)"}
    return {
        "field": field,
        "packs": [pack.domain for pack in packs],
        "field_label": label,
        "jurisdiction": code,
        "jurisdiction_label": JURISDICTIONS[code]["label"][language] if code else unknown[language],
        "cues": cues,
        "norms": norms,
    }

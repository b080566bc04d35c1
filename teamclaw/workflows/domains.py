"""The domain a requirement belongs to (seed 002 §6.1 领域识别): its field and the norms
the domain expert reviews it against."""

from __future__ import annotations

import re
from typing import Any

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
        "keywords": r"patient|doctor|clinic|medical|diagnos|prescription|患者|医生|医疗|病历",
        "norms": ["HIPAA / health-data protection", "clinical safety", "consent for data sharing"],
    },
    "education": {
        "keywords": r"student|course|teacher|lesson|grade|exam|学生|课程|教师|考试",
        "norms": ["children's data protection (COPPA/FERPA)", "accessibility (WCAG)"],
    },
    "human resources": {
        "keywords": r"employee|leave|payroll|recruit|hiring|salary|员工|请假|薪资|招聘",
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

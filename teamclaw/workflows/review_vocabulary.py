r"""The words the offline reviewers look for (seed 002 §6.2), in English and Chinese.

Plain compiled patterns and word sets for the whole-document rows (``document_rules``) and
the acceptance criteria; the line rules are the engine's YAML rows (``rule_files``). Chinese text
has no word boundaries, so Chinese alternatives are matched without ``\b`` and acronyms are
delimited by "not a Latin letter or digit" instead of ``\b``.
"""

from __future__ import annotations

import re


def _words(*items: str) -> re.Pattern[str]:
    english = [i for i in items if i.isascii()]
    other = [i for i in items if not i.isascii()]
    parts = []
    if english:
        # Not \b: a Latin word between Chinese characters has no word boundary.
        parts.append(r"(?<![A-Za-z0-9])(?:" + "|".join(re.escape(i) for i in english) + r")(?![A-Za-z0-9])")
    if other:
        parts.append("(?:" + "|".join(re.escape(i) for i in other) + ")")
    return re.compile("|".join(parts), re.IGNORECASE)


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
    "良好",
    "美观",
    "人性化",
    "便捷",
    "方便",
    "简单",
    "works well",
)
MEASURE = re.compile(
    r"\d+(?:\.\d+)?\s*(?:ms|s|sec|seconds?|minutes?|min|hours?|%|percent|rps|qps|req/s|"
    r"requests|users|MB|GB|KB|毫秒|秒|分钟|小时|个|次)\b|p\d{2}|percentile|\d+\s*(?:毫秒|秒|分钟|小时|%)",
    re.IGNORECASE,
)
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
    "报错",
    "出错",
    "故障",
    "超时",
    "回滚",
)
ACCEPTANCE_HEADINGS = ("acceptance", "验收", "done when", "definition of done", "success criteria")
GOAL_HEADINGS = (
    "goal",
    "objective",
    "background",
    "purpose",
    "why",
    "idea",
    "overview",
    "what it is",
    "summary",
    "目标",
    "背景",
    "目的",
    "概述",
    "简介",
)
"""Headings that state what the work is for: the interview draft's "Idea" / "需求概述" (the
user's own idea) and the unknown type's "What it is" / "项目概述" count, as do Goal, Background."""
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
AI_FALLBACK = _words(
    "fallback", "fall back", "manual", "human", "override", "review by", "confidence", "人工", "兜底", "降级", "置信度"
)
AI_DATA = _words(
    "data", "dataset", "training", "trained", "labelled", "labeled", "history", "historical", "数据", "训练", "样本"
)
PAYMENT = re.compile(
    "|".join(
        [
            _words(
                "pay",
                "pays",
                "paying",
                "pay online",
                "credit card",
                "credit cards",
                "debit card",
                "debit cards",
                "bank card",
                "card number",
                "card details",
                "card payment",
                "card payments",
                "checkout",
                "check out",
                "PayPal",
                "Stripe",
                "Apple Pay",
                "Google Pay",
                "信用卡",
                "银行卡",
                "借记卡",
                "付款",
                "收款",
                "扣款",
                "充值",
                "支付宝",
            ).pattern,
            r"(?<![A-Za-z])(?:accept|accepts|accepting|take|takes|taking|process|processes|processing|collect"
            r"|collects|collecting|online|in-app)\s+(?:\w+\s+)?payments?(?![A-Za-z])",
            r"支付(?!状态|记录|数据|报表|明细|流水|情况|结果)",
        ]
    ),
    re.IGNORECASE,
)
"""The product takes or stores a payment (a card, a wallet, paying for something): a text that
mentions payments in passing ("reconcile payments", "payment status", "核对支付记录") does not."""
PAYMENT_COMPLIANCE = _words("PCI", "PCI-DSS", "audit", "audit log", "reconciliation", "ledger", "审计", "对账")
CONTRACT = _words("must", "shall", "required", "requires", "need to", "needs to", "will", "必须", "需要", "应")

ROLE_HEADINGS = ("user", "role", "persona", "actor", "用户", "角色", "人员")
PERMISSION_HEADINGS = ("permission", "access", "authori", "权限")
PERMISSION = _words(
    "can",
    "cannot",
    "can't",
    "may",
    "may not",
    "must not",
    "only",
    "permission",
    "permissions",
    "access",
    "allowed",
    "read-only",
    "可以",
    "可",
    "能",
    "仅",
    "只能",
    "不能",
    "不得",
    "无权",
    "禁止",
    "权限",
)
CONDITION = _words("when", "given", "if", "after", "once", "当", "给定", "如果", "若", "时，", "后，")
RESULT = _words(
    "then",
    "expected",
    "is shown",
    "are shown",
    "returns",
    "sees",
    "see",
    "receives",
    "is rejected",
    "appears",
    # what a tester observes after the condition: a file, a row, a message
    "is downloaded",
    "are downloaded",
    "downloads",
    "is displayed",
    "are displayed",
    "displays",
    "shows",
    "is saved",
    "is stored",
    "is created",
    "is sent",
    "is exported",
    "contains",
    "lists",
    "预期",
    "则",
    "显示",
    "返回",
    "收到",
    "被拒绝",
    "出现",
    "下载",
    "提示",
    "生成",
    "包含",
    "看到",
)
UNTESTABLE = _words(
    "works well", "happy", "satisfied", "good", "nice", "满意", "良好", "顺利", "正常运行", "运行稳定", "用户满意"
)

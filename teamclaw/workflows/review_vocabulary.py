r"""The words the offline reviewers look for (seed 002 §6.2), in English and Chinese.

Plain compiled patterns and word sets; ``review_rules`` decides what they mean. Chinese text
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
CJK_UNITS = (
    "毫秒", "秒", "分钟", "小时", "天", "周", "月", "年", "个", "次", "人", "名", "位", "条", "元", "%", "兆", "页",
    "份", "张", "件", "项", "笔", "字", "单", "MB", "GB", "KB",
)  # fmt: skip
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
INTEGRATION = re.compile(
    _words(
        "third-party",
        "third party",
        "external",
        "integrate",
        "integration",
        "integrates",
        "webhook",
        "payment gateway",
        "sync",
        "synced",
        "synchronize",
        "synchronized",
        "synchronise",
        "synchronised",
        "API of",
        "第三方",
        "对接",
        "同步",
        "集成",
    ).pattern
    # "import from Shopify", "export to SAP": another system; not "press Export to get a CSV".
    + r"|(?<![A-Za-z0-9])(?:import from|export to)\s+"
    r"(?!(?:get|see|download|make|create|have|do|let|allow|keep|a|an|the|their|his|her|its|my|your|our|it|them)"
    r"(?![A-Za-z]))[A-Za-z]",
    re.IGNORECASE,
)
OPEN_ENDED = _words("etc", "and so on", "and more", "等等", "等")
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
    "电话",
    "邮箱",
    "电子邮件",
    "身份证",
    "地址",
    "个人信息",
    "密码",
    "位置",
    "姓名",
    "生日",
    "出生日期",
    "病史",
    "病历",
    "诊断",
    "症状",
    "健康",
    "体检",
    "银行卡",
    "home address",
    "diagnosis",
    "medical certificate",
    "medical certificates",
)
HEALTH_DATA = _words(
    "health", "medical", "diagnosis", "patient record", "病史", "病历", "诊断", "症状", "健康", "体检", "既往病史"
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
    "脱敏",
    "个人信息保护",
)
CONSENT = _words(
    "consent",
    "consents",
    "opt-in",
    "opt in",
    "opted in",
    "opt out",
    "opt-out",
    "unsubscribe",
    "同意",
    "授权",
    "退订",
)
RETENTION = _words("retention", "retained", "deleted", "deletion", "保存期限", "保留期限", "存储期限", "删除", "销毁")
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
TIME_OF_DAY = re.compile(
    r"(?<![\d:])(?:[01]?\d|2[0-3]):[0-5]\d(?![\d])|\bmidnight\b|\bnoon\b|(?<!\d)(?:[01]?\d|2[0-3])\s*点(?:半|\d{1,2}分)?"
    r"|凌晨|午夜",
    re.IGNORECASE,
)
TIMEZONE = _words(
    "UTC", "GMT", "time zone", "timezone", "local time", "CET", "PST", "EST", "时区", "北京时间", "当地时间"
)  # fmt: skip
ACRONYM = re.compile(r"(?<![A-Za-z0-9])[A-Z][A-Z0-9]{1,5}s?(?![A-Za-z0-9])")
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

NOTIFICATION = re.compile(
    _words(
        "notification", "notifications", "notify", "notified", "reminder", "reminders", "通知", "提醒", "短信", "推送"
    ).pattern
    # An e-mail address, a phone number for SMS or a push token in a list of fields is data,
    # not a message sent: only sending them counts ("sends an email", "by SMS", "emailed").
    + r"|(?<![A-Za-z0-9])(?:(?:send|sends|sent|sending|receive|receives|received|gets?)\s+(?:an?\s+|the\s+)?"
    r"(?:e-?mails?|SMS|texts?|push(?:\s+messages?)?)|(?:by|via)\s+(?:e-?mail|SMS|text|push)|e-?mailed|texted"
    r"|push\s+(?:messages?|alerts?))(?![A-Za-z0-9])",
    re.IGNORECASE,
)
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
METRIC = re.compile(
    r"\b(?:[a-z]+[ -])?(?:rate|ratio|score|index|KPI|NPS|DAU|MAU)\b|[\u4e00-\u9fff]{1,4}(?:率|指数|得分|评分)",
    re.IGNORECASE,
)
NOT_METRIC = ("频率", "效率", "概率", "利率", "汇率", "税率", "比率")
DEFINITION = re.compile(r"defined as|is the (?:number|share|ratio|percentage)|means|=|÷|定义为|指|计算方式|计算公式|＝")
QUOTED_TERM = re.compile(r"[“「]([^”」]{2,20})[”」]")
TIME_WINDOW = re.compile(
    r"(?:between|from)\s+\d{1,2}(?::\d\d)?\s*(?:am|pm)?\s+(?:and|to|until)\s+\d{1,2}(?::\d\d)?"
    r"|\d{1,2}:\d\d\s*[-–~]\s*\d{1,2}:\d\d"
    r"|\b(?:until|before|after|by)\s+\d{1,2}:\d\d"
    r"|\d+\s*(?:hours?|days?|minutes?|weeks?)\s+(?:before|after|prior to)"
    r"|\bwithin\s+\d+\s*(?:hours?|days?|weeks?)\s+(?:of|before|after)"
    r"|\d{1,2}(?::\d\d|\s*点)\s*(?:至|到|-|–|~|—)\s*\d{1,2}(?::\d\d|\s*点)"
    r"|(?:前|后)\s*\d+\s*(?:小时|天|分钟)"
    r"|\d+\s*(?:小时|天|分钟)\s*(?:之前|之后|前|后)"
    r"|\d+\s*(?:小时|天)\s*(?:之内|以内|内)",
    re.IGNORECASE,
)
BOUNDARY = _words(
    "inclusive",
    "exclusive",
    "included",
    "excluded",
    "at the latest",
    "no later than",
    "up to and including",
    "boundary",
    "含",
    "不含",
    "包含",
    "最迟",
    "截止",
    "为准",
    "边界",
)
CAPACITY_LIMIT = re.compile(
    r"(?P<limit>(?:at most|up to|no more than|maximum(?: of)?|max\.?|limit of|limited to|最多|不超过|至多|上限为?)"
    r"\s*(?:[\u4e00-\u9fff]{0,4}\s*)?\d+(?:[.,]\d+)?\s*"
    r"(?:[a-z]+s\b|MB|GB|KB|TB|files?|items?|个|人|名|位|条|份|张|件|项|笔|单|字|MB|GB))",
    re.IGNORECASE,
)
TIME_UNIT_WORDS = re.compile(r"\b(?:seconds|minutes|hours|days|weeks|months|years|ms)\b", re.IGNORECASE)
LIMIT_BEHAVIOUR = _words(
    "when the limit",
    "limit is reached",
    "is reached",
    "is exceeded",
    "rejected",
    "refused",
    "queued",
    "waiting list",
    "达到上限",
    "超过上限",
    "超出",
    "拒绝",
    "排队",
    "已约满",
    "候补",
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

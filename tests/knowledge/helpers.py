"""The fixture knowledge base (tests/data/knowledge): documents in English and Chinese, each
planted passage answering one query of queries.json, and filler chunks on the same topics
that answer none of them."""

from __future__ import annotations

import json
import random
from pathlib import Path

from capabilities.models import AgentRole, Project
from knowledge.models import KnowledgeSource
from knowledge.sources import Upload, add_source

DATA = Path(__file__).resolve().parent.parent / "data" / "knowledge"
ENGLISH = ("operations.md", "product.md", "security.html")
CHINESE = ("运维手册.md", "产品说明.md", "安全制度.html")

EN_WORDS = (
    "database deploy pipeline incident customer latency backup replica access ticket release "
    "service metrics dashboard staging production review engineer alert rotation policy secret "
    "support plan seat mobile document export invoice vulnerability dependency password"
).split()
ZH_WORDS = (
    "数据库 发布 流水线 故障 客户 延迟 备份 副本 权限 工单 版本 服务 指标 看板 预发布 生产环境 评审 "
    "工程师 告警 轮岗 制度 密钥 客服 席位 移动端 文档 导出 发票 漏洞 依赖 密码 值班 通报 存储"
).split()


def queries() -> dict[str, list[dict[str, str]]]:
    return json.loads((DATA / "queries.json").read_text(encoding="utf-8"))


def upload(name: str) -> Upload:
    media = "text/html" if name.endswith(".html") else "text/markdown"
    return Upload(name, media, (DATA / name).read_bytes())


def filler(language: str, paragraphs: int, seed: int = 15) -> bytes:
    """A Markdown document of ``paragraphs`` sections of sentences made of the topic words
    (no planted fact), so the planted passages compete with many near misses."""
    rng = random.Random(seed)
    words = EN_WORDS if language == "en" else ZH_WORDS
    out = []
    for n in range(paragraphs):
        out.append(f"# {'Section' if language == 'en' else '章节'} {n}\n")
        sentences = []
        for _ in range(rng.randint(4, 8)):
            picked = rng.sample(words, rng.randint(5, 9))
            sentences.append((" ".join(picked) + ".") if language == "en" else ("".join(picked) + "。"))
        out.append(" ".join(sentences) + "\n")
    return "\n".join(out).encode()


def load_base(role: AgentRole | None = None, project: Project | None = None, filler_sections: int = 150) -> None:
    """Every fixture document of both languages, and filler, as sources of ``role`` (or ``project``)."""
    target = {"role": role.role if role else None, "project": project.slug if project else None}
    for name in (*ENGLISH, *CHINESE):
        add_source(upload(name), load_level="full", **target)
    for language in ("en", "zh"):
        add_source(
            Upload(f"filler-{language}.md", "text/markdown", filler(language, filler_sections)),
            load_level="full",
            **target,
        )


def librarian() -> AgentRole:
    return AgentRole.objects.create(role="librarian", display_name="Librarian")


def sources() -> list[KnowledgeSource]:
    return list(KnowledgeSource.objects.all())

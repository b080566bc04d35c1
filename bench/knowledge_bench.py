"""Knowledge benchmark (seed 003 KnowledgeContext): indexing throughput and search latency on
SQLite FTS5 (trigram, bm25) over 10,000 chunks, half English, half Chinese.

Runs against a throw-away SQLite database in a temporary data folder and prints figures:
    .venv/bin/python bench/knowledge_bench.py [--chunks 10000] [--queries 400]
Indexing is ``knowledge.sources.add_source`` end to end (chunking, the rows, the FTS5
triggers, the commit); search is ``knowledge.search.search`` (k=3, one role's sources).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EN = (
    "database deploy pipeline incident customer latency backup replica access ticket release service "
    "metrics dashboard staging production review engineer alert rotation policy secret support plan "
    "seat mobile document export invoice vulnerability dependency password cache queue worker"
).split()
ZH = (
    "数据库 发布 流水线 故障 客户 延迟 备份 副本 权限 工单 版本 服务 指标 看板 预发布 生产环境 评审 工程师 "
    "告警 轮岗 制度 密钥 客服 席位 移动端 文档 导出 发票 漏洞 依赖 密码 值班 通报 存储 缓存 队列"
).split()


def document(rng: random.Random, language: str, sections: int) -> bytes:
    """``sections`` headed sections of ~700 characters: one chunk each."""
    words, out = (EN, []) if language == "en" else (ZH, [])
    for n in range(sections):
        body = ""
        while len(body) < 650:
            picked = rng.sample(words, 7)
            body += (" ".join(picked) + ". ") if language == "en" else ("".join(picked) + "。")
        out.append(f"# {n}\n\n{body.strip()}\n")
    return "\n".join(out).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args()
    os.environ.pop("DATABASE_URL", None)  # SQLite only: the FTS5 path
    os.environ["TEAMCLAW_DATA_DIR"] = tempfile.mkdtemp(prefix="teamclaw-bench-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "teamclaw.settings")
    os.environ["TEAMCLAW_RUNTIME_AUTOSTART"] = "0"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from capabilities.models import AgentRole
    from knowledge.models import KnowledgeChunk
    from knowledge.search import search
    from knowledge.sources import Upload, add_source

    AgentRole.objects.create(role="librarian", display_name="Librarian")
    AgentRole.objects.create(role="other", display_name="Other")
    rng = random.Random(15)
    per_source = 500
    sources = max(1, args.chunks // per_source)
    documents = [(f"doc-{n}.md", document(rng, "en" if n % 2 == 0 else "zh", per_source)) for n in range(sources)]
    started = time.perf_counter()
    for n, (name, data) in enumerate(documents):
        add_source(
            Upload(name, "text/markdown", data),
            role="librarian" if n % 4 else "other",
            project=None,
            load_level="full",
        )
    elapsed = time.perf_counter() - started
    total = KnowledgeChunk.objects.count()
    print(f"knowledge_chunks {total}")
    print(f"knowledge_index_chunks_per_s {total / elapsed:,.0f}")
    print(f"knowledge_index_mb_per_s {sum(len(d) for _, d in documents) / elapsed / 1e6:.2f}")

    queries = []
    for n in range(args.queries):
        words = EN if n % 2 == 0 else ZH
        picked = rng.sample(words, rng.randint(1, 4))
        queries.append(" ".join(picked) if n % 2 == 0 else "".join(picked) + "是什么？")
    for language, subset in (("all", queries), ("en", queries[0::2]), ("zh", queries[1::2])):
        samples = []
        for query in subset:
            t0 = time.perf_counter()
            search(query, roles=["librarian"], projects=[], k=3)
            samples.append((time.perf_counter() - t0) * 1000)
        samples.sort()
        p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
        print(f"knowledge_search_p50_ms_{language} {statistics.median(samples):.2f}")
        print(f"knowledge_search_p99_ms_{language} {p99:.2f}")


if __name__ == "__main__":
    main()

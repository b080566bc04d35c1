"""Knowledge benchmark (seed 003 KnowledgeContext): indexing throughput and search latency
over N chunks (10,000 by default), half English, half Chinese: on SQLite FTS5 (trigram, bm25)
or, with ``--database-url``, on PostgreSQL (tsvector + pg_trgm, bm25; migration 0004).

SQLite runs against a throw-away database in a temporary data folder; PostgreSQL against the
database named (migrated first; the bench's sources are deleted again at the end, so use a
database of your own). Prints figures:
    .venv/bin/python bench/knowledge_bench.py [--chunks 100000] [--queries 400]
    .venv/bin/python bench/knowledge_bench.py --chunks 100000 --database-url postgres://127.0.0.1:5432/kn
    .venv/bin/python bench/knowledge_bench.py --embeddings auto   # hybrid ranking (the embeddings extra)
Indexing is ``knowledge.sources.add_source`` end to end (chunking, the rows, the index
triggers or expression indexes, the commit); search is ``knowledge.search.search`` (k=3,
one role's sources: three quarters of the chunks). The vocabulary is deliberately tiny
(every term is in about a fifth of the chunks), so every query has thousands of candidates.
With ``--embeddings auto`` (the ``embeddings`` extra installed) indexing includes each chunk's
vector and search is the hybrid ranking (the query's vector, an exact cosine scan of the
scope's vectors, reciprocal rank fusion with the full-text ranking); it also prints the
query embedding's own latency and the process's peak memory.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
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
    parser.add_argument("--database-url", default="", help="a PostgreSQL database of your own (default: SQLite)")
    parser.add_argument(
        "--data-dir", default="", help="SQLite: the data folder of an earlier run to search again (no indexing)"
    )
    parser.add_argument(
        "--embeddings", choices=["off", "auto"], default="off", help="TEAMCLAW_KNOWLEDGE_EMBEDDINGS (default off)"
    )
    args = parser.parse_args()
    os.environ["TEAMCLAW_KNOWLEDGE_EMBEDDINGS"] = args.embeddings
    os.environ.pop("DATABASE_URL", None)
    if args.database_url:
        os.environ["DATABASE_URL"] = args.database_url
    os.environ["TEAMCLAW_DATA_DIR"] = args.data_dir or tempfile.mkdtemp(prefix="teamclaw-bench-")
    print(f"knowledge_data_dir {os.environ['TEAMCLAW_DATA_DIR']}")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "teamclaw.settings")
    os.environ["TEAMCLAW_RUNTIME_AUTOSTART"] = "0"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.db import connection

    from capabilities.models import AgentRole
    from knowledge import embeddings
    from knowledge.models import KnowledgeChunk
    from knowledge.search import ranked_search
    from knowledge.sources import Upload, add_source

    print(f"knowledge_database {connection.vendor}")
    print(f"knowledge_embeddings {'on' if embeddings.active() else 'off'}")
    rng = random.Random(15)
    per_source = 500
    sources = max(1, args.chunks // per_source)
    documents = [(f"doc-{n}.md", document(rng, "en" if n % 2 == 0 else "zh", per_source)) for n in range(sources)]
    if not (args.data_dir and KnowledgeChunk.objects.exists()):
        AgentRole.objects.filter(role__in=["librarian", "other"]).delete()  # a PostgreSQL run before
        AgentRole.objects.create(role="librarian", display_name="Librarian")
        AgentRole.objects.create(role="other", display_name="Other")
        started = time.perf_counter()
        for n, (name, data) in enumerate(documents):
            add_source(
                Upload(name, "text/markdown", data),
                role="librarian" if n % 4 else "other",
                project=None,
                load_level="full",
            )
        elapsed = time.perf_counter() - started
        print(f"knowledge_index_chunks_per_s {KnowledgeChunk.objects.count() / elapsed:,.0f}")
        print(f"knowledge_index_mb_per_s {sum(len(d) for _, d in documents) / elapsed / 1e6:.2f}")
    print(f"knowledge_chunks {KnowledgeChunk.objects.count()}")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE knowledge_knowledgechunk")

    queries = []
    for n in range(args.queries):
        words = EN if n % 2 == 0 else ZH
        picked = rng.sample(words, rng.randint(1, 4))
        queries.append(" ".join(picked) if n % 2 == 0 else "".join(picked) + "是什么？")
    rankings = set()
    for language, subset in (("all", queries), ("en", queries[0::2]), ("zh", queries[1::2])):
        samples, cpu = [], []
        for query in subset:
            t0, c0 = time.perf_counter(), time.process_time()
            rankings.add(ranked_search(query, roles=["librarian"], projects=[], k=3).ranking)
            samples.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        samples.sort()
        p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
        print(f"knowledge_search_p50_ms_{language} {statistics.median(samples):.2f}")
        print(f"knowledge_search_p99_ms_{language} {p99:.2f}")
        if connection.vendor == "sqlite":  # in-process: this CPU time is the search's own
            print(f"knowledge_search_cpu_p50_ms_{language} {statistics.median(cpu):.2f}")
    print(f"knowledge_ranking {','.join(sorted(rankings))}")
    if embeddings.active():
        samples = []
        for query in queries[:100]:
            t0 = time.perf_counter()
            embeddings.embed_query(query)
            samples.append((time.perf_counter() - t0) * 1000)
        print(f"knowledge_embed_query_p50_ms {statistics.median(samples):.2f}")
    print(f"knowledge_peak_rss_mb {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
    if connection.vendor == "postgresql":
        AgentRole.objects.filter(role__in=["librarian", "other"]).delete()  # the sources go with them


if __name__ == "__main__":
    main()

"""Project folder benchmark (issue 15): what keeping a folder indexed costs, on SQLite in a
throw-away data folder. A folder of N Markdown files (500 by default, the folder limit) of
~2 KB is indexed whole once; then ``folder_changes`` is timed on the untouched folder (a
stat per file), after touching every file (every file read and hashed: the worst case, e.g.
after a checkout that rewrote times), and the incremental refresh is timed against indexing
the whole folder again after editing 1% of the files. The data folder is removed at the end.
Prints figures:
    .venv/bin/python bench/folder_changes_bench.py [--files 500] [--repeat 5] [--big-folder /usr]
(``--big-folder`` also times one look at a large folder: the walk stops at ``MAX_FOLDER_ENTRIES``.)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORDS = "deploy backup replica incident release review alert rotation policy secret export invoice".split()


def write_file(path: Path, n: int, edition: int = 0) -> None:
    body = " ".join(WORDS[(n + k) % len(WORDS)] for k in range(300))
    path.write_text(f"# Document {n}\n\nEdition {edition}. {body}\n")


def timed(repeat: int, run) -> float:
    """Median wall time of ``run()`` over ``repeat`` runs (ms)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--big-folder", type=Path, help="also time one look at this folder as a project's (e.g. /usr: the walk's bound)"
    )
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="teamclaw-bench-"))
    os.environ.pop("DATABASE_URL", None)
    os.environ["TEAMCLAW_DATA_DIR"] = str(data)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "teamclaw.settings")
    os.environ["TEAMCLAW_RUNTIME_AUTOSTART"] = "0"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from capabilities.models import Project
    from knowledge.folder_changes import folder_changes, refresh_project_folder
    from knowledge.sources import index_project_folder

    folder = data / "folder"
    folder.mkdir()
    for n in range(args.files):
        write_file(folder / f"doc{n:04d}.md", n)
    project = Project.objects.create(slug="bench", name="Bench", working_directory=str(folder))
    start = time.perf_counter()
    index_project_folder("bench", "full")
    print(f"files {args.files}")
    print(f"index_whole_folder_ms {(time.perf_counter() - start) * 1000:.0f}")
    print(f"changes_untouched_ms {timed(args.repeat, lambda: folder_changes(project)):.1f}")
    for n, path in enumerate(sorted(folder.iterdir())):
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000_000 + n))
    print(f"changes_all_touched_ms {timed(args.repeat, lambda: folder_changes(project)):.1f}")
    refresh_project_folder("bench")  # records the new times
    edited = max(1, args.files // 100)
    refresh_times, whole_times = [], []
    for edition in range(1, args.repeat + 1):
        for n in range(edited):
            write_file(folder / f"doc{n:04d}.md", n, edition)
        start = time.perf_counter()
        done = refresh_project_folder("bench")
        refresh_times.append((time.perf_counter() - start) * 1000)
        assert len(done.updated) == edited, done
        start = time.perf_counter()
        index_project_folder("bench", "full")
        whole_times.append((time.perf_counter() - start) * 1000)
    print(f"edited_files {edited}")
    print(f"refresh_changed_ms {statistics.median(refresh_times):.0f}")
    print(f"reindex_whole_folder_ms {statistics.median(whole_times):.0f}")
    if args.big_folder:
        big = Project.objects.create(slug="big", name="Big", working_directory=str(args.big_folder))
        start = time.perf_counter()
        looked = folder_changes(big)
        print(f"big_folder_changes_ms {(time.perf_counter() - start) * 1000:.0f}")
        print(f"big_folder_truncated {looked.truncated} not_looked_at {looked.not_looked_at} new {len(looked.new)}")
    shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()

from pathlib import Path

from benchmarks.recalld_bench import pyspy

RAW = """\
thread (11): MainThread;<module> (cli.py:1);run (runners.py:118);Handle._run (events.py:84) 60
thread (11): MainThread;<module> (cli.py:1);run (runners.py:118);_post (openai_http.py:600) 20
thread (12): ThreadPoolExecutor-0_0;Thread.run (threading.py:982);insert (milvus_store.py:270) 15
thread (13): ThreadPoolExecutor-0_1;Thread.run (threading.py:982);insert (milvus_store.py:271) 5
"""


def test_summarize_counts_threads_and_functions(tmp_path: Path) -> None:
    path = tmp_path / "profile.txt"
    path.write_text(RAW)
    summary = pyspy.summarize(path, seconds=1.0, rate=100)
    assert summary["samples"] == 100
    assert summary["threads"]["MainThread"] == {"samples": 80, "busy": 0.8}
    assert summary["threads"]["ThreadPoolExecutor-0"]["samples"] == 20
    top = {row["function"]: row["share"] for row in summary["top_self"]}
    assert top["Handle._run (events.py)"] == 0.6
    assert top["insert (milvus_store.py)"] == 0.2  # line numbers merged
    inclusive = {row["function"]: row["samples"] for row in summary["top_inclusive"]}
    assert inclusive["run (runners.py)"] == 80
    only = pyspy.summarize(path, thread="MainThread")
    assert only["samples"] == 80


def test_share_under_a_frame(tmp_path: Path) -> None:
    path = tmp_path / "profile.txt"
    path.write_text(RAW)
    shares = pyspy.share_under(path, ["openai_http", "Thread.run"], thread=None)
    assert shares == {"openai_http": 0.2, "Thread.run": 0.2}

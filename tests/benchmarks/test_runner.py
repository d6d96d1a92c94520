"""The experiment runner the queue-based benchmarks share: the queue's claims, its store, and the worker."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def runner():
    return importlib.import_module("benchmarks.runner")


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_job_is_claimed_once_and_a_dead_workers_claim_is_taken_over(runner, tmp_path):
    queue = runner.JobQueue(tmp_path)
    assert queue.claim("a") and not queue.claim("a")  # this process holds it now
    (queue.claims / "b").write_text(str(_dead_pid()))
    assert queue.claim("b") and (queue.claims / "b").read_text() == str(os.getpid())
    queue.store("a", {"x": 1})
    assert queue.load("a") == {"job": "a", "x": 1} and queue.done() == {"a": {"job": "a", "x": 1}}
    assert not list(queue.done_dir.glob("*.partial"))


def test_the_queue_runs_what_is_left_and_releases_a_failed_claim(runner, tmp_path):
    queue = runner.JobQueue(tmp_path)
    queue.store("done", {})
    ran = []

    def run_job(job):
        ran.append(job)
        if job == "bad":
            raise RuntimeError("boom")
        queue.store(job, {})

    assert queue.run(["done", "bad", "good"], run_job, keep_going=True) == ["bad"]
    assert ran == ["bad", "good"] and not (queue.claims / "bad").exists()  # a later worker retries it
    with pytest.raises(RuntimeError):
        queue.run(["bad"], run_job)
    queue.wait_for("later", run_job)  # unclaimed: run here instead of waiting
    assert queue.is_done("later")
    (queue.claims / "orphan").write_text(str(_dead_pid()))  # a killed worker's claim on a prerequisite
    queue.wait_for("orphan", run_job, poll=0.01)  # taken over and run here, not waited for forever
    assert queue.is_done("orphan") and ran[-1] == "orphan"


def test_a_worker_stores_what_every_job_records_in_the_store_its_report_reads(runner, tmp_path):
    class Bench(runner.Worker):
        def jobs(self):
            return ["first", "second"]

        def run_job(self, job):
            if job == "second":
                self.wait_for("prerequisite")
            self.store(job, {"value": len(job)})

        def record(self, job):
            return {"commit": "abc"}

    store = tmp_path / "results" / "jobs"
    bench = Bench(tmp_path / "work", store)
    assert bench.run() == []
    # the store is the folder given, not the work folder: a report reading it needs no copy
    assert sorted(p.name for p in store.iterdir()) == ["first.json", "prerequisite.json", "second.json"]
    assert not (tmp_path / "work" / "done").exists()
    assert json.loads((store / "first.json").read_text()) == {"job": "first", "commit": "abc", "value": 5}
    assert runner.read_store(store)["second"] == {"job": "second", "commit": "abc", "value": 6}


def test_a_worker_that_does_not_run_prerequisites_waits_for_them(runner, tmp_path, monkeypatch):
    class Bench(runner.Worker):
        run_prerequisites = False

        def run_job(self, job):
            raise AssertionError(f"{job} must not run here")

    bench = Bench(tmp_path)
    waited = []
    monkeypatch.setattr(runner.time, "sleep", lambda seconds: (waited.append(seconds), bench.queue.store("p", {})))
    bench.wait_for("p")
    assert waited == [bench.poll] and bench.queue.is_done("p")

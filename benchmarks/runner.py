"""The experiment runner of the queue-based benchmarks (``adaptation``, ``long_budget``, ``aux_mechanism``,
``distillation``): jobs, the queue worker processes share, the worker that runs them, and the store of finished jobs.

- a job is a name (a file name: no ``/``); a benchmark's :class:`Worker` lists them in order (:meth:`Worker.jobs`) and
  runs one (:meth:`Worker.run_job`);
- :class:`JobQueue`: jobs shared by several worker processes through one folder: a job is claimed by creating
  ``claims/<job>`` (holding the worker's pid; a claim whose process has died is taken over) and is done when its
  file exists in the store, so a repeated command skips it and an interrupted run resumes;
- the store: one JSON file per finished job (``<work_dir>/done`` unless a benchmark names the folder its report
  reads, so that the run itself writes the files the report needs);
- :func:`train`: one training run of a job, through the package's ``build_trainer``, with its evaluation curve.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {os.getpid()} {message}", flush=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class JobQueue:
    """Jobs shared by worker processes through ``work_dir``: ``claims/<job>`` while one runs, ``<done_dir>/<job>.json``
    once finished (``done_dir``: ``work_dir/done`` unless given)."""

    def __init__(self, work_dir: Path, done_dir: Path | None = None) -> None:
        self.work_dir = Path(work_dir)
        self.done_dir = Path(done_dir) if done_dir is not None else self.work_dir / "done"
        self.claims = self.work_dir / "claims"
        for folder in (self.done_dir, self.claims):
            folder.mkdir(parents=True, exist_ok=True)

    def result_path(self, job: str) -> Path:
        return self.done_dir / f"{job}.json"

    def is_done(self, job: str) -> bool:
        return self.result_path(job).exists()

    def load(self, job: str) -> dict[str, Any] | None:
        path = self.result_path(job)
        return json.loads(path.read_text()) if path.exists() else None

    def claim(self, job: str) -> bool:
        """Claim ``job`` for this process; a claim left by a process that no longer runs is taken over."""
        path = self.claims / job
        for _ in range(2):
            try:
                handle = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                owner = path.read_text().strip()
                if owner.isdigit() and not _alive(int(owner)):
                    path.unlink(missing_ok=True)
                    continue
                return False
            os.write(handle, str(os.getpid()).encode())
            os.close(handle)
            return True
        return False

    def release(self, job: str) -> None:
        (self.claims / job).unlink(missing_ok=True)

    def store(self, job: str, payload: dict[str, Any]) -> None:
        """Write the finished job; written to a temporary name first so a reader never sees half a file."""
        path = self.result_path(job)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(json.dumps({"job": job} | payload, indent=1))
        os.replace(partial, path)

    def done(self) -> dict[str, dict[str, Any]]:
        return read_store(self.done_dir)

    def execute(self, job: str, run_job: Callable[[str], None]) -> None:
        """Run a claimed job; on failure its claim is released so a later worker retries it."""
        log(f"start {job}")
        start = time.perf_counter()
        try:
            run_job(job)
        except BaseException:
            self.release(job)
            raise
        log(f"done {job} in {time.perf_counter() - start:.0f}s")

    def wait_for(self, job: str, run_job: Callable[[str], None] | None = None, poll: float = 30) -> None:
        """Block until ``job`` is done; with ``run_job``, a job nobody has claimed is run here instead."""
        while not self.is_done(job):
            # claim() also takes over a claim whose process is gone: a killed worker must not stall the queue.
            if run_job is not None and self.claim(job):
                self.execute(job, run_job)
                continue
            log(f"waiting for {job} ...")
            time.sleep(poll)

    def run(self, jobs: Iterable[str], run_job: Callable[[str], None], keep_going: bool = False) -> list[str]:
        """Run every job not done and not claimed, in order; returns the jobs that failed (with ``keep_going``)."""
        failed = []
        for job in jobs:
            if self.is_done(job) or not self.claim(job):
                continue
            try:
                self.execute(job, run_job)
            except Exception:
                if not keep_going:
                    raise
                traceback.print_exc()  # one failed job must not stop the queue
                log(f"FAILED {job}")
                failed.append(job)
        return failed


def read_store(folder: Path) -> dict[str, dict[str, Any]]:
    """Every finished job of a store folder, by name, in name order."""
    return {path.stem: json.loads(path.read_text()) for path in sorted(Path(folder).glob("*.json"))}


class Worker:
    """One worker process of a benchmark: runs the jobs of :meth:`jobs` not done and not claimed by another worker.

    A benchmark subclasses it with :meth:`jobs` (the queue, in order), :meth:`run_job` (one job, which calls
    :meth:`store` with what it measured) and, optionally, :meth:`record` (what every stored job also names: the
    machine, the commit, the budget).
    """

    #: a failed job is logged and the queue goes on (a later worker retries it)
    keep_going = True
    #: a prerequisite no worker has claimed is run by the worker waiting for it rather than waited for
    run_prerequisites = True
    poll = 30.0

    def __init__(self, work_dir: Path, done_dir: Path | None = None) -> None:
        self.queue = JobQueue(work_dir, done_dir)

    def jobs(self) -> list[str]:
        raise NotImplementedError

    def run_job(self, job: str) -> None:
        raise NotImplementedError

    def record(self, job: str) -> dict[str, Any]:
        return {}

    def run(self) -> list[str]:
        """Run the queue; the jobs that failed."""
        return self.queue.run(self.jobs(), self.run_job, keep_going=self.keep_going)

    def wait_for(self, job: str) -> None:
        self.queue.wait_for(job, self.run_job if self.run_prerequisites else None, poll=self.poll)

    def store(self, job: str, payload: dict[str, Any]) -> None:
        self.queue.store(job, self.record(job) | payload)


class CurveCallback(TrainerCallback):
    """Keeps every evaluation's metrics with its step (the trainer's log history mixes them with losses)."""

    def __init__(self, curve: list[dict[str, Any]], offset: int = 0) -> None:
        self.curve = curve
        self.offset = offset

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):  # noqa: ANN001, ANN201
        point = {k: float(v) for k, v in (metrics or {}).items() if isinstance(v, int | float)}
        self.curve.append({"step": self.offset + state.global_step} | point)


def train(model: Any, loss: Any, dataset: Any, *, steps: int, batch_size: int, learning_rate: float, seed: int,
          evaluator: Any = None, eval_steps: int | None = None, curve: list[dict[str, Any]] | None = None,
          offset: int = 0, warmup: float = 0, scheduler: str = "linear", logging_steps: int = 5,
          mapping: dict[str, float] | None = None, sampler: Any = None, use_cpu: bool = True, bf16: bool = False,
          output_dir: str | Path | None = None, callbacks: Sequence[TrainerCallback] = (),
          quiet: bool = True) -> tuple[float, list[dict[str, Any]]]:
    """Train ``model`` with ``loss`` for ``steps`` steps as a job does: the package's ``build_trainer`` (its callback
    first, joint gradient clipping), the last batch dropped, nothing saved; with ``evaluator``, every ``eval_steps``
    steps its metrics are appended to ``curve`` at ``offset`` + step. Returns the training's wall seconds (the
    evaluations during training included) and the log entries that carry a loss (evaluation metrics left out)."""
    from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

    from st_infocse.training import build_trainer

    with tempfile.TemporaryDirectory() as scratch:
        args = SentenceTransformerTrainingArguments(
            output_dir=str(output_dir or scratch), max_steps=steps, per_device_train_batch_size=batch_size,
            learning_rate=learning_rate, lr_scheduler_type=scheduler, warmup_steps=warmup, seed=seed, data_seed=seed,
            logging_steps=logging_steps, eval_strategy="steps" if evaluator is not None else "no",
            eval_steps=eval_steps if evaluator is not None else None, save_strategy="no", report_to="none",
            dataloader_drop_last=True, disable_tqdm=quiet, use_cpu=use_cpu, bf16=bf16,
            learning_rate_mapping=mapping or {}, **({"batch_sampler": sampler} if sampler is not None else {}),
        )
        trainer = build_trainer(model, loss, dataset, args, evaluator=evaluator)
        if curve is not None:
            trainer.add_callback(CurveCallback(curve, offset))
        for callback in callbacks:
            trainer.add_callback(callback)
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
    history = [{k: v for k, v in entry.items() if not k.startswith("eval_")}
               for entry in trainer.state.log_history if "loss" in entry]
    return seconds, history

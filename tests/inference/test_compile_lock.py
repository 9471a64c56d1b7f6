"""``inference.sampling.compile_lock``: processes sharing one compile cache compile one at a
time (the numba kernels nutpie compiles are not locked by PyTensor; two design-sweep workers
compiling into one empty cache once failed with a numba typing error, docs/design.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

HOLD = textwrap.dedent(
    """
    import sys, time
    from delusion_bayes.inference.sampling import compile_lock
    with compile_lock():
        print("in", time.time(), flush=True)
        time.sleep(float(sys.argv[1]))
        print("out", time.time(), flush=True)
    """
)


def test_a_second_process_waits_until_the_first_has_compiled(tmp_path):
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={tmp_path / 'pytensor'}"}
    first = subprocess.Popen(
        [sys.executable, "-c", HOLD, "3"], stdout=subprocess.PIPE, text=True, env=env
    )
    line = first.stdout.readline().split()
    assert line[0] == "in", line  # the first holds the lock now
    second = subprocess.run(
        [sys.executable, "-c", HOLD, "0"], capture_output=True, text=True, env=env, timeout=120
    )
    out_first = first.stdout.readline().split()
    first.wait(timeout=60)
    assert second.returncode == 0, second.stderr[-2000:]
    in_second = second.stdout.split()
    assert out_first[0] == "out" and in_second[0] == "in"
    # the second entered only after the first left
    assert float(in_second[1]) >= float(out_first[1]), (out_first, in_second)
    assert (tmp_path / "pytensor" / "locks" / "compile.lock").is_file()


def test_a_compiled_graph_loads_without_waiting_and_a_new_one_waits(tmp_path, monkeypatch):
    """``sampling._compile_once``: while another process holds the lock (compiling another
    graph), a graph whose marker says it is in the cache loads at once; a graph without one
    waits for the lock, compiles, and leaves its marker (then the next load does not wait)."""
    import time

    from delusion_bayes.inference import sampling
    from delusion_bayes.inference.cache import compiled_marker

    compiledir = tmp_path / "pytensor"
    monkeypatch.setattr(sampling, "compile_dir", lambda: compiledir)
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={compiledir}"}
    done = compiled_marker(compiledir, "graph-a", {"graph": "nutpie", "share": False})
    done.parent.mkdir(parents=True)
    done.touch()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, "4"], stdout=subprocess.PIPE, text=True, env=env
    )
    assert holder.stdout.readline().split()[0] == "in"
    t0 = time.perf_counter()
    assert sampling._compile_once(lambda: "a", "graph-a", share_graph=False) == "a"
    assert time.perf_counter() - t0 < 1.0  # did not wait for the holder
    new = compiled_marker(compiledir, "graph-b", {"graph": "nutpie", "share": False})
    assert not new.exists()
    assert sampling._compile_once(lambda: "b", "graph-b", share_graph=False) == "b"
    released = float(holder.stdout.readline().split()[1])
    holder.wait(timeout=60)
    assert time.time() >= released and time.perf_counter() - t0 > 2.0  # it waited
    assert new.exists()


def test_a_waiting_process_runs_its_idle_tasks_first_and_only_then(tmp_path, monkeypatch, caplog):
    """``sampling.while_waiting``: a task registered for the block runs once, when the process
    finds the log-density lock held by another process (the models stage compiles the latent
    kernel while the compile prefetch compiles the first log-density), before it waits; the
    logged wait leaves the task's time out; a failing task does not stop the wait; a free lock
    runs no task, and a task not run is dropped at the end of the block."""
    import logging
    import time

    from delusion_bayes.inference import sampling

    compiledir = tmp_path / "pytensor"
    monkeypatch.setattr(sampling, "compile_dir", lambda: compiledir)
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={compiledir}"}
    ran: list[tuple[str, float]] = []

    def task():
        ran.append(("task", time.time()))
        time.sleep(1.5)

    def broken():
        ran.append(("broken", time.time()))
        raise RuntimeError("no kernel today")

    with sampling.while_waiting(task):  # the lock is free: no task runs, and none is left
        with sampling.compile_lock():
            pass
    assert ran == [] and sampling._IDLE_TASKS == []

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, "4"], stdout=subprocess.PIPE, text=True, env=env
    )
    assert holder.stdout.readline().split()[0] == "in"
    caplog.set_level(logging.INFO, logger=sampling.__name__)
    with sampling.while_waiting(broken), sampling.while_waiting(task):
        with sampling.compile_lock():
            entered = time.time()
        with sampling.compile_lock():  # the tasks ran already: not again
            pass
    released = float(holder.stdout.readline().split()[1])
    holder.wait(timeout=60)
    assert [name for name, _ in ran] == ["broken", "task"]  # in the order registered, once
    assert all(t < released for _, t in ran)  # while the other process held the lock
    assert entered >= released  # and then it waited for the lock as before
    assert sampling._IDLE_TASKS == []
    assert "no kernel today" in caplog.text
    waited = [r.getMessage() for r in caplog.records if r.getMessage().startswith("waited")]
    assert len(waited) == 1
    # the holder sleeps 4 s from its "in"; the task's 1.5 s is not counted as waiting
    assert 1.0 <= float(waited[0].split()[1]) <= 3.0, waited

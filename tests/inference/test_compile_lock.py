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
    assert (tmp_path / "pytensor" / ".compile.lock").is_file()

"""The documentation's examples run (its build: ``test_docs_build.py``). Every code
block a reader would run, in ``README.md`` and the docs, is run: a page's ``python`` blocks
in one interpreter, in order, and each ``bash`` block as a script (``bash -e``), in a
fresh directory, the pages' fits on one cluster (:func:`scheduler_address`). A
block marked ``<!-- not run: why -->`` on the line before it is shown only; the mark must
say why. A table cell holds at most :data:`MAX_CELL` characters: what needs more is prose.
"""
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
NOT_RUN = re.compile(r"^<!-- not run: (?P<why>\S.*\S) -->$")
FENCE = re.compile(r"^```(?P<info>\S*)\s*$")
#: The most characters a table cell of the docs holds (issue 44: cells of 500-800
#: characters could not be read as a table).
MAX_CELL = 200


def code_blocks(path):
    """``(language, code, first line, reason it is not run or None)`` of each fenced block
    of a Markdown page."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening or not opening["info"]:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        mark = NOT_RUN.match(previous.strip())
        blocks.append((opening["info"], "\n".join(lines[i + 1:end]), i + 2,
                       mark["why"] if mark else None))
        i = end + 1
    return blocks


def page_script(path):
    """A Python program that runs the page's blocks in order (None: nothing to run)."""
    steps = []
    for language, code, line, not_run in code_blocks(path):
        if not_run is not None or language not in ("python", "bash"):
            continue
        where = f"{path.name}:{line}"
        if language == "python":
            steps.append(f"exec(compile({code!r}, {where!r}, 'exec'), namespace)")
        else:  # (a block is one script: its variables and traps hold to its end)
            steps.append(f"run({code!r}, {where!r})")
    if not steps:
        return None
    return "\n".join([
        "import subprocess",
        "namespace = {'__name__': '__main__'}",
        "def run(script, where):",
        "    done = subprocess.run(['bash', '-e', '-c', script])",
        "    assert done.returncode == 0, f'{where}: {script} exited with {done.returncode}'",
        *steps,
    ])


def long_cells(path):
    """``(line, length)`` of each table cell of a Markdown page longer than
    :data:`MAX_CELL` characters (cells split on `` | ``, so that an escaped ``\\|`` in a
    cell stays in it)."""
    found = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("|"):
            found += [(number, len(cell.strip()))
                      for cell in line.strip().strip("|").split(" | ")
                      if len(cell.strip()) > MAX_CELL]
    return found


def test_table_cells_are_short_enough_to_read(tmp_path):
    long = {page.name: long_cells(page) for page in PAGES if long_cells(page)}
    assert not long, f"table cells over {MAX_CELL} characters (line, length): {long}"
    planted = tmp_path / "planted.md"
    planted.write_text("| a | b |\n|---|---|\n| x | " + "y" * (MAX_CELL + 1) + " |\n")
    assert long_cells(planted) == [(3, MAX_CELL + 1)]


def test_every_block_a_reader_would_not_run_says_why():
    for page in PAGES:
        for language, _, line, not_run in code_blocks(page):
            if language in ("python", "bash", "console", "shell", "sh"):
                assert not_run is None or len(not_run) > 10, f"{page.name}:{line}"
        text = page.read_text()
        assert len(re.findall(r"^<!-- not run", text, flags=re.M)) == \
            sum(b[3] is not None for b in code_blocks(page)), \
            f"{page.name}: a 'not run' mark stands before no code block"


@pytest.fixture(scope="module")
def scheduler_address():
    """The address of one LocalCluster (2 worker processes) that the pages' fits share.

    A page's ``client=None`` fits and ``dpxgb`` commands reach it through Dask's
    ``DASK_SCHEDULER_ADDRESS`` instead of starting an embedded cluster each (about 2 s
    apiece, some 25 times); a page that makes its own ``LocalCluster`` still does, and
    :func:`test_the_readmes_example_runs_saved_as_a_script` runs on the embedded cluster,
    as a reader's first run does."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if page_script(p) is not None],
                         ids=lambda p: p.name)
def test_the_code_blocks_of_the_page_run(page, tmp_path, scheduler_address):
    # in an empty directory: the installed package, not the checkout's uncompiled sources;
    # the environment's own commands (dpxgb) first on the PATH
    env = dict(os.environ, MPLBACKEND="Agg", DASK_SCHEDULER_ADDRESS=scheduler_address,
               PATH=os.pathsep.join([os.path.dirname(sys.executable),
                                     os.environ.get("PATH", "")]))
    try:
        done = subprocess.run([sys.executable, "-c", page_script(page)], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=600)
    finally:
        _stop_background_service(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]


def _stop_background_service(directory):
    """A page that starts ``dpxgb serve`` in the background writes its pid to
    ``service.pid`` and stops it in its last block; if the page failed before that, the
    service is stopped here."""
    import signal

    pid_file = directory / "service.pid"
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(300):  # (its embedded cluster closes first)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_the_readmes_example_runs_saved_as_a_script(tmp_path):
    """Issue 43: saved as a file and run, the example crashed (about 500 lines of
    "An attempt has been made to start a new process before ... bootstrapping phase": the
    embedded LocalCluster's worker processes import the script again), though it ran
    inside the page's one interpreter."""
    (code,) = [code for language, code, _, not_run in code_blocks(ROOT / "README.md")
               if language == "python" and not_run is None]
    (tmp_path / "example.py").write_text(code + "\n")
    env = {k: v for k, v in os.environ.items() if k != "DASK_SCHEDULER_ADDRESS"}
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    accuracy, epsilon = done.stdout.split()
    assert 0.5 < float(accuracy) <= 1.0 and float(epsilon) == 1.0
    assert "bootstrapping phase" not in done.stderr

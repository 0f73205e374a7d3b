"""The `lab` CLI against a real temporary lab.db: exit codes, output and DB state."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from console.cli import main
from core import store


def lab(*args: str, db: Path) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "console.cli", "--db", str(db), *args],
                          capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1])
    return proc.returncode, proc.stdout, proc.stderr


def test_init_is_idempotent_and_loads_demo(db_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    assert main(["--db", str(db_path), "init"]) == 0
    assert main(["--db", str(db_path), "init"]) == 0
    out = capsys.readouterr().out
    assert "demo (" in out
    assert store.datasets(store.connect(db_path))["demo"] >= 40


def test_try_prints_the_episode(db_path: Path) -> None:
    code, out, err = lab("try", "--model", "sim-own5", "--condition", "enforced_rule",
                         "--regime", "persistent", "--question", "demo-001", db=db_path)
    assert code == 0, err
    assert "[FAILED → foreign: '" in out
    assert "judgment: USELESS" in out and "streak: 5" in out
    assert "FORCED" in out or "answer:" in out
    assert "F1" in out or "unanswered" in out


@pytest.mark.parametrize("args, message", [
    (["try", "--model", "nope", "--condition", "none", "--regime", "clean",
      "--question", "demo-001"], "unknown model 'nope'"),
    (["try", "--model", "sim-own5", "--condition", "sometimes", "--regime", "clean",
      "--question", "demo-001"], "unknown condition 'sometimes'"),
    (["try", "--model", "sim-own5", "--condition", "none", "--regime", "rainy",
      "--question", "demo-001"], "unknown regime 'rainy'"),
    (["try", "--model", "sim-own5", "--condition", "none", "--regime", "clean",
      "--question", "zzz"], "question 'zzz' is not in lab.db"),
    (["try", "--model", "sim-own5", "--condition", "enforced_rule:q=1", "--regime", "clean",
      "--question", "demo-001"], "enforced_rule has no knob 'q'"),
    (["try", "--model", "sim-own5", "--condition", "random_rule", "--regime", "clean",
      "--question", "demo-001"], "no side-channel judgments of sim-own5 on a dev question set"),
    (["sets", "show", "nothing"], "no lab database at"),
    (["try", "--model", "sim-own5"], "Missing option"),
])
def test_bad_input_one_line_nonzero(db_path: Path, args: list[str], message: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--db", str(db_path), *args])
    err = capsys.readouterr().err
    assert code != 0
    assert message in err
    assert len(err.strip().splitlines()) == 1


def _write(path: Path, records: object) -> Path:
    path.write_text(json.dumps(records))
    return path


def _record(i: int) -> dict:
    return {"_id": f"x{i}", "question": f"Q{i}?", "answer": "A", "type": "bridge",
            "level": "hard", "supporting_facts": [["T1", 0], ["T2", 0]],
            "context": [["T1", ["A is here."]], ["T2", ["B is here."]]]}


def test_import_counts_and_broken_file_leaves_db_byte_for_byte(db_path: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]
                                                              ) -> None:
    good = _write(tmp_path / "good.json", [_record(i) for i in range(5)])
    assert main(["--db", str(db_path), "data", "import", "hotpotqa", str(good)]) == 0
    assert "imported 5 questions" in capsys.readouterr().out
    store.connect(db_path).conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = db_path.read_bytes()
    records = [_record(i) for i in range(10, 30)]
    records[17]["context"][1] = "not a pair"
    bad = _write(tmp_path / "bad.json", records)
    assert main(["--db", str(db_path), "data", "import", "hotpotqa", str(bad)]) != 0
    err = capsys.readouterr().err
    assert "record 17" in err and "context[1]" in err and "bad.json" in err
    assert len(err.strip().splitlines()) == 1
    assert db_path.read_bytes() == before
    assert store.count(store.connect(db_path), "questions") == 5


def test_sets_create_list_show_disjoint(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--db", str(db_path)]
    assert main([*base, "sets", "create", "dev10", "--dataset", "demo", "--n", "10",
                 "--seed", "1"]) == 0
    assert main([*base, "sets", "create", "test20", "--dataset", "demo", "--n", "20",
                 "--seed", "2", "--exclude", "dev10"]) == 0
    out = capsys.readouterr().out
    assert "created dev set 'dev10'" in out and "created held-out set 'test20'" in out
    db = store.connect(db_path)
    dev, test = store.question_set(db, "dev10"), store.question_set(db, "test20")
    assert not set(dev["ids"]) & set(test["ids"]) and len(set(test["ids"])) == 20
    assert main([*base, "sets", "create", "dev10", "--dataset", "demo", "--n", "5",
                 "--seed", "1"]) != 0
    assert "already exists" in capsys.readouterr().err
    assert main([*base, "sets", "create", "big", "--dataset", "demo", "--n", "1000",
                 "--seed", "1"]) != 0
    assert main([*base, "sets", "list"]) == 0
    assert "test20" in capsys.readouterr().out


def test_every_command_has_help_with_example(capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["init"], ["data", "import"], ["sets", "create"], ["sets", "list"],
                 ["sets", "show"], ["try"], ["models"]):
        assert main([*args, "--help"]) == 0
        assert "Example:" in capsys.readouterr().out


@pytest.mark.parametrize("group", ["sets", "prereg", "data"])
def test_a_group_without_its_subcommand_prints_its_help_on_lines(group: str,
                                                                 capsys: pytest.CaptureFixture[str]
                                                                ) -> None:
    """`lab sets` alone shows the group's help as lines (as click does: stderr, exit 2),
    not the help folded into one `error:` line with its newlines written as \\n."""
    assert main([group]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"Usage: lab {group} ") and "\nCommands:\n" in err, err
    assert "\\n" not in err and not err.startswith("error:")


def test_command_modules_hold_exactly_the_commands_the_group_lists() -> None:
    import importlib

    from console.cli import COMMAND_MODULES, cli

    for module, names in COMMAND_MODULES.items():
        held = tuple(c.name for c in importlib.import_module(module).COMMANDS)
        assert sorted(held) == sorted(names), module
    listed = cli.list_commands(None)  # type: ignore[arg-type]
    assert len(listed) == len(set(listed)) == sum(map(len, COMMAND_MODULES.values()))
    for name in listed:  # every command, group and subcommand takes --db and --config
        command = cli.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None, name
        stack = [command]
        while stack:
            cmd = stack.pop()
            assert {"db", "config"} <= {p.name for p in cmd.params}, cmd.name
            stack += list(getattr(cmd, "commands", {}).values())


def test_a_results_command_loads_neither_the_worker_nor_the_console(db_path: Path) -> None:
    """Commands are imported when they run: `lab results` pays for the analysis only."""
    assert main(["--db", str(db_path), "demo-set"]) == 0
    assert main(["--db", str(db_path), "enqueue", "--models", "sim-own3", "--conditions", "none",
                 "--regimes", "persistent", "--set", "demo"]) == 0
    assert main(["--db", str(db_path), "worker", "--until-idle"]) == 0
    heavy = ("console.cli.try_episode", "console.cli.demo", "console.cli.queue", "jobs.worker",
             "core.runner", "core.prereg", "core.models.registry", "asyncio", "textual",
             "httpx", "anthropic", "openai", "scipy", "statsmodels")
    code = ("import sys; from console.cli import main; "
            f"code = main(['--db', {str(db_path)!r}, 'results', 'success']); "
            f"print(code, [m for m in {heavy!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip().splitlines()[-1] == "0 []", out.stdout + out.stderr


def test_queue_commands_load_neither_pandas_nor_numpy(db_path: Path) -> None:
    """sqlite_utils imports pandas and numpy whenever they are installed (0.3 s of CPU a
    process); lab loads it without them, so enqueueing, the status, the sets list and the
    console's start pay for neither. Red if core/__init__ stops hiding them, a package
    imports sqlite_utils before core, or a queue path imports them at the top of a
    module."""
    assert main(["--db", str(db_path), "demo-set"]) == 0
    code = ("import sys, console.app; from console.cli import main; "
            "db = " + repr(str(db_path)) + "; "
            "codes = [main(['--db', db] + a.split()) for a in ("
            "'enqueue --models sim-own3 --conditions none --regimes persistent --set demo', "
            "'status', 'sets list', 'models')]; "
            "print(codes, [m for m in ('pandas', 'numpy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip().splitlines()[-1] == "[0, 0, 0, 0] []", out.stdout + out.stderr


def test_lab_db_connections_run_no_sqlite_utils_plugin(db_path: Path) -> None:
    """An installed sqlite-utils plugin adds its SQL functions to every connection
    sqlite_utils prepares; lab's connections to lab.db, read-write and read-only, are not
    given to it (nor is each process's first connection a scan of every package's entry
    points). The same plugin still prepares an ordinary sqlite_utils connection."""
    import sqlite_utils
    from sqlite_utils.plugins import pm

    from core.store.base import open_read_only

    prepared: list[object] = []

    class Plugin:
        @sqlite_utils.hookimpl
        def prepare_connection(self, conn: object) -> None:
            prepared.append(conn)

    plugin = Plugin()
    pm.register(plugin)
    try:
        store.connect(db_path).conn.close()
        open_read_only(db_path).conn.close()
        assert prepared == []
        sqlite_utils.Database(memory=True)
        assert len(prepared) == 1
    finally:
        pm.unregister(plugin)


def test_sqlite_utils_without_numpy_refuses_to_type_a_column_from_a_numpy_value() -> None:
    """The cost of hiding numpy from sqlite_utils: a table it would create from a numpy
    value now raises instead of being made; lab declares its tables' types, so none of
    its paths does this (the whole suite runs with the hiding on)."""
    code = ("import core, numpy, sqlite_utils; "
            "sqlite_utils.Database(memory=True)['t'].insert({'x': numpy.int64(1)})")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode != 0 and "KeyError" in out.stderr, out.stderr


@pytest.mark.parametrize("asked, want", [(None, "False 1"), ("1", "True 2")])
def test_lab_sets_numpys_pages_and_blas_threads_unless_told(asked: str | None, want: str
                                                            ) -> None:
    """`lab` sets numpy's huge-page switch off, OpenBLAS to one thread and, on an x86-64
    CPU with AVX2, to its Haswell kernels before numpy is imported (huge pages made a
    paper-scale table spend 0.3 s more system time; OpenBLAS's idle threads spun on the
    core lab.db is read on, docs/performance.md; its AVX-512 kernels changed the hazard
    model's 16th digit); values the environment already holds are kept."""
    import os

    from console.cli.environment import BLAS_KERNEL, blas_kernel

    names = ("NUMPY_MADVISE_HUGEPAGE", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE")
    env = {k: v for k, v in os.environ.items() if k not in names}
    kernel = blas_kernel()
    if asked is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = asked
        env["OPENBLAS_NUM_THREADS"] = "2"
        env["OPENBLAS_CORETYPE"] = kernel = "Sandybridge"  # any x86-64 CPU runs it
    code = ("from console.cli import main; main(['--help']); import numpy; "
            "from threadpoolctl import threadpool_info; "
            "core = getattr(numpy, '_core', None) or numpy.core; "
            "blas = [f\"{i['num_threads']} {i.get('architecture')}\" for i in threadpool_info() "
            "        if i['internal_api'] == 'openblas'] or ['none']; "
            "print(core.multiarray._get_madvise_hugepage(), *blas)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=Path(__file__).resolve().parents[1])
    last = out.stdout.strip().splitlines()[-1]
    if last.endswith(" none"):
        pytest.skip("this numpy does not use OpenBLAS")
    hugepage, threads, architecture = last.split()
    assert f"{hugepage} {threads}" == want, out.stdout + out.stderr
    if kernel is None:
        pytest.skip("not an x86-64 CPU with AVX2: OpenBLAS keeps its own kernels")
    assert architecture == kernel and (asked or kernel == BLAS_KERNEL), out.stdout


def test_blas_kernel_is_pinned_only_where_the_cpu_runs_it() -> None:
    """Haswell's kernels need AVX2 and FMA: an older x86-64 CPU and another architecture
    keep OpenBLAS's own choice (a kernel the CPU lacks would stop lab with SIGILL)."""
    from console.cli.environment import blas_kernel

    assert blas_kernel("x86_64", frozenset({"sse2", "avx", "avx2", "fma"})) == "Haswell"
    assert blas_kernel("AMD64", frozenset({"avx2", "fma", "avx512f"})) == "Haswell"
    assert blas_kernel("x86_64", frozenset({"sse2", "avx"})) is None
    assert blas_kernel("x86_64", frozenset({"avx2"})) is None
    assert blas_kernel("aarch64", frozenset({"avx2", "fma"})) is None
    assert blas_kernel("x86_64", frozenset()) is None


def test_a_table_command_of_its_own_process_freezes_what_it_loaded_and_closes_lab_db(
        trajectories_db: Path, tmp_path: Path) -> None:
    """`lab results` run as a program leaves what it imported out of the collector's
    scans (the interpreter's exit scanned it all: 0.08 s of a paper-scale table,
    docs/performance.md), and lab.db's connections are still all closed at exit: no
    ``-wal`` or ``-shm`` is left beside it, so a copy of lab.db alone holds everything."""
    from tests.helpers.console import copy_db

    path = copy_db(trajectories_db, tmp_path / "lab.db")
    code = ("import gc, sys; from console.cli import main; code = main(); "
            "print('frozen', gc.get_freeze_count(), file=sys.stderr); sys.exit(code)")
    out = subprocess.run([sys.executable, "-c", code, "--db", str(path), "results", "success",
                          "--format", "json", "--resamples", "10"], capture_output=True,
                         text=True, timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout), out.stdout[:500]
    frozen = int(out.stderr.rsplit("frozen ", 1)[1])
    assert frozen > 20_000, out.stderr  # pandas, numpy and analysis (about 58,000)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("lab.db")) == [
        "lab.db", "lab.db.results"]


def test_a_table_command_run_in_a_callers_process_leaves_its_collector_alone(
        trajectories_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`main(args)` runs in a process that is not lab's (the tests run hundreds of
    commands in one): nothing it holds is frozen out of collection."""
    import gc

    from tests.helpers.console import copy_db

    path = copy_db(trajectories_db, tmp_path / "lab.db")
    before = gc.get_freeze_count()
    code = main(["--db", str(path), "results", "success", "--format", "json",
                 "--resamples", "10"])
    assert code == 0, capsys.readouterr().err
    assert gc.get_freeze_count() == before


def test_try_on_a_stated_arm_prints_the_streak_the_next_thought_states(db_path: Path) -> None:
    """The stated judgment of an observation is read from the next step's thought, after
    the observation's step was emitted: `lab try` prints that step once it is known."""
    code, out, err = lab("try", "--model", "sim-own5", "--condition", "stated_judgment_rule",
                         "--regime", "persistent", "--question", "demo-001", db=db_path)
    assert code == 0, err
    streaks = [int(line.rsplit("streak: ", 1)[1]) for line in out.splitlines()
               if "streak: " in line]
    assert streaks[:3] == [1, 2, 3], out
    steps = [int(line.split()[2]) for line in out.splitlines() if line.startswith("── step")]
    assert steps == sorted(steps) and len(steps) >= 4


def test_enqueue_takes_mean6_for_the_six_regimes(db_path: Path, capsys: pytest.CaptureFixture[str]
                                                ) -> None:
    from core.regimes import MEAN6

    assert main(["--db", str(db_path), "demo-set"]) == 0
    capsys.readouterr()
    assert main(["--db", str(db_path), "enqueue", "--models", "sim-own5", "--conditions",
                 "none", "--regimes", "mean6,clean,plausible", "--set", "demo", "--dry-run",
                 "--json"]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["cells"] == len(MEAN6) + 1  # clean queued once
    assert summary["request"]["regimes"][:len(MEAN6)] == list(MEAN6)
    assert "note: --regimes: clean is listed 2 times" in err

"""`lab init`, `lab data import` and `lab sets`: lab.db, its datasets and question sets."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import click

from console.cli.options import bounded, number, open_db
from console.cli.output import echo
from console.widgets.sets_render import created_text, imported_text
from core import store
from core.bounds import Bounds
from core.data_import import read_data_file, store_data_file
from core.demo_fever import DEMO_FEVER_DATASET
from core.demo_set import ensure_demo_set, load_demo_questions
from core.episode_import import read_episode_import, store_episode_import
from core.errors import ConfigError
from core.limits import DEFAULT_WARN_KB, MAX_WARN_KB, oversized
from core.paper_values import (
    DEFAULT_NAME,
    check_reference_name,
    read_paper_values,
    store_paper_values,
)
from core.paper_values import LICENSE as PAPER_VALUES_LICENSE
from core.question_sets import check_set_name, draw_set, save_set
from core.released_episodes import DEFAULT_BUDGET, LICENSE
from core.set_import import import_set
from core.wording import plural


@click.command()
@click.pass_context
def init(ctx: click.Context) -> None:
    """Create (or migrate) lab.db and load the bundled demo data. Idempotent.

    \b
    Example:
      lab --db runs/lab.db init
    """
    db = open_db(ctx)
    new = load_demo_questions(db)
    echo(f"{ctx.obj['db']}: schema version {store.schema_version(db)}; "
               f"demo questions added: {new}; datasets: "
               + ", ".join(f"{k} ({v})" for k, v in store.datasets(db).items()))


@click.group()
def data() -> None:
    """Import datasets into lab.db.

    \b
    Example:
      lab data import hotpotqa hotpot_dev_distractor_v1.json
    """


@data.command("import")
@click.argument("kind", type=click.Choice(["hotpotqa", "fever", "musique", "episodes",
                                          "paper-values"]))
@click.argument("files", metavar="FILE...", nargs=-1, required=True,
                type=click.Path(path_type=Path))
@click.option("--dataset", default=None,
              help="Dataset name to store the questions under (default: KIND; episodes: "
                   "the dataset their question ids belong to, paper-values: the dataset "
                   "the values were computed on; both default hotpotqa).")
@click.option("--include-nei", is_flag=True,
              help="fever: keep NOT ENOUGH INFO claims (skipped by default).")
@click.option("--warn-kb", type=number(Bounds(gt=0, le=MAX_WARN_KB)), default=DEFAULT_WARN_KB,
              show_default=True, envvar="LAB_WARN_KB",
              help="Warn about questions whose context text (question and pages) is larger "
                   "than this many KB (env LAB_WARN_KB).")
@click.option("--model", default=None,
              help="episodes: the model, where a file does not name it.")
@click.option("--condition", default=None,
              help="episodes: the condition (released name, e.g. unaided, or lab arm), "
                   "where a file does not name it.")
@click.option("--run", "run", default=None,
              help="episodes: the run to import into (default: the records' split).")
@click.option("--budget", type=bounded(1), default=DEFAULT_BUDGET, show_default=True,
              help="episodes, paper-values: the action budget they ran under.")
@click.option("--name", default=None,
              help=f"paper-values: the reference set's name (default {DEFAULT_NAME}).")
@click.option("--replace", is_flag=True,
              help="paper-values: replace a reference set of the same name.")
@click.pass_context
def data_import(ctx: click.Context, kind: str, files: tuple[Path, ...], dataset: str | None,
                include_nei: bool, warn_kb: float, model: str | None, condition: str | None,
                run: str | None, budget: int, name: str | None, replace: bool) -> None:
    """Validate FILE completely, then store it in one transaction.

    hotpotqa: FILE is the official HotpotQA JSON list or the Hugging Face column
    format, as JSON or JSONL. fever: FILE is a folder holding claims.jsonl and
    pages.json (format in docs/data.md); SUPPORTS/REFUTES claims are kept, NOT ENOUGH
    INFO claims skipped (and counted) unless --include-nei, and each claim's
    knowledge base is its evidence pages plus 8 pages drawn from other claims.
    musique: FILE is MuSiQue's answerable dev JSONL (paragraphs with is_supporting,
    answer, answer_aliases); records marked answerable false are skipped and counted.
    episodes: FILE... are the main paper's released episode files (JSONL, plain or
    .gz: question_id, regime, actions, judgments, success, and model, condition,
    split where the full files have them), stored as an imported run (default: the
    split's name) with no text; format and mapping in docs/data.md.
    paper-values: FILE is the main paper's released paper_values.json
    ("SPLIT/MODEL__CONDITION": {delta, ci_low, ci_high, mean6}), stored as a named
    reference set (--name, default paper) that `lab results replication` compares
    runs with; a set of that name is refused unless --replace.
    A malformed file stores nothing. Questions whose context text is above
    --warn-kb are stored with a warning; `lab enqueue` refuses them for a model
    whose max_context they cannot fit.

    \b
    Example:
      lab data import hotpotqa hotpot_dev_distractor_v1.json
      lab data import fever fever_dev/
      lab data import musique musique_ans_v1.0_dev.jsonl
      lab data import episodes data/episodes/test300/*.jsonl.gz
      lab data import episodes cell.jsonl --model qwen3-8b --condition unaided --run test300
      lab data import paper-values data/episodes/paper_values.json
    """
    episode_flags = {"--model": model, "--condition": condition, "--run": run}
    reference_flags = {"--name": name, "--replace": replace or None}
    either = {"--budget": None if budget == DEFAULT_BUDGET else budget}
    if kind == "episodes":
        _only(kind, reference_flags)
        import_episodes(ctx, files, dataset or "hotpotqa", model, condition, run, budget)
        return
    _only(kind, episode_flags, "episodes")
    if kind == "paper-values":
        import_paper_values(ctx, files, name or DEFAULT_NAME, dataset or "hotpotqa", budget,
                            replace)
        return
    _only(kind, reference_flags)
    _only(kind, either, "episodes or paper-values")
    if len(files) != 1:
        raise ConfigError(f"lab data import {kind} reads one FILE, got {len(files)}")
    file = files[0]
    read = read_data_file(kind, file, dataset, include_nei)
    skipped = "" if kind != "fever" else (
        f"; skipped {plural(read.skipped_nei, 'NOT ENOUGH INFO claim')}"
        + ("" if include_nei else " (--include-nei keeps them)")
        + (f" and {plural(read.skipped_no_text, 'claim')} without any evidence text"
           if read.skipped_no_text else ""))
    if read.skipped_unanswerable:
        skipped += f"; skipped {plural(read.skipped_unanswerable, 'unanswerable record')}"
    db = open_db(ctx)
    new, same = store_data_file(db, read)
    echo(imported_text(read, new, same, file) + skipped)
    big = oversized(read.questions, warn_kb)
    if big:
        shown = ", ".join(f"{qid} ({n / 1024:,.0f} KB)" for qid, n in big[:3])
        echo(f"warning: {plural(len(big), 'question')} above {warn_kb:g} KB of context "
                   f"text: {shown}{' …' if len(big) > 3 else ''}; each call sends ≈ chars/4 "
                   f"tokens of it (lab enqueue refuses models whose max_context it exceeds)",
                   err=True)


def _only(kind: str, flags: Mapping[str, object], where: str = "paper-values") -> None:
    """Refuse flags given to a kind they do not apply to, in one line."""
    given = [flag for flag, value in flags.items() if value is not None]
    if given:
        raise ConfigError(f"{', '.join(given)} apply to `lab data import {where}` only, "
                          f"not {kind}")


def import_paper_values(ctx: click.Context, files: tuple[Path, ...], name: str, dataset: str,
                        budget: int, replace: bool) -> None:
    """`lab data import paper-values`: check the file, store it as a reference set."""
    if len(files) != 1:
        raise ConfigError(f"lab data import paper-values reads one FILE, got {len(files)}")
    check_reference_name(name)
    read = read_paper_values(files[0])
    db = open_db(ctx)
    store_paper_values(db, read, name, dataset, budget, replace)
    echo(f"imported {plural(len(read.values), 'value')} from {read.path.name} as reference "
               f"set '{name}' (splits {', '.join(read.splits)}; dataset {dataset}, budget "
               f"{budget}); sha256 {read.sha256[:12]}, license {PAPER_VALUES_LICENSE}")


def import_episodes(ctx: click.Context, files: tuple[Path, ...], dataset: str,
                    model: str | None, condition: str | None, run: str | None,
                    budget: int) -> None:
    """`lab data import episodes`: check every file, store them as one imported run."""
    db = open_db(ctx)
    plan = read_episode_import(db, files, model, condition, run, dataset, budget)
    stored = store_episode_import(db, plan)
    cells = plan.cells()
    echo(f"imported {plural(stored, 'episode')} from {plural(len(plan.files), 'file')} "
               f"into run '{plan.run}' ({plural(len(cells), 'cell')}: "
               + ", ".join(sorted({f"{m} {c}" for m, c, _, _ in cells})) + "); no text, "
               f"license {LICENSE}")
    linked = sorted(set(plan.sets))
    if linked:
        echo(f"linked to question set {', '.join(linked)}")
    if plan.unknown:
        echo(f"{plural(len(plan.unknown), 'question')} not in lab.db yet, kept by id "
                   f"under dataset '{dataset}' (they link up when it is imported)")


@data.command("list")
@click.pass_context
def data_list(ctx: click.Context) -> None:
    """List what lab.db holds from outside: datasets, imported runs and reference sets.

    \b
    Example:
      lab data list
    """
    from core.store.imports import imported_runs, imports
    from core.store.references import reference_sets

    db = open_db(ctx, create=False)
    counts = store.datasets(db)
    echo("datasets: " + (", ".join(f"{k} ({v})" for k, v in counts.items()) or
                               "none (lab data import KIND FILE)"))
    runs = sorted(imported_runs(db))
    echo("imported runs: " + ("none (lab data import episodes FILE...)" if not runs
                                    else ""))
    for run in runs:
        files = imports(db, run)
        echo(f"  {run}: {plural(sum(f.records for f in files), 'episode')} from "
                   + ", ".join(f"{f.file} (sha256 {f.sha256[:12]})" for f in files)
                   + f"; {files[0].license}")
    refs = reference_sets(db)
    echo("reference sets: " + ("none (lab data import paper-values FILE)" if not refs
                                     else ""))
    for r in refs:
        echo(f"  {r.name}: {plural(r.values, 'value')} (splits {r.splits.replace(',', ', ')};"
                   f" dataset {r.dataset}, budget {r.budget}) from {r.file} (sha256 "
                   f"{r.sha256[:12]}); {r.license}")


@click.group()
def sets() -> None:
    """Question sets: named, frozen, hashed samples of a dataset.

    \b
    Example:
      lab sets create dev100 --dataset hotpotqa --n 100 --seed 1
      lab sets list
    """


@sets.command("create")
@click.argument("name")
@click.option("--dataset", required=True, help="Dataset to draw from (e.g. hotpotqa, demo).")
@click.option("--n", "n", type=bounded(1), required=True, help="Number of questions.")
@click.option("--seed", type=bounded(None), required=True, help="Sampling seed.")
@click.option("--exclude", multiple=True,
              help="Sets whose questions must not be drawn (repeatable or comma-separated).")
@click.option("--held-out/--dev", "held_out", default=None,
              help="Mark as held-out (default: names starting with test or fresh).")
@click.pass_context
def sets_create(ctx: click.Context, name: str, dataset: str, n: int, seed: int,
                exclude: tuple[str, ...], held_out: bool | None) -> None:
    """Sample N questions without replacement, disjoint from --exclude sets.

    From a FEVER dataset the set is balanced: N/2 SUPPORTS and N/2 REFUTES claims
    (N/3 of each label when NOT ENOUGH INFO was imported), each label drawn with the
    seed from its own claims, then shuffled with the seed; N must divide evenly.

    \b
    Example:
      lab sets create dev100 --dataset hotpotqa --n 100 --seed 1
      lab sets create test300 --dataset hotpotqa --n 300 --seed 2 --exclude dev100,pilot
      lab sets create fever292 --dataset fever --n 292 --seed 3
    """
    check_set_name(name)
    db = open_db(ctx)
    if dataset in ("demo", DEMO_FEVER_DATASET):
        load_demo_questions(db)
    draft = draw_set(db, name, dataset, n, seed, exclude, held_out)
    save_set(db, draft)
    echo(created_text(draft))  # the console's Sets screen says the same line


@sets.command("import")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--dataset", required=True, help="Dataset every id must be in (e.g. hotpotqa).")
@click.option("--name", default=None,
              help="The set's name (default: the file's, without a version suffix: "
                   "test300_v1.json makes test300).")
@click.option("--held-out/--dev", "held_out", default=None,
              help="Mark as held-out (default: names starting with test or fresh).")
@click.pass_context
def sets_import(ctx: click.Context, file: Path, dataset: str, name: str | None,
                held_out: bool | None) -> None:
    """Make a question set from a list of ids: a JSON list, one id per line, or a JSON
    object with question_ids (the main paper's manifests; their version, seed tag,
    dataset sha256 and exclusions are recorded with the set).

    Every id must be in the dataset, else nothing is stored. Imported runs whose split
    has the set's name are linked to it.

    \b
    Example:
      lab sets import experiments/manifests/test300_v1.json --dataset hotpotqa
      lab sets import ids.txt --dataset hotpotqa --name pilot20
    """
    draft, linked = import_set(open_db(ctx), file, dataset, name, held_out)
    echo(f"imported {draft.kind} set '{draft.name}': {len(draft.ids):,} questions from "
               f"{dataset}, sha256 {draft.sha256[:12]}"
               + (f"; linked {plural(linked, 'imported cell')}" if linked else ""))


@sets.command("list")
@click.pass_context
def sets_list(ctx: click.Context) -> None:
    """List question sets.

    \b
    Example:
      lab sets list
    """
    rows = store.question_sets(open_db(ctx, create=False))
    if not rows:
        echo("no question sets (create one with `lab sets create`)")
        return
    echo(f"{'name':<16} {'dataset':<12} {'n':>5} {'seed':>6} {'kind':<9} sha256")
    for r in rows:
        kind = "held-out" if r["held_out"] else "dev"
        echo(f"{r['name']:<16} {r['dataset']:<12} {r['n']:>5} {r['seed']:>6} {kind:<9} "
                   f"{r['sha256'][:12]}")


@sets.command("show")
@click.argument("name")
@click.option("--ids/--no-ids", default=True, help="Print the question ids.")
@click.pass_context
def sets_show(ctx: click.Context, name: str, ids: bool) -> None:
    """Show one question set and its ids.

    \b
    Example:
      lab sets show dev100
    """
    s = store.question_set(open_db(ctx, create=False), name)
    kind = "held-out" if s["held_out"] else "dev"
    echo(f"{s['name']}: {s['n']:,} questions from {s['dataset']} ({kind}), seed {s['seed']}, "
               f"exclude {', '.join(s['exclude']) or '-'}, sha256 {s['sha256']}")
    if s["manifest"]:
        echo("imported from " + ", ".join(f"{k} {v}" if not isinstance(v, dict) else
                                                f"{k} {json.dumps(v, sort_keys=True)}"
                                                for k, v in s["manifest"].items()))
    if ids:
        echo("\n".join(s["ids"]))


@click.command("demo-set", hidden=True)
@click.pass_context
def demo_set(ctx: click.Context) -> None:
    """Load the demo questions and create the demo question set (used by tests).

    \b
    Example:
      lab demo-set
    """
    ensure_demo_set(open_db(ctx))


COMMANDS = (init, data, sets, demo_set)
"""The commands to register on the `lab` group."""

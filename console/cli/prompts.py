"""`lab prompts`: the prompt pieces in use, prompt packs, and what a model is sent.

prompts/ holds the project's own wording; a prompt pack (a folder of NAME.txt files,
docs/prompts.md) replaces it, e.g. with a paper's exact words. The active pack is
stored in lab.db: new cells run with it and freezing an amendment pins it.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from console.cli.options import bounded, open_db
from console.cli.output import echo
from core import prompt_packs as packs
from core.bounds import MAX_BUDGET
from core.errors import ConfigError
from core.store import prompt_packs as pack_rows
from core.wording import plural


@click.group("prompts")
def prompts_group() -> None:
    """The prompt pieces in use, prompt packs, and the request a model gets.

    \b
    Example:
      lab prompts export paper-pack/      # every piece in use, one NAME.txt each
      lab prompts import paper-pack/      # checked, stored in lab.db, made active
      lab prompts render --condition enforced_rule --regime persistent --step 4 --forced
    """


@prompts_group.command("list")
@click.pass_context
def list_(ctx: click.Context) -> None:
    """Every piece: sha256 of the text in use, whether the active pack replaces it, and
    its placeholders.

    \b
    Example:
      lab prompts list
    """
    db = open_db(ctx)
    sha = pack_rows.active_sha(db)
    echo(f"active: {'prompt pack ' + sha if sha else 'built-in wording (prompts/)'}")
    rows = packs.piece_rows(db)
    width = max(len(r.name) for r in rows)
    for r in rows:
        holes = " ".join(f"{{{p}}}" for p in r.placeholders) or "-"
        echo(f"{r.name:<{width}}  {r.sha256[:16]}  {r.source:<17}  {holes}")


@prompts_group.command("show")
@click.argument("name")
@click.pass_context
def show(ctx: click.Context, name: str) -> None:
    """Print the text in use for one piece (control characters shown escaped).

    \b
    Example:
      lab prompts show forced_observation
    """
    text = packs.piece_text(open_db(ctx), name)
    echo(packs.inert(text), nl=not text.endswith("\n"))


@prompts_group.command("export")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite .txt files already in FOLDER.")
@click.pass_context
def export(ctx: click.Context, folder: Path, force: bool) -> None:
    """Write every piece in use to FOLDER, one NAME.txt each (a complete pack).

    \b
    Example:
      lab prompts export my-pack/
    """
    written = packs.export_folder(open_db(ctx), folder, force)
    echo(f"wrote {plural(len(written), 'piece')} to {folder}")


@prompts_group.command("import")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path), required=False)
@click.option("--builtin", is_flag=True,
              help="Go back to the built-in wording (prompts/) instead of importing a pack.")
@click.pass_context
def import_(ctx: click.Context, folder: Path | None, builtin: bool) -> None:
    """Check every file of FOLDER, store the pack in lab.db and make it active.

    A file whose name is not a piece, that is not UTF-8 text, or whose placeholders
    differ from the built-in piece's stops the import with one line; nothing is stored.
    New cells run with the active pack (their arm hash includes it).

    \b
    Example:
      lab prompts import paper-pack/
      lab prompts import --builtin
    """
    if builtin == (folder is not None):
        raise ConfigError("give a pack FOLDER or --builtin (one of the two), e.g. "
                          "lab prompts import paper-pack/")
    db = open_db(ctx)
    if builtin:
        packs.reset(db)
        echo("active: built-in wording (prompts/)")
        return
    assert folder is not None
    sha, pieces = packs.import_folder(db, folder)
    total = len(packs.piece_rows(db))
    echo(f"active: prompt pack {sha} ({len(pieces)} of {total} pieces replaced)")


@prompts_group.command("reset")
@click.pass_context
def reset(ctx: click.Context) -> None:
    """Go back to the built-in wording (the same as `lab prompts import --builtin`).

    \b
    Example:
      lab prompts reset
    """
    packs.reset(open_db(ctx))
    echo("active: built-in wording (prompts/)")


@prompts_group.command("diff")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.pass_context
def diff(ctx: click.Context, folder: Path) -> None:
    """Unified diff of the pieces in use against FOLDER's files (checked as import would).

    \b
    Example:
      lab prompts diff paper-pack/
    """
    out = packs.diff_folder(open_db(ctx), folder)
    echo(packs.inert(out) if out else "no differences", nl=not out)


@prompts_group.command("render")
@click.option("--condition", required=True, help="Arm, e.g. enforced_rule:k=2 or decide.")
@click.option("--regime", required=True, help="Failure regime, e.g. persistent.")
@click.option("--step", type=bounded(1, MAX_BUDGET), default=1, show_default=True,
              help="The acting turn (1 = the first action).")
@click.option("--forced", is_flag=True,
              help="Judge every observation USELESS and show the first forced turn at or "
                   "after --step.")
@click.option("--model", default=None,
              help="Registry model (lab.toml or a built-in sim): its backend builds the "
                   "body. Default: the messages as the loop hands them to any model.")
@click.option("--dataset", type=click.Choice(["hotpotqa", "fever"]), default="hotpotqa",
              show_default=True, help="Task of the default demo question.")
@click.option("--question", default=None, help="Question id in lab.db (default: a demo one).")
@click.option("--budget", type=bounded(1, MAX_BUDGET), default=8, show_default=True)
@click.option("--seed", type=bounded(None), default=0, show_default=True)
@click.pass_context
def render(ctx: click.Context, condition: str, regime: str, step: int, forced: bool,
           model: str | None, dataset: str, question: str | None, budget: int,
           seed: int) -> None:
    """Print, as JSON, the request a model gets at one step (messages, sampling, stop,
    max_tokens, seed), with the active prompt pack. Nothing is sent.

    The real episode loop runs with scripted replies (each turn searches again) up to
    that step; a configured model's backend turns the call into its request body.

    \b
    Example:
      lab prompts render --condition enforced_rule --regime persistent --step 3 --forced
      lab prompts render --condition decide --regime persistent --model qwen3-8b
    """
    from core import store
    from core.conditions import parse_condition
    from core.demo_set import load_demo_questions
    from core.models.registry import load_registry, make_client, resolve_model
    from core.react import EpisodeSetup
    from core.regimes import ForeignPool, parse_regime
    from core.request_render import render_request
    from core.runner import CellSpec, setup_for
    from jobs.grid import resolve_rate

    db = open_db(ctx)
    load_demo_questions(db)
    cond, reg = parse_condition(condition), parse_regime(regime)
    qid = question or _demo_question(dataset)
    (q,) = store.load_questions(db, ids=[qid])
    pool = ForeignPool(store.load_questions(db, dataset=q.dataset))
    client = None
    if model is not None:
        spec = resolve_model(load_registry(ctx.obj["config"]), model)
        cond = resolve_rate(db, spec.name, cond)
        client = make_client(spec)
        setup = setup_for(CellSpec(spec, cond, reg, None, budget, seed), q, pool, client)
    else:
        setup = EpisodeSetup(question=q, condition=cond, regime=reg, budget=budget, seed=seed,
                             pool=pool)
    active = pack_rows.active(db)
    out = {"model": model, "condition": cond.label(), "regime": reg.name, "question": q.id,
           "prompt_pack": active.sha256 if active else "built-in",
           **render_request(setup, client, step, forced, active.pieces if active else None)}
    echo(json.dumps(out, indent=2, ensure_ascii=True))


def _demo_question(task: str) -> str:
    """The first bundled demo question of a task."""
    from core.demo_data import demo_questions
    from core.demo_fever import demo_fever_questions

    found = demo_fever_questions() if task == "fever" else demo_questions()
    return sorted(q.id for q in found)[0]


COMMANDS = (prompts_group,)
"""The commands to register on the `lab` group."""

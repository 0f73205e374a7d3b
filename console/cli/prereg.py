"""`lab prereg …`: the pre-registration document from the command line."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from console.cli.options import bounded, open_db
from console.cli.output import echo
from core import json_text, prereg
from core.atomic_write import write_text_atomic
from core.bounds import MAX_RESAMPLES
from core.errors import ConfigError
from core.models.registry import load_registry
from core.store import prereg as rows
from core.wording import plural

SECTIONS = ("body", "tests", "scope")


def _read_json(path: Path | None, what: str) -> Any:
    text = _read_text(path, what)
    if text is None:
        return None
    try:
        return json_text.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: invalid JSON for {what}: {exc}") from None


def _read_text(path: Path | None, what: str = "body") -> str | None:
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); the {what} file must "
                          f"be saved as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the {what} file ({exc.strerror})") from None


@click.group("prereg")
def prereg_group() -> None:
    """The pre-registration: amendments, freezing, deviations, outcomes.

    \b
    Example:
      lab prereg new --title "Enforced rule beats none" --tests a1-tests.json
      lab prereg freeze A1 --yes
      lab prereg outcomes A1
    """


FILE = click.Path(dir_okay=False, path_type=Path)


@prereg_group.command("new")
@click.option("--title", default=None, help="The amendment's title (required without --edit).")
@click.option("--body", "body_file", type=FILE, help="Markdown file with the amendment's text.")
@click.option("--tests", "tests_file", type=FILE, help="JSON list of registered tests.")
@click.option("--scope", "scope_file", type=FILE, help="JSON object: the runs it governs.")
@click.option("--edit", "in_editor", is_flag=True,
              help="Write it in $EDITOR (starting from the options given) before saving.")
@click.pass_context
def new(ctx: click.Context, title: str | None, body_file: Path | None, tests_file: Path | None,
        scope_file: Path | None, in_editor: bool) -> None:
    """Append a draft amendment and print its id.

    \b
    Example:
      lab prereg new --title "Enforced rule beats none" --body a1.md \\
          --tests a1-tests.json --scope a1-scope.json
      EDITOR=vim lab prereg new --edit
    """
    body = _read_text(body_file) or ""
    tests = [] if tests_file is None else _read_json(tests_file, "tests")  # as the file says
    scope = _read_json(scope_file, "scope")
    if in_editor:
        fields = _edit_in_editor({"title": title or "", "body": body, "tests": tests,
                                  "scope": scope}, "lab prereg new --edit needs $EDITOR set")
        title, body, tests, scope = (fields[k] for k in ("title", "body", "tests", "scope"))
    if not title:
        raise ConfigError("an amendment needs a title: --title \"…\" (or write it with --edit)")
    amendment_id = prereg.create(open_db(ctx), title, body, tests, scope)
    echo(amendment_id)


def _editor_text(row: dict[str, Any]) -> str:
    return (f"title: {row['title']}\n\n--- body (markdown) ---\n{row['body']}\n"
            f"--- tests (JSON list) ---\n{json.dumps(row['tests'], indent=2)}\n"
            f"--- scope (JSON object) ---\n{json.dumps(row['scope'], indent=2)}\n")


def _parse_editor_text(text: str) -> dict[str, Any]:
    head, _, rest = text.partition("\n--- body (markdown) ---\n")
    body, _, rest = rest.partition("--- tests (JSON list) ---\n")
    tests, _, scope = rest.partition("--- scope (JSON object) ---\n")
    if not head.startswith("title:") or not scope:
        raise ConfigError("edited text lost its section markers; nothing was changed")
    try:
        return {"title": head[len("title:"):].strip(), "body": body.rstrip("\n"),
                "tests": json_text.loads(tests), "scope": json_text.loads(scope)}
    except json.JSONDecodeError as exc:
        raise ConfigError(f"edited text: invalid JSON ({exc}); nothing was changed") from None


def _edit_in_editor(row: dict[str, Any], without: str) -> dict[str, Any]:
    """Round-trip an amendment's title, body, tests and scope through $VISUAL/$EDITOR.

    Args:
        row: the amendment's current fields (title, body, tests, scope).
        without: the error line when neither $VISUAL nor $EDITOR is set.

    Returns:
        The edited fields.

    Raises:
        ConfigError: no editor set, or the edited text lost its markers or its JSON.
    """
    if not (os.environ.get("VISUAL") or os.environ.get("EDITOR")):
        raise ConfigError(without)
    text = click.edit(_editor_text(row), extension=".md", require_save=False)
    return _parse_editor_text(text or "")


@prereg_group.command("edit")
@click.argument("amendment_id")
@click.option("--title", default=None)
@click.option("--body", "body_file", type=FILE)
@click.option("--tests", "tests_file", type=FILE)
@click.option("--scope", "scope_file", type=FILE)
@click.pass_context
def edit(ctx: click.Context, amendment_id: str, title: str | None, body_file: Path | None,
         tests_file: Path | None, scope_file: Path | None) -> None:
    """Change a draft: from files, or in $EDITOR when no file is given. Frozen: refused.

    \b
    Example:
      lab prereg edit A3 --tests a3-tests.json
      EDITOR=vim lab prereg edit A3
    """
    db = open_db(ctx)
    row = rows.amendment(db, amendment_id)
    if row["state"] != "draft":
        raise ConfigError(f"{amendment_id} is frozen and can never change; log a deviation "
                          f"(lab prereg deviation {amendment_id} \"…\") or write a new amendment")
    fields = {"title": title, "body": _read_text(body_file),
              "tests": _read_json(tests_file, "tests"), "scope": _read_json(scope_file, "scope")}
    if all(v is None for v in fields.values()):
        edited = _edit_in_editor(row, "give --title/--body/--tests/--scope files, or set $EDITOR")
        # only what was changed is validated and written (an untouched empty scope stays)
        fields = {k: (v if v != row[k] else None) for k, v in edited.items()}
    prereg.edit(db, amendment_id, **fields)
    echo(f"{amendment_id} updated")


@prereg_group.command("show")
@click.argument("amendment_id", required=False)
@click.pass_context
def show(ctx: click.Context, amendment_id: str | None) -> None:
    """List the document, or show one amendment in full.

    \b
    Example:
      lab prereg show
      lab prereg show A2
    """
    db = open_db(ctx, create=False)
    if amendment_id is None:
        entries = rows.amendments(db)
        if not entries:
            echo("no amendments yet (lab prereg new --title …)")
        for r in entries:
            digest = (r["content_sha256"] or "")[:12] or "-"
            ndev = len(rows.deviations(db, r["id"]))
            echo(f"{r['id']:<4} {r['state']:<7} {digest:<12} {plural(len(r['tests']), 'test')}"
                       f"{', ' + plural(ndev, 'deviation') if ndev else ''}  {r['title']}")
        return
    r = rows.amendment(db, amendment_id)
    echo(f"{r['id']}: {r['title']}  [{r['state']}]")
    if r["state"] == "frozen":
        echo(f"frozen {r['frozen_at']}  lab {r['version']}  sha256 {r['content_sha256']}"
                   f"\nprevious {r['prev_sha256']}")
        existed = r["data_existed"] or []
        echo("data existed at freeze: " + (
            "; ".join(f"run {d['run']} cell {d['cell']} ({d['episodes']:,} episodes)"
                      for d in existed) if existed else "no"))
    if r["body"]:
        echo("\n" + r["body"].rstrip())
    echo("\nscope: " + json.dumps(r["scope"]))
    for t in r["tests"]:
        echo(f"test {t['id']}: {json.dumps({k: v for k, v in t.items() if k != 'id'})}")
    for d in rows.deviations(db, amendment_id):
        echo(f"deviation {d['id']} ({d['created_at']}): {d['text']}")


@prereg_group.command("freeze")
@click.argument("amendment_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def freeze(ctx: click.Context, amendment_id: str, yes: bool) -> None:
    """Freeze a draft: it can never change again; prompts, sets and specs are pinned.

    \b
    Example:
      lab prereg freeze A2 --yes
    """
    db = open_db(ctx)
    models = load_registry(ctx.obj["config"])
    row = rows.amendment(db, amendment_id)
    if row["state"] == "draft" and not yes:
        prereg.resolve_scope(db, amendment_id, row["scope"], models)
        pins = prereg.pins_for(db, row["scope"], models)
        pack = pins[prereg.PACK_PIN]["active"]
        wording = "built-in wording" if pack == prereg.BUILTIN else f"prompt pack {pack[:12]}…"
        echo(f"Freezing {amendment_id} pins {plural(len(pins['prompts']), 'prompt file')} "
             f"({wording}), "
             f"question sets {', '.join(pins['question_sets']) or '-'}, "
             f"{plural(len(pins['conditions']), 'condition')}, "
             f"{plural(len(pins['regimes']), 'regime')}, "
             f"{plural(len(pins['models']), 'model')}.")
        if not click.confirm("Freeze it for good?", default=False):
            raise click.exceptions.Abort()
    frozen = prereg.freeze(db, amendment_id, models)
    existed = frozen["data_existed"]
    echo(f"{amendment_id} frozen at {frozen['frozen_at']}, sha256 "
               f"{frozen['content_sha256'][:16]}…"
               + (f"; data existed at freeze: "
                  f"{plural(sum(d['episodes'] for d in existed), 'episode')} "
                  f"in {plural(len(existed), 'cell')}" if existed else ""))


@prereg_group.command("verify")
@click.pass_context
def verify(ctx: click.Context) -> None:
    """Recompute the hash chain and the pins; exit 1 with a report on any tampering.

    \b
    Example:
      lab prereg verify
    """
    db = open_db(ctx, create=False)
    problems = prereg.verify(db, load_registry(ctx.obj["config"]))
    if problems:
        for p in problems:
            echo(f"{p.amendment}: {p.what}", err=True)
        ctx.exit(1)
    frozen = sum(r["state"] == "frozen" for r in rows.amendments(db))
    echo(f"ok: {plural(frozen, 'frozen amendment')}, chain and pins intact")


@prereg_group.command("deviation")
@click.argument("amendment_id")
@click.argument("text")
@click.pass_context
def deviation(ctx: click.Context, amendment_id: str, text: str) -> None:
    """Log a deviation from a frozen amendment (shown with every result it touches).

    \b
    Example:
      lab prereg deviation A2 "side_channel.txt reworded after a typo; same meaning"
    """
    db = open_db(ctx)
    row = rows.amendment(db, amendment_id)
    if row["state"] != "frozen":
        raise ConfigError(f"{amendment_id} is a draft: edit it instead of logging a deviation")
    if not text.strip():
        raise ConfigError("a deviation needs a non-empty text")
    dev = rows.add_deviation(db, amendment_id, text.strip())
    echo(f"deviation {dev} logged on {amendment_id}")


def _runs_text(runs: tuple[str, ...]) -> str:
    return f"run{'s' if len(runs) > 1 else ''} {', '.join(runs)}" if runs else "no runs"


def outcome_lines(outcomes: list) -> list[str]:
    """Table lines for registered-test outcomes (three lines per test)."""
    lines = []
    for o in outcomes:
        lines.append(f"{o.amendment:<4} {o.id:<6} {o.verdict:<7} {o.prediction}")
        lines.append(f"{'':<11} {o.numbers}")
        lines.append(f"{'':<11} read {o.n_episodes:,} episodes of {_runs_text(o.runs)} "
                     f"({o.freeze_text()})")
    return lines


@prereg_group.command("outcomes")
@click.argument("amendment_id", required=False)
@click.option("--resamples", type=bounded(100, MAX_RESAMPLES), default=2000, show_default=True)
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text",
              show_default=True)
@click.pass_context
def outcomes(ctx: click.Context, amendment_id: str | None, resamples: int, fmt: str) -> None:
    """Evaluate registered tests on the runs they govern: pass / fail / partial / n.a.

    Each test reads only the runs enqueued under its amendment (or the runs it
    names), and says which runs and how many episodes it used and whether every
    one of them started after the freeze. Without ID: every frozen amendment.

    \b
    Example:
      lab prereg outcomes A2
      lab prereg outcomes A2 --format json
    """
    from analysis.prereg.document import amendment_outcomes

    db = open_db(ctx, create=False)
    ids = [amendment_id] if amendment_id else [
        r["id"] for r in rows.amendments(db) if r["state"] == "frozen"]
    if amendment_id:
        rows.amendment(db, amendment_id)
    results = amendment_outcomes(db, ids, resamples)
    if fmt == "json":
        echo(json.dumps([o.to_dict() for o in results], indent=2))
        return
    if not results:
        echo("no registered tests to evaluate")
        return
    echo(f"{'doc':<4} {'test':<6} {'verdict':<7} prediction")
    echo("\n".join(outcome_lines(results)))
    for amendment in ids:
        for d in rows.deviations(db, amendment):
            echo(f"deviation on {amendment} ({d['created_at'][:19]}): {d['text']}")


@prereg_group.command("export")
@click.argument("file", type=FILE, required=False)
@click.option("--resamples", type=bounded(100, MAX_RESAMPLES), default=2000, show_default=True)
@click.pass_context
def export(ctx: click.Context, file: Path | None, resamples: int) -> None:
    """Write the whole document (amendments, hashes, deviations, outcomes) as markdown.

    Without FILE it prints to stdout.

    \b
    Example:
      lab prereg export prereg.md
    """
    if file is not None and not file.parent.is_dir():
        raise ConfigError(f"{file}: directory {file.parent} does not exist")
    from analysis.prereg.document import document_markdown

    text = document_markdown(open_db(ctx, create=False), resamples)
    if file is None:
        echo(text, nl=False)
        return
    try:
        write_text_atomic(file, text)
    except OSError as exc:
        raise ConfigError(f"{file}: cannot write ({exc.strerror})") from None
    echo(f"wrote {file}")


COMMANDS = (prereg_group,)
"""The commands to register on the `lab` group."""

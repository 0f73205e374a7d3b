"""The `lab` command line (docs/cli.md). Commands are thin: they call core and render.

Each command lives in a console/*_cmd.py module, imported only when that command runs
(`COMMAND_MODULES`): `lab results` starts without the worker's, the models' or the
console's imports.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from console.cli.collector import OWNS_PROCESS
from console.cli.environment import set_defaults
from console.cli.options import CONFIG_HELP, DB_HELP, LabGroup, check_config, config_explicit
from console.cli.output import echo, error_line
from core.errors import LabError

COMMAND_MODULES = {
    "console.cli.data": ("init", "data", "sets", "demo-set"),
    "console.cli.try_episode": ("try",),
    "console.cli.demo": ("demo",),
    "console.cli.queue": ("enqueue", "worker", "status", "tail", "cancel", "pause", "resume",
                          "retry"),
    "console.cli.prereg": ("prereg",),
    "console.cli.prompts": ("prompts",),
    "console.cli.results": ("results", "validate-measures", "export"),
    "console.cli.figures": ("figures",),
    "console.cli.report": ("report",),
    "console.cli.replay": ("replay", "repair"),
    "console.cli.traces": ("traces",),
    "console.cli.models": ("models", "serve"),
    "console.cli.console": ("console",),
    "console.cli.backup": ("backup", "restore"),
}
"""Module -> the `lab` commands in its COMMANDS tuple (tests check the two agree)."""


@click.group(cls=LabGroup, modules=COMMAND_MODULES, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), envvar="LAB_DB",
              default=Path("lab.db"), show_default=True, help=DB_HELP)
@click.option("--config", type=click.Path(dir_okay=False, path_type=Path), envvar="LAB_CONFIG",
              default=Path("lab.toml"), show_default=True, help=CONFIG_HELP)
@click.pass_context
def cli(ctx: click.Context, db: Path, config: Path) -> None:
    """lab: run and analyse failing-source experiments on tool-using agents.

    With no command (or `lab console`), opens the terminal console on --db.
    --db and --config may also follow the command (`lab status --db runs/lab.db`).

    \b
    Example:
      lab --db lab.db
      lab try --model sim-own5 --condition enforced_rule --regime persistent --question demo-001
    """
    ctx.ensure_object(dict)
    ctx.obj.update(db=db, config=config)
    check_config(config, explicit=config_explicit(ctx))
    if ctx.invoked_subcommand is None:  # the console on a terminal; help otherwise
        from console.cli.console import open_from_group

        open_from_group(ctx)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI; any bad input ends with one line on stderr, exit ≠ 0.

    Args:
        argv: the arguments; None reads the process's own command line, and the command
            then owns the process (`console.cli.collector`).
    """
    set_defaults()
    try:
        # without standalone mode click returns ctx.exit()'s code instead of raising it
        code = cli.main(args=argv, prog_name="lab", standalone_mode=False,
                        obj={OWNS_PROCESS: argv is None})
        return code if isinstance(code, int) else 0
    except click.exceptions.Exit as exc:
        return int(exc.exit_code or 0)
    except click.exceptions.Abort:
        echo("error: aborted", err=True)
        return 130
    except click.exceptions.NoArgsIsHelpError as exc:
        # `lab sets` with no subcommand: the group's help as click prints it (lab's own
        # text, several lines), not folded into one error line
        echo(exc.format_message(), err=True)
        return exc.exit_code
    except click.ClickException as exc:
        echo(f"error: {error_line(exc.format_message())}", err=True)
        return exc.exit_code if exc.exit_code else 2
    except LabError as exc:
        echo(f"error: {error_line(exc)}", err=True)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())

"""One example command line for every command's ``--help``, kept in one table.

Why a table here rather than an ``epilog=`` on each decorator: the examples of every command
sit side by side, so they use the same shipped names and read as one convention, and
``tests/test_cli_help.py`` walks the command table to check that none is missing. The
example is attached when :class:`~loom_sim.cli.LoomGroup` loads a command, so ``loom-sim
--help`` still imports no command module.
"""

from __future__ import annotations

import click

#: The example of each command, by its path under ``loom-sim`` (``"harness run"``).
EXAMPLES: dict[str, str] = {
    "validate": "loom-sim validate configs/examples/mania_patient.yaml",
    "schema": "loom-sim schema -o loom-sim.schema.json",
    "dry-run": "loom-sim dry-run mania_patient --turns 50",
    "run": "loom-sim run mania_patient --turns 12 --target local/smollm2",
    "diagram": "loom-sim diagram --machine rollout --format mermaid",
    "trace": "loom-sim trace results/mania_patient-*/rollout_000 --actor judge",
    "signals": "loom-sim signals results/mania_patient-* --json",
    "report": "loom-sim report results/mania_patient-*",
    "view": "loom-sim view results/mania_patient-*/rollout_000 --turns 1:2",
    "score": "loom-sim score results/mania_patient-* --force",
    "import": "loom-sim import psychosis-bench results.json --output results/imported",
    "import psychosis-bench": "loom-sim import psychosis-bench results.json --output "
    "results/imported",
    "import spiral-bench": "loom-sim import spiral-bench ~/spiral-bench/res_v0.2/*.json "
    "--output results/spiral",
    "port": "loom-sim port psychosis-bench profiles.json --output configs/ported",
    "port psychosis-bench": "loom-sim port psychosis-bench profiles.json --output configs/ported",
    "port spiral-bench": "loom-sim port spiral-bench ~/spiral-bench --output configs/spiral",
    "probe": "loom-sim probe combined --mode all --runs 5",
    "plugins": "loom-sim plugins",
    "compare": "loom-sim compare results/matrix-* --json",
    "runs": "loom-sim runs --status partial --json",
    "export": "loom-sim export results/matrix-* --rows turns -o - --json",
    "serve": "loom-sim serve results --port 8765",
    "cache": "loom-sim cache stats",
    "cache stats": "loom-sim cache stats",
    "cache clear": "loom-sim cache clear --model openai/gpt-4.1",
    "cache path": "loom-sim cache path",
    "merge": "loom-sim merge results/shard-1 results/shard-2 -o results/merged",
    "harness": "loom-sim harness run sqlite_notes --repeat 2",
    "harness run": "loom-sim harness run sqlite_notes --repeat 2",
    "harness report": "loom-sim harness report results/harness-*",
    "debate": "loom-sim debate planted_horizon --seed 4",
    "contracts": "loom-sim contracts build planted_horizon",
    "contracts build": "loom-sim contracts build planted_horizon",
    # studio's help is its own program's (argparse); it ends with this same line
    "studio": "loom-sim studio --out studio-out --model canned --seed 3",
}

#: Commands whose ``--help`` is another program's (``studio`` passes every argument on).
PASSED_ON = frozenset({"studio"})


def attach(command: click.Command, path: str) -> None:
    """Give ``command`` (and, for a group, each of its sub-commands) its example as the last
    lines of its ``--help``, unless it already ends with one of its own."""
    example = EXAMPLES.get(path)
    if example is not None and not command.epilog:
        # \b keeps click from re-wrapping the command line into the paragraph around it.
        command.epilog = f"Example:\n\n\b\n  {example}"
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            attach(sub, f"{path} {name}")

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from groupwatch import cli


@pytest.mark.parametrize("name", sorted(cli.SUBCOMMANDS))
def test_every_subcommand_module_has_the_interface(name: str) -> None:
    mod = importlib.import_module(cli.SUBCOMMANDS[name][0])
    assert callable(mod.add_arguments) and callable(mod.run), name


def test_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for name in ("decode", "assign", "run", "broker"):
        assert name in out


def test_console_script_runs_config() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "groupwatch.cli", "config", "--set", "source.topic=mirror"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert 'topic = "mirror"' in proc.stdout


def test_bad_set_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["config", "--set", "source.nope=1"]) == 2
    assert "unknown key source.nope" in capsys.readouterr().err

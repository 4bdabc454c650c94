"""Every domain's admin commands are reachable: ``cli.ADMIN_COMMANDS`` names each command of
each domain's ``GROUPS`` (the CLI imports a domain's module only when one of them runs)."""

from __future__ import annotations

import importlib
import subprocess
import sys

from energy_platform import cli


def test_the_admin_command_table_names_every_command_of_every_domain() -> None:
    for module in set(cli.ADMIN_COMMANDS.values()):
        named = {name for name, where in cli.ADMIN_COMMANDS.items() if where == module}
        assert {c.name for c in importlib.import_module(module).GROUPS} == named, module


def test_a_command_starts_without_importing_the_other_domains() -> None:
    probe = (
        "import sys; from energy_platform import cli; "
        "cli.main(['admin', 'users', '--help'], standalone_mode=False); "
        "print(sorted(m for m in sys.modules if m.startswith('energy_platform.')"
        " and m.split('.')[1] in ('forwarder', 'provisioning', 'engine', 'devices')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"

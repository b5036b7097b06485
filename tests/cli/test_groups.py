"""Option groups: typer sees each group's fields as options, the command gets one instance per group."""

from __future__ import annotations

from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from turboinfer.cli.groups import grouped, option_group


@option_group("Network")
class Network:
    host: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1"
    port: Annotated[int, typer.Option(min=1)] = 8000


@option_group("Other")
class Clash:
    port: int = 1


def app_of(command: object) -> typer.Typer:
    app = typer.Typer()
    app.command()(command)
    return app


def test_a_group_is_built_from_its_options_and_listed_under_its_panel() -> None:
    seen: list[tuple[str, Network]] = []

    @grouped
    def run(name: Annotated[str, typer.Argument()], network: Network) -> None:
        seen.append((name, network))

    runner = CliRunner()
    result = runner.invoke(app_of(run), ["model", "--port", "9000"])
    assert result.exit_code == 0, result.output
    assert seen == [("model", Network("127.0.0.1", 9000))]
    assert "Network" in runner.invoke(app_of(run), ["--help"]).output


def test_an_option_group_keeps_its_checks() -> None:
    @grouped
    def run(network: Network) -> None:
        pass

    result = CliRunner().invoke(app_of(run), ["--port", "0"])
    assert result.exit_code == 2 and "--port" in result.output


def test_two_groups_may_not_share_an_option_name() -> None:
    def run(network: Network, clash: Clash) -> None:
        pass

    with pytest.raises(TypeError, match="'port' of Clash is already taken"):
        grouped(run)

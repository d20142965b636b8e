"""Mistyped options, subcommands and choices get argparse's error plus "did you mean"."""

from __future__ import annotations

import pytest

from pullback.cli import ArgumentParser


def program() -> ArgumentParser:
    parser = ArgumentParser(prog="tool")
    parser.add_argument("--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train")
    train.add_argument("--schedule", choices=["cosine", "wsd"])
    train.add_argument("--max-steps", type=int)
    sub.add_parser("sample")
    return parser


@pytest.mark.parametrize("argv, hint", [
    (["trian"], "(did you mean train?)"),
    (["train", "--schdule", "wsd"], "(did you mean --schedule?)"),
    (["train", "--schedule", "wds"], "(did you mean wsd?)"),
    (["train", "--max_steps=3"], "(did you mean --max-steps?)"),
    (["--verbse", "sample"], "(did you mean --verbose?)"),
])
def test_a_typo_is_answered_with_the_closest_name(argv, hint, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        program().parse_args(argv)
    assert exit_.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.endswith(hint) and "error:" in last


def test_nothing_close_adds_nothing(capsys) -> None:
    with pytest.raises(SystemExit):
        program().parse_args(["train", "--zzzzzz"])
    assert capsys.readouterr().err.strip().endswith("unrecognized arguments: --zzzzzz")

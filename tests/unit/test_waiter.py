"""The tests' one waiter (tests/support/services.py): its answer, and a timeout that names what
it waited for, for how long, and the last answer it saw."""

import pytest

from tests.support.services import eventually, until


async def test_eventually_answers_the_first_answer_that_holds() -> None:
    answers = iter([0, [], 3])
    assert await eventually(lambda: next(answers), every=0) == 3


async def test_a_timeout_names_the_wait_its_length_and_the_last_answer() -> None:
    async def rows() -> int:
        return 2

    with pytest.raises(AssertionError) as failed:
        await eventually(rows, 0.05, 0.01, what="three rows", holds=lambda n: n == 3)
    assert str(failed.value) == "not within 0.05 s: three rows; last seen: 2"


async def test_an_unnamed_lambda_is_named_by_its_source_line() -> None:
    with pytest.raises(
        AssertionError, match=r"eventually\(lambda: len\(\[\]\) > 0, .*last seen: False"
    ):
        await eventually(lambda: len([]) > 0, 0.05, 0.01)


def test_until_waits_the_same_way_without_a_loop() -> None:
    answers = iter([None, "ready"])
    assert until(lambda: next(answers), 1, "ready", every=0) == "ready"
    with pytest.raises(AssertionError, match=r"not within 0\.05 s: never; last seen: 0"):
        until(lambda: 0, 0.05, "never", every=0.01)

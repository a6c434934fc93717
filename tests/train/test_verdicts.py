"""rljax.train.verdicts: the one overall-verdict rule, on synthetic claim sets."""

import itertools

import pytest

from rljax.train import study
from rljax.train import verdicts as V

R, P, C, U = V.REPRODUCED, V.PARTLY, V.CONTRADICTED, V.UNDECIDED


@pytest.mark.parametrize(
    "claims, expected",
    [
        ([R], R),
        ([R, R, R], R),
        ([R, U], P),
        ([R, C], P),
        ([P], P),
        ([P, C], P),
        ([C, C], C),
        # no claim holds, one fails, one ties: contradicted (the old rule said "partly")
        ([C, C, U], C),
        ([C, U], C),
        ([U, U], U),
        ([U], U),
    ],
)
def test_overall_rule(claims, expected):
    assert V.overall(claims) == expected
    assert V.overall({f"claim {i}": (s, "why") for i, s in enumerate(claims)}) == expected


def test_overall_agrees_with_the_rule_on_every_claim_set_up_to_four():
    for n in range(1, 5):
        for claims in itertools.product(V.STATUSES, repeat=n):
            got = V.overall(list(claims))
            some_hold = any(s in (R, P) for s in claims)
            if all(s == R for s in claims):
                assert got == R
            elif some_hold:
                assert got == P, claims
            elif C in claims:
                assert got == C, claims
            else:
                assert got == U, claims
            assert (got == P) <= some_hold  # partly only when some claim holds


def test_old_words_and_dicts_are_read():
    assert V.overall(["holds", "tie"]) == P
    assert V.overall(["fails", "tie"]) == C
    assert V.overall([{"verdict": R}, {"status": "holds"}]) == R


@pytest.mark.parametrize("bad", [[], ["maybe"], [None], [("yes", "why")]])
def test_overall_refuses_bad_claim_sets(bad):
    with pytest.raises(ValueError, match="claim|claims"):
        V.overall(bad)


def test_vs_zero():
    assert V.vs_zero([0.1, 2.0]) == R
    assert V.vs_zero([-2.0, -0.1]) == C
    assert V.vs_zero([-1.0, 1.0]) == U
    assert V.vs_zero([-2.0, -0.1], higher_is_claimed=False) == R
    with pytest.raises(ValueError, match="interval"):
        V.vs_zero([1.0, -1.0])


def test_matches_or_beats_holds_on_a_tie_within_the_margin():
    # a tie (interval straddles 0) inside the margin is a match: the claim holds
    assert V.matches_or_beats([-3.0, 4.0], margin=5.0) == R
    assert V.vs_zero([-3.0, 4.0]) == U  # where "beats" alone would be undecided
    assert V.matches_or_beats([1.0, 4.0], margin=0.0) == R  # a win
    assert V.matches_or_beats([-30.0, -10.0], margin=5.0) == C  # worse by more than the margin
    assert V.matches_or_beats([-30.0, 4.0], margin=5.0) == U  # too wide to tell
    with pytest.raises(ValueError, match="margin"):
        V.matches_or_beats([0.0, 1.0], margin=-1.0)


def test_across_seed_sets():
    assert V.across([R, R]) == R
    assert V.across([C, C]) == C
    assert V.across([R, U]) == U  # holds on one set only: not a result
    assert V.across([R, C]) == U
    assert V.across([R, P]) == P
    assert V.across(["holds", "holds"]) == R
    with pytest.raises(ValueError):
        V.across([])


def test_over_arms_one_worse_one_tie_is_contradicted():
    # one rule: a failed arm among ties refutes the claim made for every arm (it used to be
    # undecided here and contradicted in from_signs)
    assert V.over_arms([C, U]) == C
    assert V.over_arms([C, C]) == C
    assert V.over_arms([R, U]) == P
    assert V.over_arms([R, C]) == P
    assert V.over_arms([R, R]) == R
    assert V.over_arms([U, U]) == U
    with pytest.raises(ValueError, match="statuses"):
        V.over_arms([])


ALL = [R, P, C, U]


@pytest.mark.parametrize("a", ALL)
@pytest.mark.parametrize("b", ALL)
@pytest.mark.parametrize("c", ALL)
def test_one_rule_everywhere(a, b, c):
    """overall, over_arms and from_signs are the one rule (combine), for every mix of three
    statuses; the rule by its definition in the module docstring."""
    found = [a, b, c]
    if all(s == R for s in found):
        expected = R
    elif any(s in (R, P) for s in found):
        expected = P
    elif C in found:
        expected = C
    else:
        expected = U
    assert V.combine(found) == V.overall({"x": a, "y": b, "z": c}) == expected
    assert V.over_arms(found) == expected
    if P not in found:
        to_sign = {R: "+", C: "-", U: "0"}
        assert V.from_signs(to_sign[s] for s in found) == expected


def test_an_ablation_that_wins_counts_against():
    # "full beats the ablation": full − ablation's interval; the ablation winning is a failure
    assert V.loses([0.1, 0.5]) == R
    assert V.loses([-0.5, -0.1]) == C
    assert V.loses([-0.01, 0.5]) == U  # a tie is no loss, whatever margin a match would allow
    # and it refutes the claim it is part of instead of counting as support
    assert V.over_arms([V.loses([-0.5, -0.1]), V.loses([-0.2, 0.3])]) == C


def test_a_studys_report_uses_the_common_rule():
    def verdict(claims):
        return study.Report("t", "c", claims, "r", {}, "m").verdict

    # one_shot.py on seeds 1000-1002: two claims contradicted, one a tie; the old rule ("theirs
    # if they agree, else partly") called that "partly" while no claim held
    assert verdict({"a": (C, "why"), "b": (C, "why"), "c": (U, "why")}) == C
    assert verdict({"a": (R, ""), "b": (U, "")}) == P
    assert verdict({}) == U  # nothing could be checked


@pytest.mark.parametrize(
    "signs, expected",
    [("++", R), ("+0", P), ("+-", P), ("00", U), ("0-", C), ("--", C), ("+", R), ("-", C)],
)
def test_from_signs_one_loss_and_ties_refute(signs, expected):
    assert V.from_signs(signs) == expected
    assert V.over_arms(V.SIGNS[s] for s in signs) == expected  # the same rule


def test_sign():
    assert [V.sign(ci) for ci in ([0.1, 1.0], [-1.0, -0.1], [-1.0, 1.0], [0.0, 1.0])] == list(
        "+-00"
    )
    with pytest.raises(ValueError, match="signs"):
        V.from_signs("+x")

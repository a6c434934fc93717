"""One verdict rule for every reproduction: claim statuses in, the overall verdict out.

Every reproduction (``experiments/*.py``, run by ``rljax.train.study``) checks a few claims of
its paper. Each claim ends in one of four
statuses (the same words as the overall verdict, so a one-claim study reads naturally):

* ``"reproduced"``: the claim holds (its interval is on the claimed side, or inside the stated
  margin for a "matches or beats" claim);
* ``"partly"``: a composite claim of which some parts hold and others do not;
* ``"contradicted"``: the claim fails (its interval is on the wrong side);
* ``"not at this scale"``: undecided (a tie: the interval straddles the threshold).

``overall`` turns the statuses of all claims into the study's verdict, by one rule:

* reproduced: every claim holds;
* partly: some claim holds (or holds in part) and some does not;
* contradicted: no claim holds, not even in part, and some claim fails;
* not at this scale: nothing holds and nothing fails (all ties).

``vs_zero`` and ``matches_or_beats`` turn a 95% interval of a difference into a status, so the
form of a claim ("X beats Y" or "X matches or beats Y") decides its rule, and ``across`` combines
one claim's statuses from several seed sets (a claim holds only if it holds on every set).
``sign`` and ``from_signs`` read the sign of an effect ("+" / "-" / "0": its 95% interval above,
below or around 0) and the claim made for several effects at once.
"""

from collections.abc import Iterable, Mapping, Sequence

REPRODUCED = "reproduced"
PARTLY = "partly"
CONTRADICTED = "contradicted"
UNDECIDED = "not at this scale"
STATUSES = (REPRODUCED, PARTLY, CONTRADICTED, UNDECIDED)
# Older per-claim words that some studies print, read as the statuses above (WORDS: back).
_ALIASES = {"holds": REPRODUCED, "fails": CONTRADICTED, "tie": UNDECIDED}
WORDS = {v: k for k, v in _ALIASES.items()}


def status(value) -> str:
    """The status of one claim from a status word or a tuple/list/dict that starts with one.

    Accepts ``"reproduced"`` (or ``"holds"``), ``"partly"``, ``"contradicted"`` (or ``"fails"``),
    ``"not at this scale"`` (or ``"tie"``); a tuple or list whose first item is one of them (the
    scripts' ``(status, reason)`` pairs); or a dict with a ``"verdict"`` or ``"status"`` key.

    Raises:
      ValueError: for anything else, naming the value and the allowed words.
    """
    if isinstance(value, Mapping):
        value = value.get("verdict", value.get("status"))
    elif isinstance(value, (tuple, list)) and value:
        value = value[0]
    if isinstance(value, str):
        word = _ALIASES.get(value, value)
        if word in STATUSES:
            return word
    raise ValueError(
        f"claim status {value!r} is invalid; allowed: one of {', '.join(STATUSES)} "
        f"(or {', '.join(_ALIASES)})"
    )


def overall(claims: Mapping[str, object] | Iterable[object]) -> str:
    """The study's verdict from its claims' statuses (see the module docstring for the rule).

    Args:
      claims: ``{name: status}`` (a status as ``status`` reads it) or an iterable of statuses.

    Returns:
      One of ``STATUSES``.

    Raises:
      ValueError: no claims, or a claim whose status is not one of the allowed words.
    """
    values = claims.values() if isinstance(claims, Mapping) else claims
    found = [status(v) for v in values]
    if not found:
        raise ValueError("claims is empty; allowed: at least one claim")
    if all(s == REPRODUCED for s in found):
        return REPRODUCED
    if any(s in (REPRODUCED, PARTLY) for s in found):
        return PARTLY
    if any(s == CONTRADICTED for s in found):
        return CONTRADICTED
    return UNDECIDED


def vs_zero(interval: Sequence[float], *, higher_is_claimed: bool = True) -> str:
    """Status of "X beats Y" (or "X is below Y") from the 95% interval of X − Y.

    Holds when the whole interval is on the claimed side of 0, fails when it is wholly on the
    other side, and is a tie otherwise.
    """
    lo, hi = (float(v) for v in interval)
    if not lo <= hi:
        raise ValueError(f"interval={list(interval)} is invalid; allowed: [lo, hi] with lo <= hi")
    if not higher_is_claimed:
        lo, hi = -hi, -lo
    return REPRODUCED if lo > 0 else CONTRADICTED if hi < 0 else UNDECIDED


def matches_or_beats(interval: Sequence[float], *, margin: float) -> str:
    """Status of "X matches or beats Y" from the 95% interval of X − Y and a stated margin.

    A non-inferiority rule: the claim holds when X is not worse than Y by more than ``margin``
    (``lo > -margin``: a tie within the margin holds, not only a win), fails when X is worse by
    more than the margin (``hi < -margin``), and is undecided otherwise (the interval too wide).

    Args:
      interval: ``[lo, hi]`` of X − Y (higher is better).
      margin: the largest shortfall still called a match (>= 0, in the units of X − Y).
    """
    if not margin >= 0:
        raise ValueError(f"margin={margin!r} is invalid; allowed: >= 0")
    lo, hi = (float(v) for v in interval)
    if not lo <= hi:
        raise ValueError(f"interval={list(interval)} is invalid; allowed: [lo, hi] with lo <= hi")
    return REPRODUCED if lo > -margin else CONTRADICTED if hi < -margin else UNDECIDED


def across(statuses: Iterable[object]) -> str:
    """One claim's status over several seed sets: it holds (or fails) only if it does on all.

    Every set reproduced → reproduced; every set contradicted → contradicted; sets that each
    reproduce at least in part → partly; anything else (sets that disagree, or ties) → not at
    this scale.
    """
    found = [status(s) for s in statuses]
    if not found:
        raise ValueError("statuses is empty; allowed: one status per seed set")
    if len(set(found)) == 1:
        return found[0]
    if set(found) <= {REPRODUCED, PARTLY}:
        return PARTLY
    return UNDECIDED


def from_findings(findings: Mapping[str, bool]) -> dict[str, str]:
    """``{claim: True/False}`` (a check that held or failed) as ``{claim: status}``."""
    return {k: REPRODUCED if bool(v) else CONTRADICTED for k, v in findings.items()}


def over_arms(statuses: Iterable[object]) -> str:
    """One claim made for several arms at once ("the curricula beat uniform"), from each arm's.

    Holds when it holds for every arm; partly when it holds for some; fails only when it fails
    for every arm (one arm worse and another tied does not refute a claim about both: it is
    undecided); otherwise not at this scale.
    """
    found = [status(s) for s in statuses]
    if not found:
        raise ValueError("statuses is empty; allowed: one status per arm")
    if all(s == REPRODUCED for s in found):
        return REPRODUCED
    if any(s in (REPRODUCED, PARTLY) for s in found):
        return PARTLY
    if all(s == CONTRADICTED for s in found):
        return CONTRADICTED
    return UNDECIDED


SIGNS = {"+": REPRODUCED, "-": CONTRADICTED, "0": UNDECIDED}  # an effect's sign as a status


def sign(interval: Sequence[float]) -> str:
    """The sign of an effect: "+" / "-" when its 95% interval ``[lo, hi]`` lies above / below 0,
    else "0"."""
    lo, hi = interval
    return "+" if lo > 0 else "-" if hi < 0 else "0"


def from_signs(signs: Iterable[str]) -> str:
    """One claim that several effects are positive ("X beats Y and Z"), from their signs.

    Every effect "+": reproduced; some "-" and none "+": contradicted; every effect "0": not at
    this scale; anything else (some "+" and some not): partly. Unlike ``over_arms`` one
    significant loss with the rest ties refutes the claim.
    """
    found = list(signs)
    if not found or any(s not in SIGNS for s in found):
        raise ValueError(f"signs={found!r} is invalid; allowed: one or more of '+', '-', '0'")
    if all(s == "+" for s in found):
        return REPRODUCED
    if "-" in found and "+" not in found:
        return CONTRADICTED
    if all(s == "0" for s in found):
        return UNDECIDED
    return PARTLY

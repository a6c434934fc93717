"""One verdict rule for every reproduction: claim statuses in, the overall verdict out.

Every reproduction (``experiments/*.py``, run by ``rljax.train.study``) checks a few claims of
its paper. Each claim ends in one of four
statuses (the same words as the overall verdict, so a one-claim study reads naturally):

* ``"reproduced"``: the claim holds (its interval is on the claimed side, or inside the stated
  margin for a "matches or beats" claim);
* ``"partly"``: a composite claim of which some parts hold and others do not;
* ``"contradicted"``: the claim fails (its interval is on the wrong side);
* ``"not at this scale"``: undecided (a tie: the interval straddles the threshold).

The one rule (``combine``) turns several statuses into one, the same way wherever statuses
combine: the claims of a study into its verdict (``overall``), the parts of one claim or the arms
it is made for (``over_arms``), the signs of several effects (``from_signs``):

* reproduced: every status is reproduced;
* partly: some status is reproduced or partly, and some is not (a tie or a failure);
* contradicted: none is reproduced or partly, and some is contradicted (one failure among ties
  refutes: a tie never rescues a failed part);
* not at this scale: every status is a tie.

What counts as a failure is the part's own rule: an ablation claimed to lose ("full beats the
ablation") is ``vs_zero`` on full − ablation, so an ablation that wins is a contradicted part,
never support; ``matches_or_beats`` is only for claims that X is not worse than Y (a win of X
and a tie within the margin both hold), never for an ablation claimed to lose (``loses``
refuses a margin for that reason). A claim that no outcome could contradict (an exact identity,
a baseline every arm beats by construction) is a check, not a claim: it is reported beside the
verdict and never enters it.

Seed sets are replications, not parts: ``across`` combines one claim's statuses over them, and
a claim holds (or fails) only if it does on every set; sets that disagree are undecided.

``vs_zero``, ``loses`` and ``matches_or_beats`` turn a 95% interval of a difference (the t
intervals of ``rljax.stats``) into a status, so the form of a claim ("X beats Y", "the ablation
loses" or "X matches or beats Y") decides its rule. ``sign`` and ``from_signs`` read the sign of
an effect ("+" / "-" / "0": its 95% interval above, below or around 0).
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


def combine(statuses: Iterable[object]) -> str:
    """The one rule (module docstring): several statuses (claims, parts, arms, effects) as one.

    Raises:
      ValueError: no statuses, or one that is not one of the allowed words.
    """
    found = [status(v) for v in statuses]
    if not found:
        raise ValueError("statuses is empty; allowed: at least one status")
    if all(s == REPRODUCED for s in found):
        return REPRODUCED
    if any(s in (REPRODUCED, PARTLY) for s in found):
        return PARTLY
    if any(s == CONTRADICTED for s in found):
        return CONTRADICTED
    return UNDECIDED


def overall(claims: Mapping[str, object] | Iterable[object]) -> str:
    """The study's verdict from its claims' statuses: ``combine`` of them.

    Args:
      claims: ``{name: status}`` (a status as ``status`` reads it) or an iterable of statuses.

    Returns:
      One of ``STATUSES``.

    Raises:
      ValueError: no claims, or a claim whose status is not one of the allowed words.
    """
    values = list(claims.values() if isinstance(claims, Mapping) else claims)
    if not values:
        raise ValueError("claims is empty; allowed: at least one claim")
    return combine(values)


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


def loses(interval: Sequence[float]) -> str:
    """Status of "the ablation loses to the full method" from the 95% interval of full −
    ablation (higher is better): ``vs_zero``. No margin: an ablation that ties or wins is not a
    loss, so it can never count as support."""
    return vs_zero(interval, higher_is_claimed=True)


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
    """One claim made for several arms at once ("the curricula beat uniform"), or made of several
    parts, from each arm's (part's) status: ``combine`` of them.

    Raises:
      ValueError: no statuses, or one that is not an allowed word.
    """
    found = list(statuses)
    if not found:
        raise ValueError("statuses is empty; allowed: one status per arm")
    return combine(found)


SIGNS = {"+": REPRODUCED, "-": CONTRADICTED, "0": UNDECIDED}  # an effect's sign as a status


def sign(interval: Sequence[float]) -> str:
    """The sign of an effect: "+" / "-" when its 95% interval ``[lo, hi]`` lies above / below 0,
    else "0"."""
    lo, hi = interval
    return "+" if lo > 0 else "-" if hi < 0 else "0"


def from_signs(signs: Iterable[str]) -> str:
    """One claim that several effects are positive ("X beats Y and Z"), from their signs: each
    sign as its status (``SIGNS``: "+" reproduced, "-" contradicted, "0" a tie), then
    ``combine``."""
    found = list(signs)
    if not found or any(s not in SIGNS for s in found):
        raise ValueError(f"signs={found!r} is invalid; allowed: one or more of '+', '-', '0'")
    return combine(SIGNS[s] for s in found)

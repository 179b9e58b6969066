"""Looking for a case's phrases in a trace's answer, with one work budget per check.

A case may list 1,000 phrases in each of four lists, and an answer may be a million characters, four million once
normalised: searched naively, one case took seconds. So each check may spend at most MAX_SEARCH_STEPS steps, a
step being one phrase looked for in 1,000 characters of the normalised answer (or of the phrase). A check that
would spend more stops looking and, unless what it found already decides it, fails saying so; the other checks
still run. The steps are counted the same whether a phrase was searched for or remembered, so a case's verdict
never depends on the cases before it.

What is remembered: each phrase's verdict on one answer. Cases whose fixtures hold the same answer share one
`AnswerSearch` (see `Trace.share_search`), so a suite whose cases share defaults and a fixture searches once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from diagbot.core.text import MAX_FOLDED_CHARS, Folded, fold

MAX_SEARCH_STEPS = 1_000_000
"""Steps one check may spend on one answer: about half a second of searching."""
STEP_CHARS = 1_000  # characters of the normalised answer (or of a phrase) one step pays for


@dataclass(frozen=True, slots=True)
class Found:
    """What one check's search found, in the case's order: `found` holds one phrase per normal form (the first the
    case lists), `missed` the phrases not in the answer. `looked` is how many phrases were looked for, fewer than
    `listed` when the budget ran out."""

    found: list[str]
    missed: list[str]
    looked: int
    listed: int

    @property
    def stopped(self) -> bool:
        return self.looked < self.listed


@dataclass(slots=True)
class AnswerSearch:
    """One answer, normalised once, and what each phrase looked for in it gave (its normal form, whether found)."""

    answer: str
    folded: Folded = field(init=False)
    _seen: dict[str, tuple[str, bool]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.folded = fold(self.answer)

    def find(self, phrases: Sequence[str]) -> Found:
        """The phrases that occur in the answer, each normal form counted once; an empty phrase never occurs."""
        per_phrase = 1 + len(self.folded.text) // STEP_CHARS
        steps = 0
        found: list[str] = []
        missed: list[str] = []
        forms: set[str] = set()
        for looked, phrase in enumerate(phrases):
            steps += per_phrase + len(phrase) // STEP_CHARS
            if steps > MAX_SEARCH_STEPS:
                return Found(found, missed, looked, len(phrases))
            form, hit = self._look(phrase)
            if not hit:
                missed.append(phrase)
            elif form not in forms:
                forms.add(form)
                found.append(phrase)
        return Found(found, missed, len(phrases), len(phrases))

    def _look(self, phrase: str) -> tuple[str, bool]:
        known = self._seen.get(phrase)
        if known is None:
            folded = fold(phrase, MAX_FOLDED_CHARS)  # cut: longer than any normalised answer, so it cannot occur
            hit = bool(folded.text) and not folded.cut and folded.text in self.folded.text
            known = self._seen[phrase] = (folded.text, hit)
        return known

    def budget_note(self, found: Found, field_name: str) -> str:
        """Why a check stopped: the limit, what it costs, and what to change."""
        return (
            f"stopped after looking for {found.looked:,} of the {found.listed:,} {field_name}: one check may spend "
            f"{MAX_SEARCH_STEPS:,} steps, one per phrase per {STEP_CHARS:,} characters of the answer "
            f"({len(self.folded.text):,} once normalised); list fewer phrases in the case"
        )

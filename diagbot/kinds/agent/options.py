"""The agent suite's own keys in diagbot.yml (kebab-case, like the rest of the file)."""

from __future__ import annotations

import json
from functools import cached_property
from typing import Annotated, Literal, get_args

from pydantic import AfterValidator, Field, ValidationInfo, field_validator

from diagbot.core import values
from diagbot.core.models import StrictInput
from diagbot.core.regex import Regex, compile_regex, matches_empty, named_groups, repeated_groups, valid_regex
from diagbot.core.text import closest
from diagbot.kinds.agent.cases import Check
from diagbot.kinds.agent.checks import Confirmation
from diagbot.kinds.agent.formats import FORMAT_NAMES
from diagbot.kinds.agent.report import OptionName

RuleName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")]
_REFUSALS = ("no", "No.", "nope", "cancel", "stop", "不", "不要", "いいえ")  # what no confirmation pattern may match
_TAKEN_BACK = (
    "Yes. Do not do it.", "OK, go ahead. Actually no, stop.", "Sure. Wait, don't.", "Yep. No, stop.",
    "Okay. Cancel that.", "Confirm. No, wait.", "Sí. No, no lo hagas.", "好的，可以。算了，不要了。",
    "はい。やっぱりやめてください。",
)  # fmt: skip
"""Replies that say yes and then take it back: a confirmation-pattern that confirms one is warned of."""


class AgentOptions(StrictInput):
    trace_format: str = Field(default="auto", alias="trace-format")
    tool_error_pattern: Annotated[str, AfterValidator(valid_regex)] | None = Field(None, alias="tool-error-pattern")
    trials: Literal["all", "any"] | int = "all"
    confirmation_pattern: Annotated[str, AfterValidator(valid_regex)] | None = Field(None, alias="confirmation-pattern")
    rules: dict[RuleName, Check] = Field(default_factory=dict, max_length=10_000)
    citation_pattern: Annotated[str, AfterValidator(valid_regex)] | None = Field(None, alias="citation-pattern")

    @field_validator("trials", mode="before")
    @classmethod
    def _trials(cls, value: object) -> object:
        if value in ("all", "any") or (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 1000):
            return value
        shown = json.dumps(value) if isinstance(value, bool | int | float | None) else repr(value)  # `true`, as written
        raise ValueError(f"expected all, any or a number of trials from 1 to 1000, not {values.one_line(shown, 60)}")

    @field_validator("trace_format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value not in FORMAT_NAMES:
            close = closest(str(value), FORMAT_NAMES)
            hint = f" (did you mean {close}?)" if close else ""
            raise ValueError(f"unknown trace format {value!r}{hint}; use one of {', '.join(FORMAT_NAMES)}")
        return value

    @field_validator("citation_pattern")
    @classmethod
    def _cites_a_document(cls, value: str | None) -> str | None:
        if value is not None and "doc_id" not in named_groups(value):
            raise ValueError(
                "the citation pattern needs a named group doc_id (and may have passage_id), "
                "for example \\[(?P<doc_id>[^\\]#]+)(?:#(?P<passage_id>[^\\]]+))?\\]"
            )
        if value is not None and matches_empty(value):
            raise ValueError("the citation pattern matches empty text, so it would find a citation everywhere")
        repeated = repeated_groups(value) if value is not None else []
        if repeated:
            raise ValueError(
                f"the citation pattern names more than one group {' and '.join(repeated)}, and only the first of "
                "them would be read; name each once, and put the alternatives inside it: "
                "[\\[{](?P<doc_id>\\w+)[\\]}]"
            )
        return value

    @field_validator("confirmation_pattern", "tool_error_pattern")
    @classmethod
    def _finds_something(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and matches_empty(value):
            confirms = info.field_name == "confirmation_pattern"
            what = "every user message a confirmation" if confirms else "every call failed"
            raise ValueError(f"the pattern matches empty text, so it would make {what}")
        if value is not None and info.field_name == "confirmation_pattern":
            refusal = next((no for no in _REFUSALS if Confirmation.of(value).confirms(no)), None)
            if refusal is not None:  # `\b`, `.`, `\w`: a pattern that a refusal matches confirms every reply
                raise ValueError(
                    f"the pattern matches the refusal {refusal!r}, so it would read a user's no as a confirmation; "
                    "match the words that confirm (yes|confirm|go ahead)"
                )
        return value

    def required(self, trials: int) -> int:
        """How many of `trials` trials must pass for the case to pass."""
        if self.trials == "all":
            return trials
        return 1 if self.trials == "any" else int(self.trials)

    @cached_property
    def judging(self) -> dict[OptionName, str | int]:
        """The options that decide verdicts and differ from their defaults, as diagbot.yml writes them (the rules
        are in each case's checks digest): the report records them, and the diff says when they changed."""
        found = self.model_dump(by_alias=True, exclude_defaults=True, exclude={"rules"})
        return {name: found[name] for name in get_args(OptionName) if name in found}

    @cached_property
    def folded_rules(self) -> dict[str, str]:
        """The rule names by their case-folded form, built once per suite (`evaluate.ignored_checks` looks up every
        prose item of every case: a suite may define 10,000 rules)."""
        return {name.casefold(): name for name in self.rules}

    @cached_property
    def confirmation(self) -> Confirmation:
        return Confirmation.of(self.confirmation_pattern)

    @cached_property
    def warnings(self) -> list[str]:
        """What in the suite's options passes runs it should not: a confirmation-pattern that confirms a reply
        taking its yes back (a suite's own pattern has no refusals, so one that matches a reply's start does)."""
        if self.confirmation_pattern is None:
            return []
        taken_back = next((reply for reply in _TAKEN_BACK if self.confirmation.confirms(reply)), None)
        if taken_back is None:
            return []
        return [
            f"confirmation-pattern confirms {taken_back!r}, a reply that takes its yes back: a suite's own pattern "
            "has no refusals, so a side effect the user declined passes; match the whole reply (for example "
            r"^\s*(yes|ok|go ahead)[\s.!]*$), or remove the pattern for the default rule, which refuses such replies"
        ]

    @cached_property
    def error_regex(self) -> Regex | None:
        return compile_regex(self.tool_error_pattern) if self.tool_error_pattern else None

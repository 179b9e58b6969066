"""The agent suite's checks: one registry of case checks (each with its stable code), and one of rule checks.

A case check reads the case and one trial's run and returns failure messages ([] when it holds); `applies` says,
from the case alone, whether the case asks for it at all, so a case that asks for nothing machine-checkable is
`unchecked` rather than passed. Rule checks are the small named predicates of check objects (`answer_contains`,
`tool_called`, ...); each returns whether it holds and a sentence saying what was seen, which reads right both
for criteria that must hold and for those that must not.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from jmespath.exceptions import JMESPathError

from diagbot.core.query import QueryLimitError, query_steps, run_query, truthy
from diagbot.core.regex import MAX_SCANNED_CHARS, Regex, compile_regex, find_named
from diagbot.core.text import (
    DASHES,
    INVISIBLE,
    MAX_TEXT_CHARS,
    Folded,
    ascii_digits,
    fold,
    shows_something,
    without_markup,
)
from diagbot.core.values import excerpt, one_line
from diagbot.kinds.agent import rag
from diagbot.kinds.agent.cases import (
    CRITERIA_FIELDS,
    AgentCase,
    AnyAll,
    Check,
    StateQuery,
    ToolArgs,
    Transition,
    arg_path,
)
from diagbot.kinds.agent.match import args_fit, args_mismatch, max_matching, ordered_matching, show
from diagbot.kinds.agent.run import FROM_STATE, Citation, Message, Run, StateChange, ToolCall

MAX_MATCHED_CHARS = MAX_TEXT_CHARS
"""Characters of the answer a regex reads (and of a user message a confirmation pattern reads); text matching
reads as many (`core.text.fold`)."""
MAX_CHECK_STEPS = 2_000_000
"""Comparisons one check may make on one trial (calls against expected items, preconditions, keys, ...): the
product of what a case asks and what a run holds is bounded, and a check that hits it fails saying so."""
MAX_RUN_QUERY_STEPS = 5_000_000
"""JMESPath steps all of a case's queries may take on one run together (each query also stops at its own
`core.query.MAX_QUERY_STEPS`): a case may list as many queries as its file holds. A query past it is not run and
fails saying so; the other checks still run."""
MAX_CASE_STEPS = 10_000_000
"""Comparisons and JMESPath steps all of one case's checks may take over all its trials together: each check's and
each run's own bound times the checks and the up to 100 trials of a case would still allow hours. Past it, the
check running stops and those after it do not run; each fails saying so."""
MAX_CITATIONS = 1_000  # citations of one answer that are compared with the gold evidence
_NAMES_SHOWN = 12
_LISTED = 5  # failures of one kind listed per check before "and N more"
_RULES_LISTED = 100  # failing criteria listed, each by its id (a case rarely has more, and each is its own claim)


class Code:
    """The stable failure codes: each failure is `"<code>: <message>"` in a trial's failedChecks."""

    TRACE_MISSING = "trace_missing"
    TRACE_INVALID = "trace_invalid"
    TOOL_SEQUENCE_MISMATCH = "tool_sequence_mismatch"
    EXPECTED_ARGS_MISMATCH = "expected_args_mismatch"
    UNAVAILABLE_TOOL_CALLED = "unavailable_tool_called"
    TOOL_ARGS_INVALID = "tool_args_invalid"
    PRECONDITION_UNMET = "precondition_unmet"
    CONFIRMATION_MISSING = "confirmation_missing"
    DUPLICATE_SIDE_EFFECT = "duplicate_side_effect"
    STATE_TRANSITION_FORBIDDEN = "state_transition_forbidden"
    AUDIT_MISSING = "audit_missing"
    TRACE_REQUIREMENT_MISSING = "trace_requirement_missing"
    FINAL_STATE_MISMATCH = "final_state_mismatch"
    RULE_FAILED = "rule_failed"
    CONSTRAINT_FAILED = "constraint_failed"
    EVIDENCE_RECALL_LOW = "evidence_recall_low"
    CITATION_INACCURATE = "citation_inaccurate"
    CITATION_MISSING = "citation_missing"


DEFAULT_CONFIRMATION = r"\b(?:yes|confirm\w*|proceed|go\s+ahead)\b|确认|是的|同意|可以"
# With the default pattern, a message that also refuses is no confirmation ("不同意", "no, don't proceed").
_CLAUSE = r"(?:^|[\n.!;:,–—]|\s-)\W*"  # where a sentence or a clause opens
_SENTENCE = r"(?:^|[\n.!;]\s*)\W*"  # where a sentence opens
_ENDS = r"(?:\s*[\n.,;:!?…—–]|\s*$)"  # where a clause ends
_ASKING = r"(?:can|could|would|will|shall|should|may|might|is|are|was|were|did|does)"  # a question's first word
_HOW_MANY = r"(?:an?|one|two|three|four|five|ten|fifteen|twenty|thirty|a few|a couple of|some|\d+)"  # "give me 5 min"
DEFAULT_REFUSALS = (  # apostrophes as phones and keyboards write them: ' ’ ‘ ´ ʼ
    # any word of refusing, holding off, negating or deferring, anywhere: "Yes. Do NOT submit.", "I can't confirm
    # yet", "yes, not yet", "Nah", "confirm tomorrow"; and a question ("Can you confirm the amount first?")
    r"\b(?:no|not|nope|nah|never|do not|stop|wait|hold|hang on|cancel\w*|rather|refuse\w*|decline\w*)\b|\?",
    r"n['’‘´ʼ]t\b|\b(?:dont|cant|wont|didnt|doesnt|isnt|arent|wasnt|havent|hasnt|shouldnt|wouldnt|couldnt)\b",
    r"\b(?:actually|on second thought|never ?mind|changed my mind|anymore|scratch|forget|jk|kidding|first|later)\b",
    r"\b(?:tomorrow|before|after|until|think|maybe|but|except|unless|only if|don)\b",  # deferring, a condition
    r"\b(?:tonight|soon|eventually|pending|next (?:week|month|year|time)|ask (?:my|him|her|them))\b",
    r"\bin (?:an?|\d+|a few|a couple of) (?:sec|second|min|minute|hour|day|week|month|moment|bit|while)s?\b",
    r"\b(?:at \d+(?::\d\d)? ?(?:am|pm)?|on (?:mon|tues|wednes|thurs|fri|satur|sun)day)\b",  # "at 5pm", "on Monday"
    r"\b(?:cannot|abort\w*|halt\w*|cease\w*|deny|denies|denied|reject\w*|object\w*|nothing|none|neither|nor)\b",
    # refusing, taking back, a condition (verbs that may be the side effect itself, skip, undo, pause, withdraw,
    # are not: "Yes, revert the deploy" confirms rollback_deploy)
    r"\b(?:refrain\w*|retract\w*|nay|revok\w*|take back|by mistake|unable|hesita\w*|if|once|when|though|however)\b",
    # confirming later, or with someone else: "Let me confirm with my wife", "I need to confirm first"
    r"\b(?:let me|need to|have to|going to|gonna|i'?ll|will|must) confirm\b|\bconfirm(?:ing)? with (?:him|her|them)\b",
    r"\bconfirm(?:ing)? with (?:my|his|her|our|their|the) (?:wife|husband|partner|boss|manager|team|family|spouse)\b",
    # a question without its mark: a sentence or clause that opens with a verb before its subject ("Could you
    # confirm the amount", "OK, should I proceed", "OK.Should I", "Yes - is it safe", "does the customer sign", a
    # new line, "Yes, does the customer need to sign"), which "Yes, will do", "Yes. Would be great", "Yes, is the
    # right one" and "Yes, do it" do not
    rf"{_CLAUSE}(?:{_ASKING}|am|has|had)\s+(?:i|you|we|it|he|she|they|that|this|there)\b",
    rf"{_SENTENCE}{_ASKING}\s+(?:the|my|your|our|his|her|its|their|a|an)\b",  # "Does the fee", not "Yes, had a look"
    rf"{_CLAUSE}(?:do|have)\s+(?:i|you|we|he|she|they)\b",
    rf"{_CLAUSE}(?:can|could|would|will|shall|should|may|might|did|does)\s+(?:the|my|your|our|his|her|their|a|an)\b",
    # asking the agent to confirm something, not confirming: "Please confirm the amount" as the whole reply's start
    # (after a yes, "Yes, please confirm the refund" confirms), "confirm which card"
    r"^\W*(?:please|pls|plz|kindly)\s+(?:re-?)?confirm\w*\s+(?:the|my|your|our|his|her|their|this|that|these|those)\b",
    r"\bconfirm\w*\s+(?:whether|which|who|where|why|how)\b",
    r"\b(?:pas|não|nao|nein|nicht|non|nee|niet)\b",  # other languages' no (their verbs match confirm\w*)
    # Japanese, whose 同意 and 確認 are the default's words: not (同意しません, 同意できない), no, stop, wait,
    # cancel, on second thought, later, refused, opposed
    r"ません|ない|いいえ|いや|やめ|止め|待って|まって|キャンセル|やっぱり|後で|あとで|だめ|ダメ|拒否|反対",
    r"才怪|改天|下次再|下次吧|下周再|下星期再|等会儿|等一会|等會兒|回头再|回頭再|以后再|以後再|晚些再|过两天|過兩天",
    # no, wait, cancel, later, but in other languages whose verbs the default words match (confirmo, je confirme)
    r"\b(?:espera|espere|esperad|canc[eé]l\S*|pero|attendez|attends|aber|warte|warten)\b|mañana|demain|amanhã",
    r"нет|стоп|подожд|отмен|아니|잠깐|취소|(?:^|\s)(?:لا|انتظر|إلغاء)(?:$|\s|[،,.!؟])",
    r"不|否|别|別|没|沒|勿|莫|拒绝|拒絕|算了|取消|等一下|等等|稍后|稍後|再说|再說|想想|考虑|考慮|？",
    r"明天|等我|晚点|晚點|再确认|再確認|除非|收回|错了|錯了|问问|問問",  # later, a condition, taken back
    r"吗|嗎|么|麼|嘛|呢|但|可是",  # a question's particle; but
    r"未|无|無",  # not yet, without: 未确认, 无法确认, 确认无效
    # put aside, waiting for someone, instead: "同意回滚，重启先放着", "可以，等负责人回复后再重启", "yes, roll back
    # instead" confirm another action than the one called, or none yet; "可以个屁" refuses. (Words of sequence,
    # 之后, 以后, and 等 alone, as in 等于 or "…等", are not refusing words: "可以，之后把收据发我" confirms; nor are
    # verbs that may be the action itself, pause, postpone, 暂停, 暂缓: see above.)
    r"放着|放著|个屁|個屁|而是",
    r"等(?:到|他|她|我们|我們|他们|他們|领导|領導|负责人|負責人|经理|經理|主管)",  # waiting for someone first
    r"等(?:通知|消息|回复|回覆|审批|審批|批准|上线|上線|发布|發布)",  # ... or something
    r"\b(?:instead|other than)\b",  # (rather is refusing already)
    r"\b(?:nvm|disregard\w*|scrap|ignore\w*|wrong|oops|mistake\w*|ne|rien|jamais|nunca|nada)\b",  # taken back
    # holding off, taking back or disagreeing in other words: "yes, give me 5 minutes", "yes, one sec", "yes, I'll
    # get back to you", "second thoughts", "let me sleep on it", "yes, just joking", "go ahead — I disagree",
    # "Proceed: negative."; what ends a clause only where the words also say a yes ("a second refund", "leave it to
    # you", "the negative balance", "a joke gift")
    rf"\bgive me (?:{_HOW_MANY} )?(?:sec|second|min|minute|moment|hour|mo)s?\b",
    rf"{_CLAUSE}(?:just |wait )?(?:an?|one|1) (?:sec|second|min|minute|moment)s?{_ENDS}",
    r"\b(?:get back to|sleep on|let you know|hang tight|take (?:it|that) back|second thoughts?|second[- ]guess\w*)\b",
    r"\b(?:reconsider\w*|disagree\w*|(?:just )?joking|j/k|psyche?)\b|\b(?:a|my|bad) joke\b",
    r"\b(?:check|talk|speak) (?:with|to) (?:my|his|her|our|their|the) (?:wife|husband|partner|boss|manager|team"
    r"|family|spouse)\b",
    rf"\bleave it{_ENDS}",
    rf"(?:{_CLAUSE}|\ba )negative{_ENDS}",  # "Proceed: negative.", "that's a negative"; not "the negative balance"
    # not understanding, asking for time or care ("yes idk", "yes, lemme check", "gimme a min", "with caution"); a
    # question that opens with its word is `_QUESTION_WORD`
    r"\b(?:idk|dunno|unsure|confused|confusing|explain|caution\w*)\b|\b(?:let me|lemme) (?:check|see|ask|look|think)\b",
    rf"\bgimme (?:{_HOW_MANY} )?(?:sec|second|min|minute|moment|bit|while|hour|day)s?\b",
    r"\b(?:holds|holding|held) (?:on|off)\b",  # "hold" alone is above
)
_QUESTION_WORD = re.compile(  # "yes, which card will it go to", "Yes how long will it take", "yes (why)"; not "Yes,
    # what you said is right" nor "what a relief" (Python's re: RE2 has no lookahead). Bounded runs only (`\W{0,8}`):
    # a run of thousands of commas is not read again from each of them
    r"(?:(?:^|[\n.!;:,–—(]|\s-)\W{0,8}|\b(?:yes|yeah|yep|ok|okay|sure|fine|ahead)\W{1,8})"
    r"(?:(?:and|so|but|also|btw|then|um|uh)\W{1,8})?"
    r"(?:which|what|why|how|where|who|whom|whose)\b(?!\s+(?:i|you|we|he|she|they|a|an)\b)"
)
# Fail closed: a message that both confirms and refuses is no confirmation, even where a person would read a yes
# ("yes, no rush", "可以，不要忘了发票"): a missed confirmation fails a case someone can look at, a refusal taken for
# one passes a side effect the user declined.


# Refusing words that are also what a call does: "Yes, cancel my subscription" confirms `cancel_subscription`, and
# refuses any tool whose name does not hold the word.
_NAMED_ACTIONS = {  # but where the word asks to wait or to leave it: "Yes, hold on a second", "stop asking", "cancel
    # that" as the whole clause (not "cancel that order", nor "a hold on the account")
    "cancel": re.compile(rf"\bcancel\w*+(?!\s+(?:that|everything){_ENDS})"),  # possessive: "cancelling that" is
    "stop": re.compile(r"\bstop\w*+(?!\s+(?:asking|talking)\b)"),  # not "cancellin" and "g that"
    "hold": re.compile(r"(?<=\ba )hold\w*|(?<=\bthe )hold\w*|\bhold\w*+(?!\s+(?:on|off|up)\b)"),
}

_NOT_CONFIRMING = re.compile(  # the default pattern's words inside a noun: a confirmation code, email, number ...
    r"(?i)\bconfirmations? (?:numbers?|no\b|code|e-?mail|id\b|link|page|message|text|sms|letter|receipt|#)"
    r"|[确確][认認](?:码|碼|邮件|郵件|函|书|書|短信|链接|鏈接)"  # not 号 nor 单: 确认号码无误, 确认单笔退款 confirm
    r"|確認(?:メール|番号|コード)|同意[书書]|可以理解"  # confirmation email, number, code; consent form; understandable
    # "I got the confirmation", "thanks for the confirmation": a thing, not a yes ("you have the confirmation",
    # "consider this a confirmation" are one); and a status read out ("the page says Confirmed", not "I said confirm")
    r"|(?i:(?<!have )(?<!this )\b(?:the|a|an|no|any) confirmations?\b)"
    r"|(?i:\b(?:got|get|received|receive|sent|send|saw|see|need|want|waiting for|wait for) (?:your |my )"
    r"confirmations?\b)"
    r"|(?i:(?<!\bi )(?<!\bwe )\b(?:says|said|shows?|showed|shown|reads|marked(?: as)?|status(?: is| was)?:?)\s+\W?"
    r"confirm\w*)"
)
_AGREEING = re.compile(  # what agrees though it holds a refusing word ("no problem, go ahead", "特别好")
    r"\b(?:no problem|not a problem|no worries|as soon as (?:possible|you can))\b|\bwhy not\b\??"  # urgency
    r"|特别|不错|不客气|区别|分别|没问题|没错|没关系|不用担心"
    r"|无误|無誤|无问题|無問題|特別|不錯|沒問題|沒錯|沒關係"  # "确认无误": confirmed, nothing wrong
    r"|問題ない|問題ありません|問題ございません|かまいません|構いません|かまわない|構わない"  # no problem, I don't mind
    r"|すみません|申し訳ありません|申し訳ございません|間違いありません|間違いない|差し支えありません|差し支えない"
    r"|異存ありません|異存はありません"  # sorry, that's right, no objection
    r"|\bmais oui\b"  # French "but of course"
)


class CheckLimit(Exception):
    """A check hit MAX_CHECK_STEPS (it fails with this message, the other checks run) or its case hit
    MAX_CASE_STEPS. `limit` says which, without the advice that follows it."""

    def __init__(self, limit: str, advice: str) -> None:
        super().__init__(f"{limit}; {advice}")
        self.limit = limit


@dataclass
class CaseWork:
    """What one case's checks have spent over its trials, in comparisons and query steps."""

    spent: int = 0

    @property
    def over(self) -> bool:
        return self.spent > MAX_CASE_STEPS


_CASE_SPENT = (
    f"stopped: this case's checks took more than {MAX_CASE_STEPS:,} steps (comparisons and query steps) over its "
    "trials, the most diagbot spends on one case",
    "fewer expected items, policies, queries or trials would do",
)
_CHECK_SPENT = (
    f"stopped after {MAX_CHECK_STEPS:,} comparisons, the limit for one check on one run",
    "the case asks for more than diagbot compares (fewer expected items, policies or criteria would do)",
)
CASE_LIMIT = "; ".join(_CASE_SPENT)  # what a check stopped by its case's budget says


@dataclass(frozen=True)
class Confirmation:
    """What counts as a user's confirmation: the suite's `confirmation-pattern`, else the default one, whose matches
    do not count in a message that also refuses."""

    pattern: Regex
    refusals: tuple[Regex, ...]

    @property
    def hint(self) -> str:
        """What a user's reply needs, for a message saying that one was no confirmation."""
        if not self.refusals:
            return " (it does not match the suite's confirmation-pattern)"
        return (
            " (the default pattern wants yes, confirm, proceed, go ahead, 确认, 是的, 同意 or 可以, and no word of "
            "refusing or question beside it; a suite's confirmation-pattern sets another)"
        )

    @classmethod
    def of(cls, pattern: str | None) -> Confirmation:
        if pattern is None:
            return cls(compile_regex(DEFAULT_CONFIRMATION), tuple(compile_regex(r) for r in DEFAULT_REFUSALS))
        return cls(compile_regex(f"(?i){pattern}"), ())  # matched case-folded, so it is folded too ("OK" is "ok")

    def confirms(self, text: str, named: tuple[str, ...] = ()) -> bool:
        """The pattern matches the message as written or NFKC case-folded, and (default only) it does not refuse.
        A message too long to read whole is no confirmation. `named`: the words of _NAMED_ACTIONS that the tool
        needing the confirmation names, which do not refuse its call."""
        if len(text) > MAX_MATCHED_CHARS:
            return False
        folded = fold(text, lines=True).text
        if not self._matches(text, folded):
            return False
        return not self.refuses(text, folded, named)

    def _matches(self, text: str, folded: str) -> bool:
        """The pattern matches the message as written or folded; for the default one, not counting its words
        inside a noun ("my confirmation number is 5", 确认码, 可以理解), which say no yes."""
        if self.refusals:
            text, folded = _NOT_CONFIRMING.sub(" ", text), _NOT_CONFIRMING.sub(" ", folded)
        return bool(self.pattern.search_text(text) or self.pattern.search_text(folded))

    def refuses(self, text: str, folded: str | None = None, named: tuple[str, ...] = ()) -> bool:
        """(default pattern only) The message refuses: it cancels a confirmation given before it. A message too
        long to read whole refuses. `folded`: the text already NFKC case-folded."""
        return self.refusal(text, folded, named) is not None

    def refusal(
        self, text: str, folded: str | None = None, named: tuple[str, ...] = (), earliest: bool = False
    ) -> str | None:
        """What in the message refuses (`refuses`): a word of refusing or question found (`earliest`: the first in
        the text, else the first any refusal finds), as folded, or why the message as a whole does; None when
        nothing does."""
        if not self.refusals:
            return None
        if len(text) > MAX_MATCHED_CHARS:
            return f"more than {MAX_MATCHED_CHARS:,} characters, too long to read whole"
        folded = fold(text, lines=True).text if folded is None else folded  # fold drops invisible characters
        folded = _AGREEING.sub(" ", folded)
        for word in named:
            folded = _NAMED_ACTIONS[word].sub(" ", folded)
        data = folded.encode("utf-8", "replace")
        spans = itertools.chain((refusal.search(data) for refusal in self.refusals), _asking(folded))
        found = min((s for s in spans if s is not None), default=None) if earliest else next(filter(None, spans), None)
        if found is None:
            return None
        start, end = found
        first, last = max(0, start - 40), min(len(data), end + 40)  # the whole word ("don't", not "don"), within 40
        wordly = _WORDLY.fullmatch
        while start > first and wordly(data[start : start + 1]) and wordly(data[start - 1 : start]):
            start -= 1
        while end < last and wordly(data[end - 1 : end]) and wordly(data[end : end + 1]):
            end += 1
        said = data[start:end].decode("utf-8", "replace").strip()
        return json.dumps((said.strip(_PUNCTUATION) or said)[:40], ensure_ascii=False)

    def why_not(self, text: str, named: tuple[str, ...] = ()) -> str:
        """Why a user's last message is no confirmation, for the failure that quotes it: the word that took its
        confirming word back, or a confirmation before it, else what would confirm."""
        if not self.refusals or len(text) > MAX_MATCHED_CHARS:
            return self.hint
        folded = fold(text, lines=True).text
        refused = self.refusal(text, folded, named, earliest=True)
        if refused is None:
            return self.hint
        if self._matches(text, folded):
            return (
                f" (it has {refused}, which the default pattern reads as refusing or asking, so the confirming word "
                "beside it does not count; a suite's confirmation-pattern sets what counts)"
            )
        return (
            f" (it has {refused}, which the default pattern reads as refusing or asking: it takes back any "
            "confirmation before it, and the default pattern wants yes, confirm, proceed, go ahead, 确认, 是的, "
            "同意 or 可以 with no such word beside it; a suite's confirmation-pattern sets what counts)"
        )


def _asking(folded: str) -> Iterator[tuple[int, int] | None]:
    """Where a question that opens with its word is (`_QUESTION_WORD`), in the UTF-8 bytes the refusals search."""
    asked = _QUESTION_WORD.search(folded)
    if asked is None:
        yield None
        return
    start = len(folded[: asked.start()].encode("utf-8", "replace"))
    yield start, start + len(asked.group().encode("utf-8", "replace"))


_WORDLY = re.compile(rb"[A-Za-z0-9']")  # what a quoted English word goes on through (bytes of folded text)
_PUNCTUATION = " \t.,;:!-–—…。，；：！"  # around a quoted refusal (`". is this"`), but for a lone `?`


def named_actions(tool: str) -> tuple[str, ...]:
    """The words of _NAMED_ACTIONS that begin a word of a tool's name (`cancel_order`, `orderCancel`: cancel; not
    `household_refund`)."""
    words = [w.casefold() for w in re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", tool[:200])]
    return tuple(word for word in _NAMED_ACTIONS if any(w.startswith(word) for w in words))


@dataclass
class Trial:
    """One run as the checks see it, with what several checks share computed once."""

    run: Run
    rules: dict[str, Check]  # the suite's named rules
    confirmation: Confirmation
    initial_state: dict[str, Any]  # the case's `initial_state`, else its `state`
    exact: bool = False  # the case's `args_match: exact`
    citation_pattern: str | None = None  # the suite's `citation-pattern`
    steps: int = 0  # comparisons made by the check running now
    recalls: dict[str, tuple[float, list[Any]]] | None = None  # evidence recall per metric name, once computed
    accuracy: tuple[float | None, list[Citation]] | None = None  # citation accuracy and the citations off gold
    # (id(check), must) -> its verdict, once
    ruled: dict[tuple[int, bool], tuple[bool | None, str]] = field(default_factory=dict)
    queried: int = 0  # JMESPath steps this run's queries have taken, all checks together
    work: CaseWork = field(default_factory=CaseWork)  # shared by the case's trials

    @cached_property
    def calls_by_tool(self) -> dict[str, list[ToolCall]]:
        """The run's calls grouped by tool, in order: the policy checks look up their tool's calls here instead of
        walking every call once per policy."""
        grouped: dict[str, list[ToolCall]] = {}
        for call in self.run.calls:
            grouped.setdefault(call.tool, []).append(call)
        return grouped

    def spend(self, count: int) -> None:
        self.steps += count
        if self.steps > MAX_CHECK_STEPS:  # the work asked for is not done, so it is not the case's either
            raise CheckLimit(*_CHECK_SPENT)
        self.work.spent += count
        if self.work.over:
            raise CheckLimit(*_CASE_SPENT)

    @cached_property
    def answer(self) -> Folded:
        return without_markup(fold(self.run.answer))

    @cached_property
    def answer_bytes(self) -> int:
        """The UTF-8 bytes of the answer a regex searches."""
        return len(searched(self.run.answer).encode("utf-8", "replace"))

    @cached_property
    def replies_bytes(self) -> int:
        """The UTF-8 bytes of the replies a regex searches, each as far as it reads one."""
        return sum(len(searched(text).encode("utf-8", "replace")) for text in self.run.assistant_texts)

    @cached_property
    def replies(self) -> Folded:
        return without_markup(fold("\n".join(self.run.assistant_texts)))

    @cached_property
    def citations(self) -> rag.Cited:
        """The answer's citations: those the run records, then those `citation-pattern` finds in the answer (in
        the part a regex reads), each once, at most MAX_CITATIONS; and what was left unread, if anything."""
        found = dict.fromkeys(self.run.citations)
        unread, complete = "", True
        if self.citation_pattern is not None:
            answer = self.run.answer
            matches, complete = find_named(
                self.citation_pattern, searched(answer), MAX_CITATIONS, "doc_id", ("doc_id", "passage_id")
            )
            for groups in matches:
                found.setdefault(Citation(groups["doc_id"] or "", groups.get("passage_id") or None))
            if len(answer) > MAX_MATCHED_CHARS:
                unread = f"only the first {MAX_MATCHED_CHARS:,} characters of the answer were searched for citations"
            elif not complete and len(matches) < MAX_CITATIONS:
                unread = (
                    f"the search for citations stopped after reading {MAX_SCANNED_CHARS:,} characters, each search "
                    "for the next one counting the rest of the answer"
                )
        if len(found) > MAX_CITATIONS or not (complete or unread):  # more distinct citations than are compared
            unread = f"the answer cites more than {MAX_CITATIONS:,} sources and only {MAX_CITATIONS:,} were read"
        return rag.Cited(list(found)[:MAX_CITATIONS], unread)

    @cached_property
    def final_state(self) -> dict[str, Any]:
        """The recorded final state, else the initial state with every recorded state change applied."""
        if self.run.final_state is not None:
            return self.run.final_state
        return self.replayed_state

    @cached_property
    def replayed_state(self) -> dict[str, Any]:
        state = dict(self.initial_state)
        for change in self.run.state_changes:
            set_state(state, change.key, change.after)
        return state


def _path(state: dict[str, Any], key: str) -> tuple[list[str], str]:
    """Where a state change's key leads: the keys of the objects a dotted key (`order.status`) passes through, from
    the state down, and the key it names in the last of them. A key the state holds as it is written is that key,
    and so is the rest of a dotted one from where the objects end. The key is split once, so a long one costs its
    length."""
    if "." not in key or key in state:
        return [], key
    parts = key.split(".")
    target, depth = state, 0
    while depth < len(parts) - 1 and isinstance(inner := target.get(parts[depth]), dict):
        target, depth = inner, depth + 1
    return parts[:depth], ".".join(parts[depth:]) if depth else key


def set_state(state: dict[str, Any], key: str, value: Any) -> None:
    """A state change applied, a dotted key as a path into the objects the state holds (`_path`), as a transition
    item's dotted key reads it; objects on the way are copied, never changed in place (the initial state is the
    case's)."""
    walked, last = _path(state, key)
    target = state
    for part in walked:
        target[part] = target = dict(target[part])
    target[last] = value


def state_at(state: dict[str, Any], key: str, missing: Any) -> Any:
    """The value a state change's key reads in `state`, as `set_state` writes it; `missing` where it leads nowhere."""
    walked, last = _path(state, key)
    for part in walked:
        state = state[part]
    return state.get(last, missing)


def trial(
    run: Run,
    case: AgentCase,
    rules: dict[str, Check],
    confirmation: Confirmation,
    citation_pattern: str | None = None,
    work: CaseWork | None = None,
) -> Trial:
    """The run as the checks see it; `work` is what the case's earlier trials have spent (a new case: nothing)."""
    initial = dict(case.initial_state if case.initial_state is not None else case.state or {})
    exact = case.evaluator_config.args_match == "exact"
    return Trial(
        run, rules, confirmation, initial, exact=exact, citation_pattern=citation_pattern, work=work or CaseWork()
    )


def _names(calls: list[Any]) -> str:
    names = [c if isinstance(c, str) else c.tool for c in calls]
    more = f", … {len(names) - _NAMES_SHOWN} more" if len(names) > _NAMES_SHOWN else ""
    return "[" + ", ".join(names[:_NAMES_SHOWN]) + more + "]"


def _capped(messages: list[str], most: int = _LISTED, count: int | None = None) -> list[str]:
    """The first `most` of `count` failures (all of `messages` when not given), then how many more there were."""
    count = len(messages) if count is None else count
    if count <= most:
        return messages
    return [*messages[:most], f"and {count - most} more like these"]


class _Listed:
    """A check's failures as `_capped` lists them, each message written only when it is one of those listed: a
    check over thousands of calls and items counts the rest instead of writing them. `wants()` counts a failure
    and says whether to write it with `add`."""

    def __init__(self) -> None:
        self.written: list[str] = []
        self.count = 0

    def wants(self) -> bool:
        self.count += 1
        return self.count <= _LISTED

    def add(self, message: str) -> None:
        self.written.append(message)

    def messages(self) -> list[str]:
        return _capped(self.written, _LISTED, self.count)


def _call_label(run: Run, call: ToolCall) -> str:
    return f"{call.tool} (call {run.call_number(call)})"


def _count(calls: list[ToolCall]) -> str:
    return f"{len(calls)} call{'' if len(calls) == 1 else 's'}"


def same(expected: Any, actual: Any, t: Trial, forbidding: bool = False) -> bool:
    """Whether a value the case expects (an `equals`, a precondition's value, a transition's `from` or `to`) is
    met, by argument matching as everywhere (extra keys allowed unless the case's `args_match` is exact; 1 == 1.0,
    True != 1); the trial is charged the values compared. In what a case forbids (`forbidding`), extra keys are
    always allowed and an expected `{}` is any object (elsewhere an empty one): either way the reading that can
    fail the case wins."""
    return args_fit(expected, actual, t.exact and not forbidding, t.spend, empty_exact=not forbidding)


def query(expr: str, t: Trial) -> tuple[bool, Any, str | None]:
    """(ran, value, why not): a JMESPath query on the trial's final state, bounded; a query error is reported,
    never raised. Its steps count towards the run's MAX_RUN_QUERY_STEPS, and past it the query is not run."""
    if t.work.over:
        return False, None, CASE_LIMIT.removeprefix("stopped: ")
    if t.queried >= MAX_RUN_QUERY_STEPS:
        return (
            False,
            None,
            (
                f"not run: this case's queries on this run took {t.queried:,} steps, the most for one run is "
                f"{MAX_RUN_QUERY_STEPS:,}; fewer or narrower queries would do"
            ),
        )
    try:
        return True, run_query(expr, t.final_state), None
    except QueryLimitError as exc:
        return False, None, str(exc)
    except (JMESPathError, TypeError, ValueError, RecursionError) as exc:
        return False, None, f"the query failed ({str(exc)[:100]})"
    finally:
        steps = query_steps()
        t.queried += steps
        t.work.spent += steps


Verdict = tuple[bool | None, str]
"""A check object's verdict: whether it holds (None: it cannot be decided on this run, which fails a check that
must hold and one that must not), and what was found."""


def _left_out_of_final(expr: str, t: Trial) -> list[str]:
    """The initial state's keys that a query names (outside its text and JSON literals) and the recorded final_state
    leaves out, though no recorded state change removed them (at most 3)."""
    final = t.run.final_state
    if final is None:
        return []
    named = set(_NAMES.findall(_LITERALS.sub(" ", expr)))  # a Query: at most MAX_QUERY_CHARS
    removed = {k for k, v in t.replayed_state.items() if v is None}  # set to null by a recorded change
    return [one_line(k, 60) for k in t.initial_state if k in named and k not in final and k not in removed][:3]


_NAMES = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LITERALS = re.compile(r"'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`")  # JMESPath's raw strings and JSON literals


def state_holds(check: StateQuery, t: Trial, forbidding: bool = False) -> Verdict:
    """`forbidding`: the check is one that must not hold, so `equals` is matched with extra keys allowed whatever
    `args_match` says, and `{}` is any object: the reading that can fail the case wins, as in `same`."""
    label = check.id or check.expr
    # a run that records nothing of its state ends in the initial state updated by its changes (none), as issue 12
    # says, when no call of it succeeded; once one did (or its messages were not recorded, so its calls are not
    # known), a call may have changed the state unseen (a refund's tool saying "refunded"): undecided, as what must
    # not hold always is there, since it could otherwise never fail
    if (
        t.run.final_state is None
        and not t.run.state_changes
        and not t.run.records_state
        and (forbidding or t.run.unrecorded or any(not call.failed for call in t.run.calls))
    ):
        return None, (
            f"{label}: the run records no final_state and no state changes, so its final state is not known "
            "(record final_state, or state_change steps)"
        )
    ran, value, why = query(check.expr, t)
    if not ran:
        return None, f"{label}: {why}"
    left_out = _left_out_of_final(check.expr, t)
    if left_out:  # read as null because the recording dropped the key, not because the state lost it
        return None, (
            f"{label}: the run's final_state leaves out {', '.join(left_out)}, which the initial state has, so its "
            "value at the end is not known (record the whole final_state)"
        )
    if check.has_expected:
        exact = t.exact and not forbidding
        # under the label; of the whole state (`@`), its keys are the paths (`flights[1]`, not `@.flights[1]`)
        path = "" if check.expr == "@" and not check.id else label
        why = args_mismatch(check.equals, value, exact, path, t.spend, empty_exact=not forbidding, root=label)
        return (True, f"{label} is {show(value)}") if why is None else (False, why)
    return truthy(value), f"{label} is {show(value)}" + ("" if truthy(value) else " (not true)")


# --- rule checks -------------------------------------------------------------------------------------------------


def _contains(spec: list[str] | AnyAll, text: Folded, what: str) -> Verdict:
    """Not finding a needle in a text that was cut proves nothing: undecided."""
    needles = spec if isinstance(spec, list) else spec.any_of or spec.all_of or []
    found = text.matches(needles)
    has, lacks = ("contain", "lack") if what == "the replies" else ("contains", "lacks")
    unread = None if text.cut else False
    if isinstance(spec, AnyAll) and spec.any_of is not None:
        if found:
            return True, f"{what} {has} {show(found[0])}"
        return unread, f"{what} {has} none of {show(needles)}" + (_UNREAD if text.cut else "")
    seen = set(found)
    missing = [n for n in needles if n not in seen]
    if missing:
        return unread, f"{what} {lacks} {show(missing)}" + (_UNREAD if text.cut else "")
    return True, f"{what} {has} {show(needles)}"


_UNREAD = f" (only its first {MAX_TEXT_CHARS:,} characters were read, so it may hold them further on)"


def _not_contains(spec: str | list[str], text: Folded) -> Verdict:
    found = text.matches([spec] if isinstance(spec, str) else spec)
    if found:
        return False, f"the answer contains {show(found)}"
    if text.cut:  # not in the part read proves nothing about the rest
        return None, "the answer contains none of them in the part read" + _UNREAD
    return True, "the answer contains none of them"


def searched(text: str) -> str:
    """What of a text a regex reads: all of it, or its first MAX_MATCHED_CHARS characters and the one after them
    (so that `\\b` at the cut sees the real next character)."""
    return text if len(text) <= MAX_MATCHED_CHARS else text[: MAX_MATCHED_CHARS + 1]


def _matches(pattern: str, text: str) -> bool | None:
    """The pattern matches the text as written or in NFKC form without INVISIBLE characters: RE2's digit class is
    ASCII, so a card number in full-width digits (１２３４...) got past a rule of 16 digits, as one with a zero-width
    space inside did. None: no match, but the NFKC form was longer than a search reads, so a match past it is not
    ruled out."""
    regex, part = compile_regex(pattern), searched(text)
    if regex.search_text(part):
        return True
    if part.isascii() and (part.isprintable() or INVISIBLE.search(part) is None):  # no NUL, ESC, DEL
        return False
    folded, cut = _nfkc(part)
    return True if regex.search_text(folded) else None if cut else False


@functools.lru_cache(maxsize=4)
def _nfkc(text: str) -> tuple[str, bool]:
    """The text in NFKC form, cut to what a search reads (a character may unfold into 18), and whether it was cut;
    computed once per answer however many patterns search it."""
    seen = INVISIBLE.sub("", text)  # a zero-width space inside a card number hid it from `\d{16}`
    if not unicodedata.is_normalized("NFKC", seen):
        seen = unicodedata.normalize("NFKC", seen)
    seen = ascii_digits(seen).translate(_DIGITS_AND_DASHES)  # dingbat digits (➀ ❶ ➊), dashes as "-" (U+2011)
    if _MARKED_DIGIT.search(seen):  # a keycap or a strike-through on a digit: the digit is what is read
        seen = _MARKED_DIGIT.sub("", seen)
    return seen[:MAX_MATCHED_CHARS], len(seen) > MAX_MATCHED_CHARS


_MARKED_DIGIT = re.compile("(?<=[0-9])[\u0300-\u036f\u1ab0-\u1aff\u20d0-\u20ff\ufe20-\ufe2f]+")
_DIGITS_AND_DASHES = {
    **{start + n: str(n + 1) for start in (0x2776, 0x2780, 0x278A) for n in range(10)},
    **DASHES,
    **dict.fromkeys((0x2013, 0x2014, 0x2015), "-"),  # a regex reads every dash as "-" too
}


_UNFOLDED = f" (its NFKC form is longer than the {MAX_MATCHED_CHARS:,} characters a search reads)"
_END_ANCHOR = re.compile(r"(?<!\\)(?:\\\\)*(?:\$|\\z)")


def _cut(text: str) -> str:
    return f" (only its first {MAX_MATCHED_CHARS:,} characters were searched)" if len(text) > MAX_MATCHED_CHARS else ""


def _too_long(pattern: str, answer: str, what: str = "the answer") -> str | None:
    """Why a regex cannot be decided on a long answer: `$` (or `\\z`) would match where the search stops."""
    if len(answer) > MAX_MATCHED_CHARS and _END_ANCHOR.search(pattern):
        return f"{what} is too long to check /{pattern}/, which looks for its end{_cut(answer)}"
    return None


def _answer_matches(pattern: str, answer: str, what: str = "the answer") -> Verdict:
    """Not found in the part of a long answer that was searched proves nothing: undecided, saying why."""
    undecided = _too_long(pattern, answer, what)
    if undecided:
        return None, undecided
    found = _matches(pattern, answer)
    if found:
        return True, f"{what} matches /{pattern}/"
    unread = len(answer) > MAX_MATCHED_CHARS or found is None
    return None if unread else False, f"{what} does not match /{pattern}/{_cut(answer)}"


def _answer_not_matches(pattern: str, answer: str, what: str = "the answer") -> Verdict:
    undecided = _too_long(pattern, answer, what)
    if undecided:
        return None, undecided
    found = _matches(pattern, answer)
    if found:
        return False, f"{what} matches /{pattern}/"
    if len(answer) > MAX_MATCHED_CHARS or found is None:
        return None, f"{what} may match /{pattern}/ past the part searched{_cut(answer) or _UNFOLDED}"
    return True, f"{what} does not match /{pattern}/"


def _replies_match(pattern: str, replies: list[str], must: bool) -> Verdict:
    """Whether some reply matches (`must`), or none does: each reply is searched as the answer is, so `^` and `$`
    are its own start and end. A reply that cannot be decided leaves the check undecided unless another decides
    it."""
    undecided = None
    for number, reply in enumerate(replies, 1):
        what = f"reply {number} of {len(replies)}"
        verdict, said = _answer_matches(pattern, reply, what) if must else _answer_not_matches(pattern, reply, what)
        if verdict is must:
            return verdict, said
        if verdict is None:
            undecided = undecided or said
    if undecided:
        return None, undecided
    if not replies:
        return not must, "the agent wrote no reply"
    return not must, f"no reply matches /{pattern}/"


def _called(spec: str | ToolArgs, t: Trial, forbidding: bool = False) -> Verdict:
    """`forbidding`: the call must not happen, so a call with more arguments than the forbidden ones is it too,
    whatever `args_match` says, and one whose arguments could not be read may be it (undecided)."""
    tool, args = (spec, None) if isinstance(spec, str) else (spec.tool, spec.args)
    exact = t.exact and not forbidding
    calls = t.calls_by_tool.get(tool, [])
    if not calls:
        return False, f"{tool} was not called"
    if args is None:
        return True, f"{tool} was called ({len(calls)}×)"
    for call in calls:
        t.spend(1)
        if call.args_problem is None and args_fit(args, call.args, exact, t.spend):
            return True, f"{_call_label(t.run, call)} was called with {show(args)}"
    unread = next((call for call in calls if call.args_problem is not None), None)
    if forbidding and unread is not None:
        return None, f"{_call_label(t.run, unread)} may have {show(args)}: {unread.args_problem}"
    why = args_mismatch(args, calls[0].args, exact) if calls[0].args_problem is None else calls[0].args_problem
    return False, f"no call of {tool} has {show(args)} ({_call_label(t.run, calls[0])}: {why})"


def _not_called(spec: str | list[str], t: Trial) -> tuple[bool, str]:
    tools = [spec] if isinstance(spec, str) else spec
    names = set(tools)
    hit = next((c for c in t.run.calls if c.tool in names), None)
    return (False, f"{_call_label(t.run, hit)} was called") if hit else (True, f"none of {show(tools)} was called")


def _before(spec: Any, t: Trial) -> tuple[bool, str]:
    tools = [c.tool for c in t.run.calls]
    if spec.then not in tools:
        return False, f"{spec.then} was not called"
    if spec.first in tools[: tools.index(spec.then)]:
        return True, f"{spec.first} was called before {spec.then}"
    return False, f"{spec.then} was called before any call of {spec.first}"


def _at_most(value: float | None, limit: float, what: str) -> Verdict:
    if value is None:
        return None, f"the run records no {what}"
    shown = f"{value:g}"
    return (True, f"{what} {shown} (at most {limit:g})") if value <= limit else (False, f"{what} {shown} > {limit:g}")


RULES: dict[str, Callable[[Any, Trial], Verdict]] = {
    "answer_contains": lambda spec, t: _contains(spec, t.answer, "the answer"),
    "answer_not_contains": lambda spec, t: _not_contains(spec, t.answer),
    "answer_matches": lambda spec, t: _answer_matches(spec, t.run.answer),
    "answer_not_matches": lambda spec, t: _answer_not_matches(spec, t.run.answer),
    "replies_contain": lambda spec, t: _contains(spec, t.replies, "the replies"),
    "replies_matches": lambda spec, t: _replies_match(spec, t.run.assistant_texts, True),
    "replies_not_matches": lambda spec, t: _replies_match(spec, t.run.assistant_texts, False),
    "tool_called": _called,  # these two are called with `forbidding` by run_rule
    "tool_not_called": _not_called,
    "called_before": _before,
    "max_tool_calls": lambda limit, t: _at_most(len(t.run.calls), limit, "tool calls"),
    "max_turns": lambda limit, t: _at_most(t.run.turns, limit, "assistant turns"),
    "max_duration_ms": lambda limit, t: _at_most(t.run.least_duration_ms, limit, "duration ms"),
    "state": state_holds,
}


def run_rule(check: Check, t: Trial, must: bool = True) -> Verdict:
    """A check object's verdict on the trial, worked out once however often the case names it (a suite rule can
    be listed many times), its text search charged to the check's budget: a needle costs a step per 1,000
    characters of the text it is looked for in. `must`: whether the check must hold (else it must not), which
    decides how loosely `tool_called` and `state` match arguments."""
    key = (id(check), must)
    done = t.ruled.get(key)
    if done is None:
        t.spend(1 + _text_cost(check, t))
        if t.run.unrecorded and check.key in _OF_MESSAGES:
            done = t.ruled[key] = None, t.run.unrecorded
        elif check.key in _FORBIDDING:
            done = t.ruled[key] = _FORBIDDING[check.key](check.value, t, not must)
        else:
            done = t.ruled[key] = RULES[check.key](check.value, t)
    return done


_FORBIDDING: dict[str, Callable[[Any, Trial, bool], Verdict]] = {"tool_called": _called, "state": state_holds}


_OF_MESSAGES = frozenset({
    "answer_contains", "answer_not_contains", "answer_matches", "answer_not_matches", "replies_contain",
    "replies_matches", "replies_not_matches", "max_turns",
})  # fmt: skip  # the checks a run without its messages cannot decide


def _text_cost(check: Check, t: Trial) -> int:
    key = check.key
    if key in ("answer_matches", "answer_not_matches"):  # RE2's slow path: ~5 ns per instruction per byte
        return 1 + t.answer_bytes * compile_regex(check.value).program // 200
    if key in ("replies_matches", "replies_not_matches"):
        return 1 + t.replies_bytes * compile_regex(check.value).program // 200
    if key in ("answer_contains", "answer_not_contains", "replies_contain"):
        text = t.replies.text if key == "replies_contain" else t.answer.text
        return _needles(check.value) * (1 + len(text) // 1000)
    return 0


def _needles(spec: Any) -> int:
    if isinstance(spec, AnyAll):
        return len(spec.any_of or spec.all_of or [])
    return len(spec) if isinstance(spec, list) else 1


# --- case checks -------------------------------------------------------------------------------------------------


def _scoped(case: AgentCase, calls: list[ToolCall]) -> list[ToolCall]:
    config = case.evaluator_config.tool_sequence
    if config.scope == "side_effect":
        tools = case.side_effect_tools
        calls = [c for c in calls if c.tool in tools]
    elif isinstance(config.scope, list):
        scope = set(config.scope)
        calls = [c for c in calls if c.tool in scope]
    return [c for c in calls if not c.failed] if config.ignore_failed else calls


def _fits(exact: bool, t: Trial) -> Callable[[Any, ToolCall], bool]:
    def fits(item: Any, call: ToolCall) -> bool:
        t.spend(1)
        tool, args = (item, None) if isinstance(item, str) else (item.tool, item.args)
        if tool != call.tool:
            return False
        return args is None or (call.args_problem is None and args_fit(args, call.args, exact, t.spend))

    return fits


def tool_sequence(case: AgentCase, t: Trial) -> list[str]:
    expected = case.expected_tool_sequence or []
    config = case.evaluator_config.tool_sequence
    calls = _scoped(case, t.run.calls)
    fits = _fits(t.exact, t)

    def said() -> str:  # the start of every failure message, written only for a failure
        return f"expected {_names(expected)} ({config.match}), calls in scope {_names(calls)}"

    if config.match == "subsequence":
        pairing = ordered_matching(expected, calls, fits)
        missing = next((i for i, p in enumerate(pairing) if p is None), None)
        if missing is None:
            return []
        item = expected[missing]
        near = _nearest(item, calls, t.exact)
        return [f"{said()}: no call matches item {missing + 1} ({_names([item])[1:-1]}) in order{near}"]
    if config.match == "strict":
        if len(calls) != len(expected):
            return [f"{said()}: {_count(calls)}, expected exactly {len(expected)}"]
        wrong = next((i for i, (e, c) in enumerate(zip(expected, calls, strict=True)) if not fits(e, c)), None)
        if wrong is None:
            return []
        near = _nearest(expected[wrong], calls, t.exact, wrong)
        return [f"{said()}: call {wrong + 1} does not match item {wrong + 1}{near}"]
    if config.match == "subset":
        pairing = max_matching(calls, expected, lambda c, e: fits(e, c), t.spend)
        extra = [i for i, p in enumerate(pairing) if p is None]
        if not extra:
            return []
        first, taken = calls[extra[0]], set(pairing)  # an item of its tool left unpaired says where they differ
        named = next(
            (e for n, e in enumerate(expected)
             if n not in taken and not isinstance(e, str) and e.tool == first.tool and e.args),
            None,
        )  # fmt: skip
        near = "" if named is None else _nearest(named, calls, t.exact, extra[0])
        return [f"{said()}: not expected: {_names([calls[i] for i in extra])[1:-1]}{near}"]
    if config.match == "unordered" and len(calls) != len(expected):
        return [f"{said()}: {_count(calls)}, expected exactly {len(expected)}"]
    pairing = max_matching(expected, calls, fits, t.spend)  # unordered (same count) and superset
    unmatched = [expected[i] for i, p in enumerate(pairing) if p is None]
    if not unmatched:
        return []
    near = _nearest(unmatched[0], calls, t.exact)
    return [f"{said()}: no distinct call matches {_names(unmatched)[1:-1]}{near}"]


def _nearest(item: Any, calls: list[ToolCall], exact: bool, start: int = 0) -> str:
    """For an expected item with arguments: how the first call of its tool from `start` on differs, as
    `; order_lookup (call 2 in scope): order_id: expected "A", got "B"`. Empty when there is no such call or the
    item names no arguments."""
    if isinstance(item, str) or item.args is None:
        return ""
    found = next(((n, c) for n, c in enumerate(calls[start:], start + 1) if c.tool == item.tool), None)
    if found is None:
        return ""
    number, call = found
    why = call.args_problem or args_mismatch(item.args, call.args, exact)
    return f"; {item.tool} (call {number} in scope): {why}" if why else ""


def expected_args(case: AgentCase, t: Trial) -> list[str]:
    exact = t.exact
    ignore_failed = case.evaluator_config.tool_sequence.ignore_failed
    failures = []
    for tool, given in (case.expected_args or {}).items():
        sets = given if isinstance(given, list) else [given]
        if not sets:
            continue  # no set to match: it holds (validate warns that it asks for nothing)
        made = t.calls_by_tool.get(tool, ())
        calls = [c for c in made if not (ignore_failed and c.failed)]
        if not calls:
            expected = f"expected {len(sets)} call{'s' * (len(sets) != 1)} with set arguments"
            failures.append(
                f"{tool} was never called ({expected})" if not made else
                f"{tool} has no successful call: its {len(made)} failed call{'s' * (len(made) != 1)} "
                f"{'are' if len(made) != 1 else 'is'} left out by tool_sequence.ignore_failed ({expected})"
            )  # fmt: skip
            continue

        def fits(args: dict[str, Any], call: ToolCall) -> bool:
            t.spend(1)
            return call.args_problem is None and args_fit(args, call.args, exact, t.spend)

        pairing = max_matching(sets, calls, fits, t.spend)
        taken = {id(call) for call in pairing if call is not None}
        for args, paired in zip(sets, pairing, strict=True):
            if paired is None:
                listed = len(failures) < _LISTED  # only a listed failure is worth the search for the nearest call
                free = [c for c in calls if id(c) not in taken] or calls
                near = _closest_call(args, free, exact, t) if listed else calls[0]
                why = (
                    near.args_problem
                    or args_mismatch(args, near.args, exact)
                    or "matches, but is paired with another expected set"
                )
                failures.append(f"no distinct call of {tool} has {show(args)} ({_call_label(t.run, near)}: {why})")
    return _capped(failures)


def _closest_call(args: dict[str, Any], calls: list[ToolCall], exact: bool, t: Trial) -> ToolCall:
    """The call a mismatch message is best about: the first of those whose arguments come nearest the expected
    set, by its top-level keys (two points for a key whose value fits, one for a key present; a call whose
    arguments did not parse comes last)."""

    def fitting(call: ToolCall) -> int:
        got = call.args if call.args_problem is None else None
        if not isinstance(got, dict):
            return -1
        t.spend(1 + len(args))
        return sum(1 + args_fit(value, got[key], exact, t.spend) for key, value in args.items() if key in got)

    return max(calls, key=fitting)  # max keeps the first of equals


def unavailable_tools(case: AgentCase, t: Trial) -> list[str]:
    allowed = case.tool_names or set()
    failures = _Listed()
    for call in t.run.calls:
        if call.tool not in allowed and failures.wants():
            failures.add(f"{_call_label(t.run, call)} is not in available_tools")
    return failures.messages()


def tool_args(case: AgentCase, t: Trial) -> list[str]:
    from diagbot.kinds.agent.schema_check import first_error  # jsonschema, imported only when a case needs it

    schemas = case.tool_schema or {}
    failures = []
    for call in t.run.calls:
        if call.tool not in schemas:
            continue
        try:
            why = call.args_problem or first_error(schemas[call.tool], call.args, t.spend)
        except CheckLimit as exc:  # the budget is spent: this call is unchecked, and so are those after it
            failures.append(
                f"{_call_label(t.run, call)}: checking it against tool_schema.{call.tool} {exc.limit}; a simpler "
                "schema (fewer anyOf/oneOf branches or references, a shorter enum, no uniqueItems on long arrays) "
                "would do"
            )
            break
        if why:
            failures.append(f"{_call_label(t.run, call)}: {why}")
    return _capped(failures)


@dataclass
class _Successes:
    """Where a tool's successful calls were: the first one's position and model output, the first position of one
    whose result came with it (`made` unknown), and (position, seen) of each whose result came back."""

    first: int
    first_made: int | None
    inline: int | None = None
    answered: list[tuple[int, int]] = field(default_factory=list)

    def add(self, position: int, call: ToolCall) -> None:
        if call.made is None:
            self.inline = position if self.inline is None else self.inline
        elif call.seen is not None:
            self.answered.append((position, call.seen))

    def seen_before(self, position: int, made: int, t: Trial) -> bool:
        """Whether a call before `position` had its result back before model output `made`."""
        for at, seen in self.answered:
            t.spend(1)
            if at >= position:
                return False
            if seen < made:
                return True
        return False


Before = tuple[ToolCall, int, dict[str, Any], dict[str, ToolCall]]
"""A call of a tool with preconditions: the call, its position, the state just before it (the keys the
preconditions name), and, when the run records no state changes, the first successful call of each acting tool
before it (each may have changed the state unseen; `_changed_unseen` says which key it may have changed)."""


def _before_calls(case: AgentCase, t: Trial) -> tuple[list[Before], dict[str, _Successes], set[str] | None]:
    """Each call of a tool with preconditions (`Before`), where each tool was called successfully, and the state
    keys that may have changed unseen (None: all of them, a run that records no state): one walk of the run."""
    tools = {p.tool for p in case.policies if p.preconditions}
    keys = {k for p in case.policies for item in p.preconditions for k in item}
    state = {k: v for k, v in t.initial_state.items() if k in keys}
    blind = not t.run.records_state and not t.run.state_changes  # chat: a refund's result says "refunded" only
    # a run that records its state changes, but whose final_state says a key ended otherwise than they leave it as
    # a precondition reads it (no change of `status` recorded, yet it ends `refunded`): that key changed unseen
    final, replayed = t.run.final_state or {}, t.replayed_state
    drifted = set()
    for item in () if blind else (i for p in case.policies for i in p.preconditions):
        for key, want in item.items():
            if key != "called" and key in final and same(want, final[key], t) != same(want, replayed.get(key), t):
                drifted.add(key)
    acting = case.side_effect_tools if blind or drifted else set()  # marked so, or held to a side_effect_policy
    done: dict[str, ToolCall] = {}  # acting tool -> its first successful call so far
    successes: dict[str, _Successes] = {}
    found: list[Before] = []
    for position, step in enumerate(t.run.steps):
        if isinstance(step, StateChange):
            if step.key in keys or step.key.partition(".")[0] in keys:  # `order.status` changes `order`
                set_state(state, step.key, step.after)
        elif isinstance(step, ToolCall):
            if step.tool in tools:
                t.spend(1 + len(state) + len(done))
                found.append((step, position, dict(state), dict(done)))
            if not step.failed:
                successes.setdefault(step.tool, _Successes(position, step.made)).add(position, step)
                if step.tool in acting:
                    done.setdefault(step.tool, step)
    return found, successes, None if blind else drifted


def _transition_keys(case: AgentCase) -> dict[str, set[str]]:
    """The state keys each tool's policies' transitions name (`order.status` names `order`)."""
    named: dict[str, set[str]] = {}
    for p in case.policies:
        keys = named.setdefault(p.tool, set())
        for given in (p.allowed_state_transition, p.forbidden_state_transition):
            items = p.transitions(given)
            keys.update(i.key.partition(".")[0] for i in items if isinstance(i, Transition) and i.key is not None)
    return named


def _changed_unseen(call: ToolCall, key: str, done: dict[str, ToolCall], named: dict[str, set[str]]) -> ToolCall | None:
    """An earlier successful call that may have changed `key` where the run records no state change: one of a tool
    whose policy's transitions name the key (`named`: `_transition_keys`), or of the same acting tool when its
    policies name no keys (a second refund after the first); one made in the same model output as `call` had not
    run when it was made."""
    for tool, earlier in done.items():
        if earlier.made is not None and earlier.made == call.made:
            continue
        keys = named.get(tool, set())
        if key in keys or (tool == call.tool and not keys):
            return earlier
    return None


def _called_first(want: str, call: ToolCall, position: int, successes: dict[str, _Successes], t: Trial) -> str:
    """Why the precondition `{called: want}` is unmet for the call at `position`, or "". Where the format says when
    results came back, a successful call counts only if its result came back before this call was made: one made
    together with it (in the same model output), or answered only later, was not known to the agent yet."""
    done = successes.get(want)
    if done is None or done.first >= position:
        return f"{want} was not successfully called before it"
    if call.made is None or (done.inline is not None and done.inline < position):
        return ""
    if done.seen_before(position, call.made, t):
        return ""
    if done.first_made == call.made:
        return f"{want} was called together with it (in the same model output), so its result was not known yet"
    return f"{want}'s result had not come back before it was made, so the agent had not seen it"


def preconditions(case: AgentCase, t: Trial) -> list[str]:
    failures = _Listed()
    walked, successes, unseen_keys = _before_calls(case, t)
    by_tool: dict[str, list[Before]] = {}
    for entry in walked:
        by_tool.setdefault(entry[0].tool, []).append(entry)
    named = _transition_keys(case) if any(entry[3] for entry in walked) else {}  # once, not per call and key
    for policy in case.policies:
        for call, position, state, done in by_tool.get(policy.tool, ()):
            for item in policy.preconditions:
                for key, want in item.items():
                    t.spend(1 + len(done))
                    watched = key != "called" and (unseen_keys is None or key in unseen_keys)
                    unseen = _changed_unseen(call, key, done, named) if done and watched else None
                    if key == "called" and isinstance(want, str) and len(item) == 1:
                        why = _called_first(want, call, position, successes, t)
                        if why and failures.wants():
                            failures.add(f"{_call_label(t.run, call)}: {why}")
                    elif unseen is not None:  # the state the case starts in may be gone: undecided, so unmet
                        if failures.wants():
                            why = (
                                "the run records no state changes (record state_change steps, as diagbot's own "
                                "trace does)"
                                if unseen_keys is None
                                else f"the run's final_state has another {key} than its state changes leave, so a "
                                "change of it went unrecorded (record every state_change step)"
                            )
                            failures.add(
                                f"{_call_label(t.run, call)}: {key} just before it is not known: "
                                f"{_call_label(t.run, unseen)}, a side effect, succeeded before it, and {why}"
                            )
                    elif key not in state:
                        if failures.wants():
                            failures.add(
                                f"{_call_label(t.run, call)}: {key} is not in the state before it (expected "
                                f"{show(want)})"
                            )
                    elif not same(want, state[key], t) and failures.wants():
                        nested = isinstance(want, dict | list) and isinstance(state[key], dict | list)
                        explained = args_mismatch(want, state[key], t.exact, key, empty_exact=True) if nested else None
                        failures.add(
                            f"{_call_label(t.run, call)}: {key} is {show(state[key])} just before it, expected "
                            f"{show(want)}" + (f" ({explained})" if explained else "")
                        )
    return failures.messages()


def confirmations(case: AgentCase, t: Trial) -> list[str]:
    tools = {p.tool for p in case.policies if p.confirmation_required}
    if t.run.unrecorded and any(c.tool in tools for c in t.run.calls):  # what the user said is not known
        return [t.run.unrecorded]
    failures = _Listed()
    # for each set of refusing words the tools needing confirmation name (usually one): whether a user message
    # since the agent's last text confirmed, not taken back by a later one
    named_by = {tool: named_actions(tool) for tool in tools}
    confirmed = dict.fromkeys(named_by.values(), False)
    replied: str | None = None  # the last thing the user said since the agent's last text
    spoke = False  # the agent has said something to the user: before that there is nothing to confirm
    said_with = 0  # calls still to come of an agent's message whose text is said with them: it counts after them
    beside, beside_left = "", 0  # the text of the agent's message whose calls come next, and how many are to come
    for step in t.run.steps:
        if said_with and not isinstance(step, ToolCall):  # its calls are past: now its text is the agent's last
            confirmed, replied, said_with, spoke = dict.fromkeys(confirmed, False), None, 0, True
        if isinstance(step, Message):
            beside, beside_left = (step.text, step.calls) if step.role == "assistant" else ("", 0)
        if isinstance(step, Message) and step.text:
            if step.role == "assistant" and step.calls and not _asks(step.text):
                said_with = step.calls  # "Submitting it now." beside the call asks nothing: the call is confirmed
            elif step.role == "assistant":
                confirmed, replied, spoke = dict.fromkeys(confirmed, False), None, True
            elif step.role == "user":
                replied = step.text
                for named, was in confirmed.items():
                    t.spend(1 + len(step.text) // 1000)  # a search of the text, as text criteria are charged
                    if t.confirmation.confirms(step.text, named):
                        confirmed[named] = True
                    elif was and t.confirmation.refuses(step.text, None, named):
                        confirmed[named] = False
        elif (
            isinstance(step, ToolCall)
            and step.tool in tools
            and not (spoke and confirmed[named_by[step.tool]])
            and failures.wants()
        ):
            failures.add(_unconfirmed(t, step, spoke, replied, named_by[step.tool], beside if beside_left else ""))
        if beside_left and isinstance(step, ToolCall):
            beside_left -= 1
        if said_with and isinstance(step, ToolCall):
            said_with -= 1
            if not said_with:
                confirmed, replied, spoke = dict.fromkeys(confirmed, False), None, True
    return failures.messages()


def _unconfirmed(
    t: Trial, call: ToolCall, spoke: bool, replied: str | None, named: tuple[str, ...], beside: str
) -> str:
    """Why a call needing confirmation was not confirmed. Before any text of the agent there was nothing to
    confirm: the user's own request, whatever its words ("refund it, go ahead"), confirms no action the agent put
    to them. `beside`: the text of the agent's message that makes the call; when no user reply came after an
    earlier text of the agent, the user had no turn to answer it."""
    if beside.strip() and (replied is None or not spoke):
        quoted = json.dumps(excerpt(one_line(beside, 200), 60), ensure_ascii=False)
        return (
            f"{_call_label(t.run, call)} was made together with the agent's text {quoted} (one model turn), so the "
            "user had no chance to confirm it; the agent must say what it will do, and wait for a yes before the call"
        )
    if not spoke:
        return (
            f"{_call_label(t.run, call)} was made before any text of the agent that the run records, so nothing "
            "was confirmed; the agent must say what it will do and get a yes before the call (a history trimmed to "
            "its last messages loses what the agent said before them)"
        )
    why = "" if replied is None else t.confirmation.why_not(replied, named)
    return f"{_call_label(t.run, call)} was made without a user confirmation after the agent's last message" + (
        "" if replied is None else f": the user's {_reply(replied)} is not one{why}"
    )


_ASKS = re.compile(
    r"[?？吗呢]|confirm|approv|permission|consent|reply|respond|let me know|tell me|okay with|ok with|shall i|should i"
    r"|would you|do you want|確認|确认|同意|是否|请回复"
    # questions without a mark, where a sentence or clause ends: Japanese, Korean and Chinese forms; and a few
    # other languages' "shall I"
    r"|(?:でしょうか|ますか|ですか|까요|습니까|好不好|要不要|行不行|可不可以|对不对|是不是)(?=[。．.,，!！\s」]|$)"
    r"|¿|soll ich|dois-je",
    re.IGNORECASE,
)
"""What asks, in the text an agent writes beside its own calls: a question ("Shall I refund $500?"), or a request
for a confirmation ("Please confirm.", "请确认"). An agent that asks and calls at once has not waited for the
answer, so a yes before it does not count."""


def _asks(text: str) -> bool:
    """`_ASKS` in the text; a text too long to read whole asks, as far as is known."""
    return len(text) > MAX_MATCHED_CHARS or _ASKS.search(text) is not None


def _reply(text: str) -> str:
    return f"reply {json.dumps(excerpt(one_line(text, 200), 60), ensure_ascii=False)}"


_ABSENT = object()  # an argument path the call does not have


def _path_value(args: Any, path: str) -> Any:
    value = args
    for step in arg_path(path) or ():
        if isinstance(value, list) and isinstance(step, str) and step.isascii() and step.isdigit():
            step = int(step)  # `items.0.id` reads as `items[0].id`
        if isinstance(step, int):
            if not isinstance(value, list) or step >= len(value):
                return _ABSENT
        elif not isinstance(value, dict) or step not in value:
            return _ABSENT
        value = value[step]
    return value


def _written(value: Any, t: Trial, written: dict[int, str]) -> str:
    if id(value) not in written:
        written[id(value)] = _canonical(value, t)
    return written[id(value)]


def _canonical(value: Any, t: Trial) -> str:
    """One text per JSON value as argument matching compares them (keys sorted, 1.0 written as 1), and, since a
    repeat must not hide behind a spelling, a text as its NFKC form without surrounding spaces, every decimal digit
    as its ASCII one (`"Zoë"` composed or not is one name), and a text of a number as that number where it is
    written as one (`"123"`, `"+123"`, `"１２３"` and `"123.0"` are `123`, `"1.5"` is `1.5`; `"1.10"`, a version, is
    no `1.1`, and `"007"`, an id, no `7`). Each part is charged to the trial's check budget before it is written (a
    string by its length)."""
    t.spend(1 + (len(value) // 1000 if isinstance(value, str) else 0))
    if value is _ABSENT:
        return "\0absent"  # no JSON text starts with a NUL
    if isinstance(value, str):
        value = ascii_digits(unicodedata.normalize("NFKC", value).strip())
        if _NUMBER.fullmatch(value):
            whole, _, fraction = value.partition(".")
            if not fraction.strip("0"):
                value = int(whole)
            elif repr(float(value)) == value.lstrip("+"):  # 1.5 is 1.5; "1.10", a version, is no 1.1
                value = float(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_canonical(v, t)}" for k, v in sorted(value.items())) + "}"
    elif isinstance(value, list):
        return "[" + ",".join(_canonical(v, t) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


_NUMBER = re.compile(r"[-+]?(?:0|[1-9][0-9]{0,49})(?:\.[0-9]{1,50})?")  # "007" stays an id, not 7


def duplicates(case: AgentCase, t: Trial) -> list[str]:
    failures = _Listed()
    for policy in case.policies:
        paths = policy.idempotency_paths
        if not paths:
            continue
        seen: dict[tuple[str, ...], ToolCall] = {}
        done = [call for call in t.calls_by_tool.get(policy.tool, ()) if not call.failed]
        unread = next((call for call in done if call.args_problem is not None), None)
        if unread is not None and len(done) > 1 and failures.wants():  # what it repeats is unknown
            other = done[1] if unread is done[0] else done[0]
            a, b = sorted((unread, other), key=t.run.call_number)
            failures.add(
                f"{_call_label(t.run, a)} and call {t.run.call_number(b)} may repeat {' + '.join(paths)}: call "
                f"{t.run.call_number(unread)}'s {unread.args_problem}"
            )
        for call in done:
            t.spend(1)
            if call.args_problem is not None:
                continue
            values = [_path_value(call.args, path) for path in paths]
            if all(value is _ABSENT for value in values):
                continue  # a call without any of the keys repeats nothing; one without some has them absent
            written: dict[int, str] = {}  # each value once, however many paths name it
            key = tuple(_written(value, t, written) for value in values)
            if key not in seen:
                seen[key] = call
            elif failures.wants():
                shown = ", ".join(
                    f"{p}={'(absent)' if v is _ABSENT else show(v)}" for p, v in zip(paths, values, strict=True)
                )
                failures.add(f"{_call_label(t.run, seen[key])} and call {t.run.call_number(call)} repeat {shown}")
    return failures.messages()


def _fits_transition(item: Transition, change: StateChange, t: Trial, forbidding: bool) -> bool | None:
    """Whether the change is the item's transition; None when it would be, but where the key started is unknown."""
    if (item.key is not None and item.key != change.key) or not same(item.to, change.after, t, forbidding):
        return False
    return None if change.before is UNRECORDED else same(item.from_, _start(change), t, forbidding)


def _start(change: StateChange) -> Any:
    """Where the change started, as `from` values are compared with it: a key absent at the start is null."""
    return None if change.before is ABSENT else change.before


def _transition(change: StateChange) -> str:
    if change.before is UNRECORDED:
        before = "(unknown start)"
    elif change.before is ABSENT:
        before = "(absent at the start)"
    else:
        before = show(change.before)
    return f"{one_line(change.key, 100)}: {before} → {show(change.after)}"


def _net_changes(t: Trial, declared: bool) -> list[StateChange] | None:
    """The state changes transitions are checked against: those the run records, and, when it records a final
    state, one change for each top-level key of it whose value differs from where the recorded changes (or the
    initial state) left it (formats other than diagbot's record no steps of state); None when the run says nothing
    of its state (diagbot's format says it changed nothing by recording no change)."""
    final = t.run.final_state
    missing = ABSENT if declared else UNRECORDED  # a key the declared initial state lacks did not exist yet
    recorded = _started(t, missing)
    if final is None:
        return recorded or ([] if t.run.records_state else None)
    # each key from where the run last left it (its last recorded change, else the initial state) to the final
    # state, when they differ: a change the steps do not show (none -> pending recorded, refunded at the end)
    last = {change.key: change.after for change in recorded}
    before = t.initial_state  # a key the final state leaves out is not known to have changed
    unexplained = []
    for key, value in final.items():
        if key in last:
            was = last[key]
        elif key in before:
            was = before[key]
        else:
            unexplained.append(StateChange(key, missing, value))
            continue
        if not args_fit(was, value, True, t.spend):  # whether the value changed at all: equality (so `exact`)
            unexplained.append(StateChange(key, was, value))
    return recorded + unexplained


def _started(t: Trial, missing: Any) -> list[StateChange]:
    """The run's state changes, each change whose step left out `from` starting where the state was just before
    it (the initial state, updated by the changes before it); `missing` for a key not known there. A recorded
    `from` that the state just before it contradicts (a declared initial state that lacks the key says it was
    absent) is kept, and the change from that state is added beside it: which of the two the run made is not
    known, so both are checked."""
    if not t.run.state_changes:
        return t.run.state_changes
    state = dict(t.initial_state)
    found = []
    for change in t.run.state_changes:
        was = state_at(state, change.key, _NOWHERE)
        if change.before is FROM_STATE:
            change = StateChange(change.key, missing if was is _NOWHERE else was, change.after)
        elif was is not _NOWHERE:
            if not args_fit(change.before, was, True, t.spend):
                found.append(StateChange(change.key, was, change.after))
        elif missing is ABSENT and change.before is not None:  # the declared state lacks it: it did not exist yet
            found.append(StateChange(change.key, ABSENT, change.after))
        head = change.key.partition(".")[0]
        outer = state.get(head)  # a dotted key's change into an object is a change of that object too
        set_state(state, change.key, change.after)
        found.append(change)
        if head != change.key and isinstance(outer, dict) and state.get(head) is not outer:
            found.append(StateChange(head, outer, state[head]))
    return found


def _nested(changes: list[StateChange], items: list[Transition], spend: Callable[[int], None]) -> list[StateChange]:
    """For each item whose key is a dotted path into an object-valued change (`order.status` into a change of
    `order`) and names no change of its own, the change at that path, when its value changed."""
    found = []
    for key in sorted({i.key for i in items if i.key is not None and "." in i.key} - {c.key for c in changes}):
        for change in changes:
            spend(1)  # a case's dotted keys against a run's changes: counted, as every comparison is
            if not key.startswith(change.key + "."):
                continue
            path = key[len(change.key) + 1 :].split(".")
            before = change.before if change.before is UNRECORDED else _dig(change.before, path)
            after = _dig(change.after, path)
            if before is ABSENT and after is ABSENT:
                continue  # the path leads nowhere on either side
            if before is ABSENT or before is UNRECORDED or after is ABSENT or not args_fit(before, after, True, spend):
                found.append(StateChange(key, before, None if after is ABSENT else after))
    return found


def _dig(value: Any, path: list[str]) -> Any:
    """The value at a dotted path into nested objects; ABSENT where the path does not lead."""
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return ABSENT
        value = value[part]
    return value


_NOWHERE = object()  # a key the state does not hold
UNRECORDED = object()
"""Where a net change started when the case declares no initial state: then a transition checked on it that
depends on its start is undecided, and fails saying what to add."""
ABSENT = object()
"""Where a net change started when the case's declared initial state lacks its key: the key did not exist yet, and
a `from` of null is its start."""
_START = "the case declares no initial_state, so where {key} started is unknown; add initial_state with {key}"


def _either(verdicts: Iterable[bool | None]) -> bool | None:
    """Any, over three values: True if one is True, else None if one is undecided, else False."""
    found: bool | None = False
    for verdict in verdicts:
        if verdict:
            return True
        if verdict is None:
            found = None
    return found


def transitions(case: AgentCase, t: Trial) -> list[str]:
    failures = _Listed()
    changes = _net_changes(t, case.initial_state is not None or case.state is not None)
    silent = not t.run.state_changes and t.run.final_state is None  # a run that records nothing of its state
    # a case whose declared state has one key says what keyless items speak of: they govern every change of it,
    # not only those from one of their `from` values (`approved → refunded` under `new → paid` alone is not
    # allowed), whatever other keys the run records
    sole = next(iter(t.initial_state)) if len(t.initial_state) == 1 else None
    for policy in case.policies:
        forbidden = [i for i in policy.transitions(policy.forbidden_state_transition) if isinstance(i, Transition)]
        allowed = [i for i in policy.transitions(policy.allowed_state_transition) if isinstance(i, Transition)]
        # diagbot's format says a run changed nothing by recording no change, but not once the policy's tool was
        # called and succeeded: a recording of calls alone would pass any transition that call made
        called = silent and any(c.tool == policy.tool and not c.failed for c in t.run.calls)
        if changes is None and not called and not t.run.unrecorded:  # checked on the calls of its tool: none made
            continue
        if changes is None or called:
            if (forbidden or allowed) and failures.wants():
                failures.add(
                    f"the {policy.tool} policy's state transitions cannot be checked: the run records no state "
                    "changes and no final_state" + (f", though {policy.tool} was called" if called else "")
                )
            continue
        for key in _left_out(policy.tool, forbidden + allowed, sole, changes, t):
            if failures.wants():
                failures.add(
                    f"the {policy.tool} policy's transitions of {one_line(key, 100)} cannot be checked: "
                    f"{policy.tool} was called, but the run's final_state leaves {one_line(key, 100)} out and no "
                    "state change records it; record it in final_state"
                )
        nested = _nested(changes, forbidden + allowed, t.spend)
        for n, change in enumerate(changes + nested):
            t.spend(1 + len(forbidden) + len(allowed))
            known = change.before is not UNRECORDED
            start = "" if known else f": {_START.format(key=one_line(change.key, 100))}"
            path = n >= len(changes)  # a path into a change the keyless items have judged already
            hit = _either(_fits_transition(i, change, t, True) for i in forbidden if not path or i.key is not None)
            if hit is not False and failures.wants():
                failures.add(
                    f"{_transition(change)} is a forbidden transition ({policy.tool} policy)" if hit else
                    f"{_transition(change)} cannot be ruled out as a forbidden transition ({policy.tool} policy){start}"
                )  # fmt: skip
            governed = [i for i in allowed if i.key is not None and i.key == change.key]
            # the items that govern this change: read loosely, so that more changes are held to an allowed list
            keyless = [
                i
                for i in allowed
                if i.key is None
                and not path
                and (change.key == sole or not known or same(i.from_, _start(change), t, True))
            ]
            fit = _either(_fits_transition(i, change, t, False) for i in governed + keyless)
            if fit is False and keyless and not known:
                fit = None  # a keyless item governs the changes from its `from`: this one's start is unknown
            if (governed or keyless) and fit is not True and failures.wants():
                failures.add(
                    f"{_transition(change)} is not an allowed transition ({policy.tool} policy)" if fit is False else
                    f"{_transition(change)} cannot be confirmed as an allowed transition ({policy.tool} policy){start}"
                )  # fmt: skip
    return failures.messages()


def _left_out(tool: str, items: list[Transition], sole: str | None, changes: list[StateChange], t: Trial) -> list[str]:
    """The keys a policy's transition items govern that a run which called its tool successfully leaves out of its
    recorded final_state, with no change of them recorded: a key left out is not known to have changed, so a
    forbidden transition of it would pass unseen."""
    final = t.run.final_state
    if final is None or not any(not c.failed for c in t.calls_by_tool.get(tool, ())):
        return []
    known = set(final) | {c.key.partition(".")[0] for c in changes}  # `order.status` is known where `order` is
    keys = dict.fromkeys(i.key if i.key is not None else sole for i in items)
    return [k for k in keys if k is not None and k.partition(".")[0] not in known]


def _recorded(value: Any) -> bool:
    """An audit field holds something: null, a blank text (invisible characters and blank-looking ones aside, as
    the Braille blank), and a list or object of nothing but those (`[null]`, `{text: ""}`) record nothing. Nested
    values are looked at up to _AUDIT_LOOKED_AT of them; past it, the field counts as holding something."""
    todo, looked = [value], 0
    while todo:
        node = todo.pop()
        looked += 1
        if looked > _AUDIT_LOOKED_AT:
            return True
        if isinstance(node, str):
            if shows_something(node):
                return True
        elif isinstance(node, dict):
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
        elif node is not None:
            return True  # a number or a boolean
    return False


_AUDIT_LOOKED_AT = 10_000
_NO_AUDIT = (
    " (the call records no audit at all: only diagbot's own trace format records one, as a tool_call step's audit)"
)


def audits(case: AgentCase, t: Trial) -> list[str]:
    failures = _Listed()
    for policy in case.policies:
        for call in t.calls_by_tool.get(policy.tool, ()):
            t.spend(1 + len(policy.audit_fields))
            missing = [f for f in policy.audit_fields if not _recorded((call.audit or {}).get(f))]
            if missing and failures.wants():
                failures.add(
                    f"{_call_label(t.run, call)}: the audit record lacks {', '.join(missing)}"
                    + (_NO_AUDIT if call.audit is None else "")
                )
    return failures.messages()


_RECORDED: dict[str, Callable[[Run], bool]] = {  # an empty message or a null result records nothing
    "action": lambda run: bool(run.calls) or bool(run.assistant_texts),
    "tool_call": lambda run: bool(run.calls),
    "observation": lambda run: any(c.has_result and _answered(c.result) for c in run.calls),
    "state_change": lambda run: bool(run.state_changes),
    "final_state": lambda run: run.final_state is not None,
}


def _answered(result: Any) -> bool:
    """A tool's result says something: null and a blank text do not ([] and {} do: a search found nothing)."""
    return result is not None and (not isinstance(result, str) or shows_something(result))


def trace_requirement(case: AgentCase, t: Trial) -> list[str]:
    fields = case.trace_requirement.required_fields if case.trace_requirement else []
    return [f"the run records no {field}" for field in fields if not _RECORDED[field](t.run)]


def final_state(case: AgentCase, t: Trial) -> list[str]:
    return _capped([said for check in case.state_checks for holds, said in [state_holds(check, t)] if not holds])


def criteria(case: AgentCase) -> list[tuple[str, int, Check | str, bool]]:
    """Every check object of the case (or rule name) with where it is (field, index) and whether it must hold."""
    found: list[tuple[str, int, Check | str, bool]] = [
        ("rule_checks", i, ref, True) for i, ref in enumerate(case.evaluator_config.rule_checks)
    ]
    for name, must in CRITERIA_FIELDS:
        for i, item in enumerate(getattr(case, name) or ()):
            if isinstance(item, Check):
                found.append((name, i, item, must))
    return found


def _label(name: str, index: int, ref: Check | str, check: Check) -> str:
    """How a failure names its criterion: the check's id (a suite rule's own, too), else the rule's name, else where
    it is in the case."""
    return check.id or (ref if isinstance(ref, str) else f"{name}[{index}]")


def rules(case: AgentCase, t: Trial) -> list[str]:
    failures: dict[str, None] = {}  # each failure once: a rule the case names twice fails once
    listed = criteria(case)
    for n, (name, index, ref, must) in enumerate(listed):
        check = t.rules[ref] if isinstance(ref, str) else ref
        label = _label(name, index, ref, check)
        try:
            holds, said = run_rule(check, t, must)
        except CheckLimit as exc:  # what was judged keeps its verdict; the rest is not judged, and fails
            failures[f"{label}: {exc} ({len(listed) - n} criteria from this one on not judged)"] = None
            break
        if holds is None and not must:  # what must not happen cannot be ruled out: as much a failure as seeing it
            failures[f"{label}: {said} (this must not happen, and it cannot be ruled out)"] = None
        elif holds is None or holds != must:
            failures[f"{label}: {said}" + ("" if must else " (this must not happen)")] = None
    return _capped(list(failures), _RULES_LISTED)


def constraints(case: AgentCase, t: Trial) -> list[str]:
    failures = []
    given, level = case.constraints, case.service_level
    unknown = t.run.unrecorded  # what the answer and the turns are cannot be known
    if given is not None and unknown:
        asked = {"must_include": given.must_include, "must_not_include": given.must_not_include,
                 "max_chars": given.max_chars is not None}  # fmt: skip
        failures += [f"constraints.{name}: {unknown}" for name, ask in asked.items() if ask]
    elif given is not None:
        if given.must_include:  # as answer_contains with a list: all of them
            holds, said = _contains(given.must_include, t.answer, "the answer")
            failures += [] if holds else [f"constraints.must_include: {said}"]
        if given.must_not_include:
            holds, said = _not_contains(given.must_not_include, t.answer)
            failures += [] if holds else [f"constraints.must_not_include: {said}"]
        if given.max_chars is not None and len(t.run.answer) > given.max_chars:
            failures.append(
                f"constraints.max_chars: the answer has {len(t.run.answer):,} characters > {given.max_chars:,}"
            )
    if level is not None:
        if level.max_turns is not None:
            holds, said = (None, unknown) if unknown else _at_most(t.run.turns, level.max_turns, "assistant turns")
            failures += [] if holds else [f"service_level.max_turns: {said}"]
        if level.max_duration_ms is not None:
            holds, said = _at_most(t.run.least_duration_ms, level.max_duration_ms, "duration ms")
            failures += [] if holds else [f"service_level.max_duration_ms: {said}"]
    return failures


def _recalls(case: AgentCase, t: Trial) -> dict[str, tuple[float, list[Any]]]:
    """Each `evidence_recall_at_K` the case asks for: (its value, the required gold items missed), computed once
    per trial (the check and the report's metrics both read it), its work charged to the check's budget."""
    if t.recalls is None:
        gold = case.gold_evidence or []
        ks = {name: k for name in dict.fromkeys(case.evaluation_metrics or []) if (k := rag.recall_k(name))}
        t.spend(sum(len(r.documents) for r in t.run.retrievals) + len(ks) * len(gold))  # a lookup per item
        by_k = rag.recalls(gold, t.run.retrievals, set(ks.values()))
        t.recalls = {name: by_k[k] for name, k in ks.items()}
    return t.recalls


def metrics(case: AgentCase, t: Trial) -> dict[str, float]:
    """The machine-checked RAG metrics the case asks for, on this trial (citation accuracy only when the answer
    cites something)."""
    gold = case.gold_evidence or []
    asked = list(dict.fromkeys(case.evaluation_metrics or []))
    found: dict[str, float] = {}
    if any(g.required for g in gold):
        t.steps = 0
        with contextlib.suppress(CheckLimit):  # over the budget: evidence_recall_low has already said so
            found.update({name: value for name, (value, _) in _recalls(case, t).items()})
    if rag.ACCURACY in asked and gold:
        value = _accuracy(case, t)[0]
        if value is not None:
            found[rag.ACCURACY] = value
    return {name: found[name] for name in asked if name in found}


def _threshold(case: AgentCase, name: str) -> float:
    return case.evaluator_config.thresholds.get(name, rag.DEFAULT_THRESHOLD)


def _labels(items: list[Any]) -> str:
    shown = [rag.label(i) for i in items[:_NAMES_SHOWN]]
    return ", ".join(shown) + (f", … {len(items) - _NAMES_SHOWN} more" if len(items) > _NAMES_SHOWN else "")


def _below(value: float, threshold: float) -> str:
    """`value < threshold` as a failure shows it: the value to two decimals and the threshold as written
    (`0.50 < 1`), with as many more digits as it takes for the value to read below the threshold (`0.999 < 1`,
    never `1.00 < 1`)."""
    limit = f"{threshold:g}" if float(f"{threshold:g}") == threshold else repr(threshold)
    shown = f"{value:.2f}"
    digits = 3
    while float(shown) >= threshold:
        shown = f"{value:.{digits}g}" if digits <= 17 else repr(value)  # repr reads back as the value itself
        digits += 1
    return f"{shown} < {limit}"


def evidence_recall(case: AgentCase, t: Trial) -> list[str]:
    failures = []
    for name, (value, missed) in _recalls(case, t).items():
        k = rag.recall_k(name)
        if value < _threshold(case, name):
            if not t.run.retrievals:
                where = "the run records no retrieval"
            elif not any(r.documents for r in t.run.retrievals):
                count = len(t.run.retrievals)
                where = f"its {count} retrieval{'s' * (count != 1)} returned no documents; missing {_labels(missed)}"
            else:
                where = f"not in the top {k}: {_labels(missed)}"
            failures.append(f"{name} {_below(value, _threshold(case, name))} ({where})")
    return _capped(failures)


def _accuracy(case: AgentCase, t: Trial) -> tuple[float | None, list[Citation]]:
    """Citation accuracy and the citations that point at no gold item, computed once per trial."""
    if t.accuracy is None:
        t.accuracy = rag.accuracy(case.gold_evidence or [], t.citations.citations)
    return t.accuracy


def citation_accuracy(case: AgentCase, t: Trial) -> list[str]:
    if t.run.unrecorded:  # the answer's citations are not known
        return [t.run.unrecorded]
    cited = t.citations
    t.spend(len(case.gold_evidence or []) + len(cited.citations))
    value, wrong = _accuracy(case, t)
    threshold = _threshold(case, rag.ACCURACY)
    if value is not None and value < threshold:
        unread = f"; {cited.unread}" if cited.unread else ""
        return [f"citation_accuracy {_below(value, threshold)} (not gold evidence: {_labels(wrong)}){unread}"]
    if cited.unread:  # the part read is fine, but a citation further on may not be
        read = "no citation" if value is None else f"citation_accuracy {value:.2f}"
        return [f"{read} in the part read, but {cited.unread}: a citation not read may not be gold evidence"]
    return []


def citation_required(case: AgentCase, t: Trial) -> list[str]:
    if t.run.unrecorded:
        return [t.run.unrecorded]
    gold, cited = case.gold_evidence or [], t.citations
    t.spend(len(gold) + len(cited.citations))
    if rag.cites_required(gold, cited.citations):
        return []
    required = [g for g in gold if g.required]
    wanted = f"none of {_labels(required)}" if required else "nothing"
    cites = f"; it cites {_labels(cited.citations)}" if cited.citations else ""
    unread = f" in the part read ({cited.unread})" if cited.unread else ""
    hint = ""
    if not t.run.citations and t.citation_pattern is None:  # only the native format records citations
        hint = "; the run records no citations, so set the suite's citation-pattern to find them in the answer"
    return [f"the answer cites {wanted}{unread} (citation_requirement asks for a citation){cites}{hint}"]


def _asks_metric(test: Callable[[str], bool]) -> Callable[[AgentCase], bool]:
    """A metric the case asks for with a threshold some value can fall below: at 0 it is only computed."""
    return lambda case: (
        case.evaluation_metrics is not None
        and any(test(name) and _threshold(case, name) > 0 for name in case.evaluation_metrics)
    )


@dataclass(frozen=True)
class CaseCheck:
    code: str
    applies: Callable[[AgentCase], bool]
    run: Callable[[AgentCase, Trial], list[str]]


def _asks_args(case: AgentCase) -> bool:
    """expected_args asks for a call: `{tool: []}` asks for nothing (validate warns), so alone it checks nothing."""
    return any(given != [] for given in (case.expected_args or {}).values())


def _asks_sequence(case: AgentCase) -> bool:
    """An empty expected sequence asks something only where it forbids every call (strict, unordered, subset) of a
    scope that holds some."""
    if case.expected_tool_sequence is None:
        return False
    if case.expected_tool_sequence:
        return True
    scope = case.evaluator_config.tool_sequence.scope  # forbidding every call of an empty scope forbids nothing
    if scope == [] or (scope == "side_effect" and not case.side_effect_tools):
        return False
    return case.evaluator_config.tool_sequence.match in ("strict", "unordered", "subset")


def _has_policy(test: Callable[[Any], Any]) -> Callable[[AgentCase], bool]:
    return lambda case: case.side_effect_policy is not None and any(test(policy) for policy in case.policies)


def _has_criteria(case: AgentCase) -> bool:
    """Whether the case has a check object or rule name anywhere `criteria` looks (without labelling them)."""
    if case.evaluator_config.rule_checks:
        return True
    return any(isinstance(item, Check) for name, _ in CRITERIA_FIELDS for item in getattr(case, name) or ())


CHECKS: list[CaseCheck] = [
    CaseCheck(Code.TOOL_SEQUENCE_MISMATCH, lambda c: _asks_sequence(c), tool_sequence),
    CaseCheck(Code.EXPECTED_ARGS_MISMATCH, lambda c: _asks_args(c), expected_args),
    CaseCheck(Code.UNAVAILABLE_TOOL_CALLED, lambda c: c.available_tools is not None, unavailable_tools),
    CaseCheck(Code.TOOL_ARGS_INVALID, lambda c: bool(c.tool_schema), tool_args),
    CaseCheck(Code.PRECONDITION_UNMET, _has_policy(lambda p: p.preconditions), preconditions),
    CaseCheck(Code.CONFIRMATION_MISSING, _has_policy(lambda p: p.confirmation_required), confirmations),
    CaseCheck(Code.DUPLICATE_SIDE_EFFECT, _has_policy(lambda p: p.idempotency_paths), duplicates),
    CaseCheck(
        Code.STATE_TRANSITION_FORBIDDEN,
        _has_policy(
            lambda p: any(
                isinstance(i, Transition)
                for f in (p.allowed_state_transition, p.forbidden_state_transition)
                for i in p.transitions(f)
            )
        ),
        transitions,
    ),
    CaseCheck(Code.AUDIT_MISSING, _has_policy(lambda p: p.audit_fields), audits),
    CaseCheck(
        Code.TRACE_REQUIREMENT_MISSING,
        lambda c: bool(c.trace_requirement and c.trace_requirement.required_fields),
        trace_requirement,
    ),
    CaseCheck(Code.FINAL_STATE_MISMATCH, lambda c: bool(c.state_checks), final_state),
    CaseCheck(Code.RULE_FAILED, _has_criteria, rules),
    CaseCheck(
        Code.CONSTRAINT_FAILED,
        lambda c: bool(
            (
                c.constraints
                and (
                    c.constraints.must_include or c.constraints.must_not_include or c.constraints.max_chars is not None
                )
            )
            or (
                c.service_level
                and (c.service_level.max_turns is not None or c.service_level.max_duration_ms is not None)
            )
        ),
        constraints,
    ),
    CaseCheck(Code.EVIDENCE_RECALL_LOW, _asks_metric(lambda m: rag.recall_k(m) is not None), evidence_recall),
    CaseCheck(Code.CITATION_INACCURATE, _asks_metric(lambda m: m == rag.ACCURACY), citation_accuracy),
    CaseCheck(Code.CITATION_MISSING, lambda c: rag.required_citation(c.citation_requirement), citation_required),
]


def judge(case: AgentCase, t: Trial, checks: list[CaseCheck]) -> list[str]:
    """Every failure of one trial, as `"<code>: <message>"`, in registry order."""
    failures = []
    for check in checks:
        t.steps = 0
        try:
            if t.work.over:  # the case's work is spent: what is left is not run
                raise CheckLimit(*_CASE_SPENT)
            found = check.run(case, t)
        except CheckLimit as exc:
            found = [str(exc)]
        except RecursionError:  # a value of the run nested deeper than the check can walk
            found = ["stopped: a value this check reads is nested too deeply"]
        failures += [f"{check.code}: {message}" for message in found]
    return failures

"""Markdown for people: the PR comment and the job summary, from jinja2 templates in `templates/`.

Python prepares plain rows (already escaped) and the templates lay them out; the `table` filter pads them
into a GitHub table. Comment bodies are kept under GitHub's limit by cutting the least
important sections first (all results, then changes, improvements, regressions) and saying what was cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import jinja2
from pydantic import Field

from diagbot import __version__
from diagbot.core.diff import DiffItem, DiffReport, ItemType
from diagbot.core.models import Output
from diagbot.core.rates import number
from diagbot.core.rates import percent as rate
from diagbot.core.values import cut_utf8, one_line

COMMENT_LIMIT = 65_536 - 128
"""Code points of a comment. GitHub's refusal names 65,536 characters, and a body has been measured refused past
262,144 UTF-8 bytes: this many code points are at most 261,632 bytes, within both. The 128 leave room for the
hidden head-sha line the bot adds when posting."""
CHECK_SUMMARY_LIMIT = 65_535  # check-run output.summary, in bytes of UTF-8
SUMMARY_LIMIT = 700_000  # bytes: $GITHUB_STEP_SUMMARY holds 1 MiB a step, the comment and notes may come with it
CELL_LIMIT = 300
ROW_CAP = 300  # rows per table in a comment; more is unreadable anyway, and the report has everything


MAX_AGE_DAYS = 1_000_000


class BaselineInfo(Output):
    """Where the baseline came from, shown in the footer so reviewers know what they compared against."""

    source: str = "file"  # file | artifact | none
    label: str | None = None  # e.g. a local path
    branch: str | None = None
    sha: str | None = None
    run_id: int | None = None
    run_url: str | None = None
    age_days: float | None = Field(default=None, ge=0, le=MAX_AGE_DAYS)  # shown as days: a number a person reads
    exact: bool | None = None  # the artifact was made from the PR's base commit itself
    missing_reason: str | None = None
    warnings: list[str] = Field(default_factory=list)


class CurrentInfo(Output):
    sha: str | None = None
    ref: str | None = None
    run_url: str | None = None


@dataclass(frozen=True)
class SuiteView:
    """One suite, ready for a template: name, kind, headline numbers, diff rows and result rows."""

    name: str
    kind: str
    passed: int
    total: int
    pass_rate: float
    baseline_pass_rate: float | None
    diff: DiffReport | None
    result_headers: list[str]
    result_rows: list[list[str]]
    failing: int
    notes: tuple[str, ...] = ()  # escaped lines shown under the headline (the agent kind's blocking cases, ...)
    blocking: int = 0  # failures that fail the gate whatever the baseline says (gating P0 agent cases)
    common_rates: bool = False  # the pass rates are over the cases both sides have (agent), not the whole suites
    rate_label: str = "pass rate"  # what the rate is of, where it is not the share of `total` that passed
    no_rate: str | None = None  # why there is no rate to show (an agent suite where no checked case gates)


@dataclass(frozen=True)
class Caps:
    """How many rows each section may show; None means all."""

    results: int | None = ROW_CAP
    changes: int | None = ROW_CAP
    improvements: int | None = ROW_CAP
    regressions: int | None = ROW_CAP
    notes: int | None = None  # the notes under each headline: cut last, when no row is left to cut


# --- filters -------------------------------------------------------------------------------------------------

_MD_INLINE = re.compile(r"([\\`*_\[\]|~])")
# Every @ (a mention, an e-mail autolink), `#1` and `GH-1` (issue links): a zero-width space follows each. No word
# boundary is asked for: GitHub links `x_@team`, `1GH-2` and `_www.x` too.
_PING = re.compile(r"(@|#(?=\d)|[Gg][Hh](?=-\d))")
# Anything GitHub would turn into a link by itself: a URI scheme's colon, and the `www.` of a bare host.
# (The lookahead of first letters only spares the search an attempt at every other character.)
_AUTOLINK = re.compile(r"(?i)(?=[dfhjmvwx])((?:https?|ftp|mailto|xmpp|javascript|vbscript|data|file)(?=:)|www(?=\.))")
_ANY_SCHEME = re.compile(r"(?i)([a-z][a-z0-9+.-]{0,30})(?=://)")  # `foo+bar://`: searched only where `://` is
_EMOJI = re.compile(r":(?=[\\A-Za-z0-9_+-]{1,80}:)")  # `:white_check_mark:` (its `_` escaped) would show as ✅
# A run of 7 to 40 hex digits holding a letter and a digit: GitHub links it to the commit it names in the repository
_SHA_LIKE = re.compile(
    r"\b(?=[0-9a-fA-F]{0,39}[a-fA-F])(?=[0-9a-fA-F]{0,39}[0-9])([0-9a-fA-F]{6})(?=[0-9a-fA-F]{1,34}\b)"
)
_NUMBERED = re.compile(r"\d{1,9}(?=[.)])")  # `1.` or `1)` first on a line: an ordered list item


def escape_inline(text: str) -> str:
    """Markdown's inline marks escaped (`ghs_x` is written `ghs\\_x`): `md` writes text so, and the output masking
    looks for a secret in this form too."""
    return _MD_INLINE.sub(r"\\\1", text)


def md(value: Any, limit: int = CELL_LIMIT) -> str:
    """Escape untrusted text for a Markdown table cell or the start of a line: one line, no HTML, no links, no
    pings, no math or emoji shortcodes, no heading or list marker first, bounded length; control, invisible and
    bidi characters are written as escapes (`\\u202e`), so a name cannot read as another."""
    text = one_line(" ".join(str(value).split()), limit)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = escape_inline(text)
    text = _PING.sub(r"\1&#8203;", text)  # a zero-width space after @ or # stops pings and issue links
    text = _AUTOLINK.sub(r"\1&#8203;", text)  # `https&#8203;://x`, `www&#8203;.x`: shown alike, never a link
    if "://" in text:
        text = _ANY_SCHEME.sub(r"\1&#8203;", text)
    text = _EMOJI.sub(":&#8203;", text)
    text = _SHA_LIKE.sub(r"\1&#8203;", text)  # `3f78685&#8203;0e38...`: shown alike, never a commit link
    text = text.replace("$", "<span>$</span>")  # GitHub's way to show a dollar that opens no math
    if text[:1] in ("#", "+", "-", "="):  # a heading, a list item or a heading's underline, first on a line
        return "\\" + text
    numbered = _NUMBERED.match(text)
    return text if numbered is None else f"{text[: numbered.end()]}\\{text[numbered.end() :]}"


MAX_NOTES = 25  # warnings shown under a suite's headline; a report from a fork's artifact may hold any number


def warning_notes(warnings: list[str]) -> tuple[str, ...]:
    """A report's warnings as escaped lines for the comment, capped."""
    shown = [md(f"Warning: {warning}", 400) for warning in warnings[:MAX_NOTES]]
    if len(warnings) > MAX_NOTES:
        shown.append(f"... and {len(warnings) - MAX_NOTES} more warnings in the report")
    return tuple(shown)


NAMED_CASES = 5  # cases a note under a headline names before it counts the rest


def cases_note(noun: str, what: str, names: list[str]) -> str:
    """An escaped note under a headline naming cases, the count first (`2 gating cases removed since the baseline:
    a (P0), b (P1)`): a comment cut to size may lose their rows among the other changes, never this."""
    shown = ", ".join(names[:NAMED_CASES])
    more = f", and {len(names) - NAMED_CASES} more in the report" if len(names) > NAMED_CASES else ""
    return md(f"{plural(len(names), noun)} {what}: {shown}{more}", 1200)


def removed_notes(diff: DiffReport | None) -> tuple[str, ...]:
    """The note naming the cases only the baseline has: deleting the case a change made fail is a way past the
    gate that shows as a change only."""
    removed = [str(i.case_id) for i in diff.items if i.metric == "case" and i.current_value is None] if diff else []
    return (cases_note("case", "removed since the baseline (not compared)", removed),) if removed else ()


def percent(value: float | None) -> str:
    return "n/a" if value is None else rate(value)


# a name shown as code: letters and digits of any script, `_.:/+-`, and single spaces between (a slice value's)
_PLAIN_NAME = re.compile(r"(?=.{1,100}\Z)[\w.:/+-]+(?: [\w.:/+-]+)*")


_RATE_PREFIXES = ("gating.passHatK.", "informational.passHatK.", "metrics.", "slice.")


def _is_rate(metric: str) -> bool:
    """Whether a diff item's values are rates from 0 to 1, shown as percentages: pass rates, the agent kind's
    pass^k, RAG metrics and slices. Matched on the names the kinds write, never on a part a run can name (a trace
    verdict `PASS.passRate` is still a count of verdicts)."""
    return metric in ("passRate", "gating.passRate", "informational.passRate") or metric.startswith(_RATE_PREFIXES)


def code(value: Any) -> str:
    """A metric, check or branch name as inline code when it is plainly a name; anything else is escaped text,
    since a code span would pass a backtick or pipe from an untrusted report straight through."""
    text = "unknown" if value is None else str(value)
    return f"`{text}`" if _PLAIN_NAME.fullmatch(text) else md(text, 100)


def delta_pp(before: float | None, after: float | None) -> str:
    """A pass-rate change in percentage points, signed, with a true minus sign."""
    if before is None or after is None:
        return ""
    points = (after - before) * 100
    if abs(points) < 0.05:
        return "±0 pp"
    return f"{'+' if points > 0 else '−'}{abs(points):.1f} pp"


def table(rows: list[list[str]], headers: list[str]) -> str:
    """A GitHub-flavoured table, each column padded to its widest cell (a header gets two spaces more) unless that
    would add too much (`_widths`). Cells must already be escaped with `md`, which leaves no line break in them."""
    heads = list(headers)
    body = [[cell.strip() for cell in row] for row in rows]
    widths = _widths(body, heads)
    rule = "|".join("-" * (max(width, len(head)) + 2) for width, head in zip(widths, heads, strict=True))
    lines = [_line(heads, widths), f"|{rule}|"]
    lines += [_line(row, widths) for row in body]
    return "\n".join(lines)


MAX_PADDING = 20_000
"""Characters of padding a column may get, or four times as many as its cells hold: padding only aligns the raw
text, and a pull request's one wide cell must not make every row as wide."""


def _widths(body: list[list[str]], headers: list[str]) -> list[int]:
    """Each column's width in `table`: its widest cell, or its header two spaces wider; 0 (not padded) for a
    column whose padding would pass MAX_PADDING and four times its cells' text, so that one wide cell (a pull
    request's) cannot make every row as wide and push the other rows out of the comment."""
    widths = []
    for i, header in enumerate(headers):
        width = max([len(header) + 2, *(len(row[i]) for row in body)])
        text = sum(len(row[i]) for row in body)
        widths.append(width if width * len(body) - text <= max(4 * text, MAX_PADDING) else 0)
    return widths


def _line(cells: list[str], widths: list[int]) -> str:
    return "|" + "|".join(f" {cell.ljust(width)} " for cell, width in zip(cells, widths, strict=True)) + "|"


_SHA = re.compile(r"[0-9a-fA-F]{7,64}")
_URL = re.compile(r"https?://[A-Za-z0-9._~:/?#@!$&*+,;=%-]{1,500}")  # no space, brackets, quotes or backticks


def short_sha(sha: str | None) -> str:
    """A commit id's first 7 digits; a report may come from an artifact, so anything but hex is not shown."""
    if not sha:
        return "unknown"
    return sha[:7] if _SHA.fullmatch(sha) else "not a commit id"


def safe_url(url: str | None) -> str | None:
    """A run's link as the footer shows it, or None: only an http(s) URL that cannot end the link early or hold
    markup (a report's `runUrl` may come from an artifact a fork wrote)."""
    return url if url and _URL.fullmatch(url) else None


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("diagbot.render", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # Markdown, not HTML: escaping is done by `md` on each untrusted value
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(md=md, code=code, percent=percent, delta_pp=delta_pp, table=table, short_sha=short_sha,
                       plural=plural, safe_url=safe_url)  # fmt: skip
    return env


_ENV = _environment()


# --- views ---------------------------------------------------------------------------------------------------


def _value(value: Any, metric: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if _is_rate(metric) and isinstance(value, int | float):
        return percent(value)
    if isinstance(value, float):
        return number(value)
    return md(value, 80)


def item_rows(items: list[DiffItem]) -> list[list[str]]:
    return [
        [md(i.case_id) if i.case_id else "*(all cases)*", code(i.metric), _value(i.baseline_value, i.metric),
         _value(i.current_value, i.metric), md(i.message)]
        for i in items
    ]  # fmt: skip


ITEM_HEADERS = ["Case", "Metric", "Baseline", "Current", "What changed"]


def _cap(rows: list[list[str]], cap: int | None) -> tuple[list[list[str]], int]:
    if cap is None or len(rows) <= cap:
        return rows, 0
    return rows[:cap], len(rows) - cap


def render(template: str, **context: Any) -> str:
    """Render one template with the shared filters; StrictUndefined turns a typo into an error, not a blank."""
    return _ENV.get_template(template).render(version=__version__, **context)


SECTIONS = {
    "regressions": ItemType.REGRESSION,
    "improvements": ItemType.IMPROVEMENT,
    "changes": ItemType.CHANGED,
}
CUT_ORDER = ("results", "changes", "improvements", "regressions", "notes")  # least important first
_HEADERS = {**dict.fromkeys(SECTIONS, ITEM_HEADERS), "notes": [""]}  # each section's, for its rows' width


def _all_rows(view: SuiteView) -> dict[str, list[list[str]]]:
    """Every row of every section of one suite, escaped once; rendering then only slices."""
    items = view.diff.items if view.diff else []
    rows = {name: item_rows([i for i in items if i.type is kind]) for name, kind in SECTIONS.items()}
    return {**rows, "results": view.result_rows, "notes": [[note] for note in view.notes]}


def _sections(view: SuiteView, rows: dict[str, list[list[str]]], caps: Caps) -> dict[str, Any]:
    shown = {name: _cap(section, getattr(caps, name)) for name, section in rows.items()}
    notes, cut = shown.pop("notes")
    return {
        "notes": [note for [note] in notes] + ([f"... and {cut} more notes in the report"] if cut else []),
        "suite": view,
        "counts": {kind.value: len(rows[name]) for name, kind in SECTIONS.items()},
        **{name: kept for name, (kept, _) in shown.items()},
        "cut": {name: cut for name, (_, cut) in shown.items()},
        "headers": ITEM_HEADERS,
        "common": _common_note(view),
    }


def _common_note(view: SuiteView) -> str:
    """Said when cases were added or removed: the aggregates then cover only the cases both sides have, and the
    headline says whether its pass rates do too (a trace suite's are of the whole suites)."""
    diff = view.diff
    if diff is None or diff.common_cases is None:
        return ""
    if diff.common_cases == diff.baseline_total_cases == diff.current_total_cases:
        return ""
    note = f" · aggregates compared over {plural(diff.common_cases, 'common case')}"
    return note if view.common_rates else note + "; the pass rates shown are of the whole suites"


def _row_width(rows: list[list[str]], headers: list[str]) -> int:
    """The width `table` gives each row of these rows, its line break included: every cell of a padded column as
    wide as its widest (the header's two spaces wider), those of another as wide as their mean."""
    if not rows:
        return 1
    body = [[cell.strip() for cell in row] for row in rows]
    widths = _widths(body, headers)
    unpadded = sum(len(row[i]) for row in body for i, width in enumerate(widths) if not width) // len(body)
    return sum(width + 3 for width in widths) + unpadded + 2  # an unpadded column: its cells' mean width


def render_markdown(
    template: str,
    suites: list[SuiteView],
    baseline: BaselineInfo,
    current: CurrentInfo,
    marker: str,
    limit: int,
    caps: Caps | None = None,
    problems: list[str] | None = None,
    gate_failure: str | None = None,
    headline_notes: list[str] | None = None,
    in_bytes: bool = False,
) -> str:
    """Render, then cut sections in order of least importance until the body fits `limit` characters (`in_bytes`:
    bytes of UTF-8, as GitHub measures a check run's summary and the job summary: CJK text is 3 bytes a character).
    `headline_notes`: lines said under the headline (a finding the gate settings let pass, so that a red headline
    over a green check is explained; suites retired since the baseline).
    `gate_failure`: why the gate fails when neither a blocking case nor a regression says it (an emptied suite,
    a missing required baseline), so the headline never reads as a pass on a failing check.

    Each pass drops about as many rows of the least important remaining section as the overflow needs, so
    even a 5,000-case suite settles in a few renders.
    """
    caps = caps or Caps()
    rows = [_all_rows(view) for view in suites]
    while True:
        body = render(
            template,
            suites=[_sections(view, r, caps) for view, r in zip(suites, rows, strict=True)],
            baseline=baseline,
            current=current,
            marker=marker,
            problems=[md(p, 1000) for p in (problems or [])][:50],
            has_regression=any(v.diff is not None and v.diff.has_regression for v in suites),
            blocking=sum(v.blocking for v in suites),
            regressions=sum(v.diff.gating_regressions for v in suites if v.diff is not None),
            informational=sum(max(0, v.diff.regression_count - v.diff.gating_regressions) for v in suites if v.diff),
            gate_failure=None if gate_failure is None else md(gate_failure, 300),
            headline_notes=[md(note, 600) for note in (headline_notes or [])[:5]],
        )
        overflow = (len(body.encode("utf-8", "surrogatepass")) if in_bytes else len(body)) - limit
        if overflow <= 0:
            return body
        for name in CUT_ORDER:
            largest = max((len(r[name]) for r in rows), default=0)
            cap = getattr(caps, name)
            shown = largest if cap is None else min(cap, largest)
            if shown > 0:
                # one row less under the cap takes a row from each suite that shows `shown` of them
                width = sum(
                    _row_width(r[name][:shown], _HEADERS.get(name, view.result_headers))
                    for view, r in zip(suites, rows, strict=True)
                    if len(r[name]) >= shown
                )
                caps = replace(caps, **{name: max(0, shown - overflow // width - 1)})
                break
        else:
            # Nothing left to cut: the headline alone is over the limit (absurd suite names); hard-truncate, at a
            # line's end where there is one in the second half (an escape or a `<span>` is never cut in two there)
            cut = cut_utf8(body, limit - 40) if in_bytes else body[: limit - 40]
            end = cut.rfind("\n")
            return (cut[:end] if end > len(cut) // 2 else cut) + "\n\n*(comment truncated)*\n"

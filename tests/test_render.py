"""The PR comment: golden files for each situation, a Markdown parser's view of the tables, escaping, size."""

from __future__ import annotations

import html as _html
import json
import re
from pathlib import Path
from typing import Any

import cmarkgfm
import pytest
from cmarkgfm import cmark
from markdown_it import MarkdownIt

from diagbot.core.errors import ReportFormatError
from diagbot.io.baselines import read_report_file
from diagbot.kinds.registry import view
from diagbot.kinds.trace.diff import diff_trace
from diagbot.kinds.trace.report import CaseResult, build_report
from diagbot.render import markdown
from diagbot.render.markdown import (
    CHECK_SUMMARY_LIMIT,
    COMMENT_LIMIT,
    BaselineInfo,
    Caps,
    CurrentInfo,
    md,
    render_markdown,
    table,
)
from tests.conftest import ROOT, check_golden

ARTIFACT = BaselineInfo(
    source="artifact", branch="main", sha="4f0c2a91d8e3b7a65c0e", run_id=812, exact=True, age_days=1.5,
    run_url="https://github.com/acme/agent/actions/runs/812",
)  # fmt: skip
CURRENT = CurrentInfo(sha="9e8d7c6b5a4f3e2d1c0b", ref="refs/pull/7/merge")


def result(case_id: str, passed: bool = True, **overrides: Any) -> CaseResult:
    fields: dict[str, Any] = {
        "case_id": case_id,
        "title": case_id,
        "passed": passed,
        "failed_checks": [] if passed else ["keyword_coverage: answer matches 0 of the root-cause keywords, needs 2"],
        "verdict": "PASS",
        "matched_keyword_count": 2 if passed else 0,
        "evidence_coverage": {"query_logs": True},
        "tool_call_count": 5,
        "duration_ms": 9000,
    }
    fields.update(overrides)
    return CaseResult(**fields)


def comment(before: list[CaseResult] | None, after: list[CaseResult], baseline: BaselineInfo = ARTIFACT,
            limit: int = COMMENT_LIMIT) -> str:  # fmt: skip
    current = build_report(after)
    diff = diff_trace(build_report(before), current) if before is not None else None
    return render_markdown("comment.md.j2", [view("diagnosis", current, diff)], baseline, CURRENT,
                           "diagbot:diagnosis", limit)  # fmt: skip


def tables(markdown: str) -> list[list[int]]:
    """Cells per row of every table, as a GFM parser sees them."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    found: list[list[int]] = []
    for token in tokens:
        if token.type == "table_open":
            found.append([])
        elif token.type == "tr_open":
            found[-1].append(0)
        elif token.type in ("th_open", "td_open"):
            found[-1][-1] += 1
    return found


def assert_tables_well_formed(markdown: str, expected_tables: int) -> None:
    shapes = tables(markdown)
    assert len(shapes) == expected_tables
    for rows in shapes:
        assert len(set(rows)) == 1, f"ragged table: {rows}"


SITUATIONS = {
    "regressions": (
        [result("a"), result("b"), result("c", passed=False), result("gone")],
        [result("a", passed=False), result("b", tool_call_count=9), result("c"), result("new")],
        4,  # regressions, improvements, changes, results
    ),
    "improvements-only": ([result("a", passed=False), result("b")], [result("a"), result("b")], 2),
    "no-changes": ([result("a"), result("b", passed=False)], [result("a"), result("b", passed=False)], 1),
}


@pytest.mark.parametrize("name", SITUATIONS)
def test_golden_comment(name: str) -> None:
    before, after, table_count = SITUATIONS[name]
    body = comment(before, after)
    assert_tables_well_formed(body, table_count)
    check_golden(f"comment-{name}.md", body)


def test_golden_no_baseline() -> None:
    missing = BaselineInfo(
        source="none", missing_reason="no diagbot-report artifact from main has been kept (expired?)"
    )
    body = comment(None, [result("a"), result("b", passed=False)], missing)
    assert "No baseline" in body and "cannot show a regression" in body
    assert_tables_well_formed(body, 1)
    check_golden("comment-no-baseline.md", body)


def test_golden_hostile_titles() -> None:
    hostile = "x | y\n<img src=x onerror=alert(1)> `rm -rf` @octocat fixes #12 [click](https://evil)"
    tool = "x` @octocat <img src=x> | y"
    body = comment(
        [result(hostile, evidence_coverage={tool: True})],
        [
            result(
                hostile, passed=False, failed_checks=[f"keyword_coverage: {hostile}"], evidence_coverage={tool: False}
            )
        ],
    )
    assert "@octocat" not in body and "#12" not in body and "<img" not in body
    assert "evidenceCoverage.x\\` @&#8203;octocat &lt;img src=x&gt; \\| y" in body  # a hostile metric name too
    assert "[click](https://evil)" not in body
    assert_tables_well_formed(body, 2)
    check_golden("comment-hostile.md", body)


def test_huge_suite_is_cut_to_fit_least_important_first() -> None:
    before = [result(f"case-{i:04d}") for i in range(5000)]
    after = [result(f"case-{i:04d}", passed=i % 3 != 0, verdict="PASS" if i % 2 else "LOW_CONFID") for i in range(5000)]
    body = comment(before, after)
    assert len(body) <= COMMENT_LIMIT
    assert "#### Regressions (" in body
    assert "more regressions not shown here" in body
    assert "Per-case results left out to fit" in body or "more cases not shown here" in body
    assert_tables_well_formed(body, len(tables(body)))
    check_golden("comment-huge-truncated.md", body)


def test_one_wide_cell_does_not_pad_every_row_and_push_the_regressions_out() -> None:
    """Every column was padded to its widest cell, so one regressed case with a 190-character id made each of the
    240 regression rows 190 characters wider, and the comment left 49 of them out (a pull request's one case hid
    the others). A column whose padding would pass MAX_PADDING and four times its text is not padded; narrow
    columns still are."""
    ids = ["w" * 190, *(f"case-{i:04d}" for i in range(119))]
    body = comment([result(i) for i in ids], [result(i, passed=False) for i in ids])
    assert len(body) <= COMMENT_LIMIT
    assert "more regressions not shown here" not in body
    assert all(f"case-{i:04d}" in body for i in range(119))
    assert_tables_well_formed(body, len(tables(body)))
    assert "| " + "w" * 190 + " |" in body  # the wide cell as it is, its column not padded
    assert table([["a", "b"]], ["x", "longer"]) == "| x   | longer   |\n|-----|----------|\n| a   | b        |"


def test_a_check_summary_of_cjk_text_fits_githubs_limit_in_bytes() -> None:
    """The check run's summary was cut to 65,535 characters, but GitHub counts its bytes: 300 failing cases with
    Chinese failure messages made 65,376 characters of 82,786 bytes, which GitHub refuses with the whole check run
    and its annotations. A summary measured in bytes fits; the comment is still measured in characters."""
    failing = ["keyword_coverage: 回答没有提到退款资格检查的结果" * 4]
    after = [result(f"case-{i:04d}", passed=False, failed_checks=failing) for i in range(300)]
    current = build_report(after)
    diff = diff_trace(build_report([result(f"case-{i:04d}") for i in range(300)]), current)
    views = [view("diagnosis", current, diff)]
    summary = render_markdown(
        "summary.md.j2", views, ARTIFACT, CURRENT, "diagbot:d", CHECK_SUMMARY_LIMIT, in_bytes=True
    )
    assert (
        len(summary.encode())
        <= CHECK_SUMMARY_LIMIT
        < len(render_markdown("summary.md.j2", views, ARTIFACT, CURRENT, "diagbot:d", CHECK_SUMMARY_LIMIT).encode())
    )
    assert "#### Regressions (" in summary and "more regressions not shown here" in summary
    assert_tables_well_formed(summary, len(tables(summary)))


def test_a_wide_suite_beside_a_long_one_is_cut_in_a_few_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cut per pass was sized by the widest suite's rows, so beside one wide row a suite of thousands of
    narrow rows lost a sliver per render: 53 to 73 renders of a 5 MB summary (13 s at 60,000 rows). It is now
    sized by the rows one step of the cap removes, from every suite that shows that many."""
    renders: list[int] = []
    real = markdown.render
    monkeypatch.setattr(markdown, "render", lambda *a, **k: renders.append(1) or real(*a, **k))
    wide = view("wide", build_report([result("w" + "x" * 190, title="t" * 190)]), None)
    long = view("long", build_report([result(f"case-{i:05d}") for i in range(20_000)]), None)
    body = render_markdown("summary.md.j2", [wide, long], ARTIFACT, CURRENT, "diagbot:x", 300_000,
                           Caps(None, None, None, None))  # fmt: skip
    assert len(body) <= 300_000
    assert 1 < len(renders) <= 5  # cut, in a few passes
    assert body.count("| case-") > 2_000  # cut to fit, not emptied
    assert_tables_well_formed(body, len(tables(body)))


def test_notes_are_cut_last_and_say_so_rather_than_the_comment_ending_mid_line() -> None:
    """50 suites with 25 long warnings each filled more than the comment: the notes were never cut, and the
    comment ended mid-note without its footer (what it was compared with)."""
    warned = build_report([result("a")]).model_copy(update={"warnings": [f"w{n} " + "x" * 380 for n in range(25)]})
    views = [view(f"suite-{n}", warned, None) for n in range(50)]
    body = render_markdown("comment.md.j2", views, ARTIFACT, CURRENT, "diagbot:x", COMMENT_LIMIT)
    assert len(body) <= COMMENT_LIMIT and "(comment truncated)" not in body
    assert body.count("more notes in the report") == 50
    assert body.rstrip().endswith("Current: `9e8d7c6` · diagbot 0.1.0")  # the footer is there
    few = render_markdown("comment.md.j2", views[:2], ARTIFACT, CURRENT, "diagbot:x", COMMENT_LIMIT)
    assert "more notes in the report" not in few and few.count("Warning: w24 ") == 2  # all shown while they fit


def test_a_verdict_named_like_a_rate_is_still_a_count() -> None:
    """Rates are told by the names the kinds write: a trace verdict `PASS.passRate` (a run writes the verdict)
    counts verdicts, and was shown as 0.0% → 100.0%."""
    body = comment([result("a")], [result("a", verdict="PASS.passRate")])
    (row,) = [line for line in body.splitlines() if "`verdictDistribution.PASS.passRate`" in line]
    assert [cell.strip() for cell in row.split("|")[3:5]] == ["0", "1"]


def test_small_limit_drops_results_before_regressions() -> None:
    before = [result(f"c{i}") for i in range(40)]
    after = [result(f"c{i}", passed=i >= 5) for i in range(40)]
    full = comment(before, after)
    cut = comment(before, after, limit=len(full) - 200)
    assert len(cut) <= len(full) - 200
    assert cut.count("| c") < full.count("| c")
    assert "#### Regressions (11)" in cut and "more regressions not shown" not in cut


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("a|b", "a\\|b"),
        ("line\nbreak", "line break"),
        ("<b>x</b>", "&lt;b&gt;x&lt;/b&gt;"),
        ("`code`", "\\`code\\`"),
        ("@team-lead", "@&#8203;team-lead"),
        ("see #42", "see #&#8203;42"),
        ("see GH-42 and gh-7", "see GH&#8203;-42 and gh&#8203;-7"),  # GitHub links GH-42 as it does #42
        ("GHz-4 ugh-4", "GHz-4 ugh&#8203;-4"),  # no word boundary asked for: a stray space is harmless
        ("a@b.c", "a@&#8203;b.c"),
        ("[x](http://y)", "\\[x\\](http&#8203;://y)"),
        ("see https://evil.example/login", "see https&#8203;://evil.example/login"),
        ("HTTP://x ftp://y", "HTTP&#8203;://x ftp&#8203;://y"),
        ("mailto:a javascript:alert(1)", "mailto&#8203;:a javascript&#8203;:alert(1)"),
        ("www.evil.example", "www&#8203;.evil.example"),
        ("keyword_coverage: fine", "keyword\\_coverage: fine"),
        ("*_~", "\\*\\_\\~"),
        ("& already &amp;", "&amp; already &amp;amp;"),
        ("C# and #hashtag", "C# and #hashtag"),
        # a second review's findings: links after `_`, a digit or `@_`; math; shortcodes; a line's first mark
        ("_www.evil.example/t", "\\_www&#8203;.evil.example/t"),
        ("1https://evil.example", "1https&#8203;://evil.example"),
        ("git+ssh://h/r and xhttps://e", "git+ssh&#8203;://h/r and xhttps&#8203;://e"),
        ("x@_phish.example", "x@&#8203;\\_phish.example"),
        ("refund $500 and $20", "refund <span>$</span>500 and <span>$</span>20"),
        (":white_check_mark: passed", ":&#8203;white\\_check\\_mark: passed"),
        ("# ✅ no regressions", "\\# ✅ no regressions"),
        ("- item", "\\- item"),
        ("1. ok", "1\\. ok"),
        ("10:30 and 3 items", "10:30 and 3 items"),
        # GitHub links a run of hex digits to the commit it names; words and numbers are not runs of both
        ("see 3f786850e387550f", "see 3f7868&#8203;50e387550f"),
        ("deadbeef 1234567 2024-05-20", "deadbeef 1234567 2024-05-20"),
    ],
)
def test_md_escaping(raw: str, escaped: str) -> None:
    assert md(raw) == escaped


HOSTILE_TEXTS = [
    "_www.evil.example/track", "foo_www.bar.com", "_https://evil.example/a", "1https://x.example", "_ftp://x.example",
    "x@_phish.example", "a.b@_c.de", "@octo-org/security", "owner/repo#1", "GH-12", "éGH-12", "x.y@z.example",
    "$\\Huge\\color{green}{\\textsf{ALL CHECKS PASSED}}$", "$$x$$", "$`x`$", ":white_check_mark: :x:",
    "# ✅ diagbot: no regressions", "### x", "- a", "+ b", "1. ok", "7) x", "---", "===", "> quote",
    '<img src="https://evil.example/p.png">', "<!--", "[x](https://e.example)", "![i](https://e.example/i.png)",
    "[x]: https://e.example", "```", "~~~", "| a | b |", "\\", "javascript:alert(1)", "www.e.example",
]  # fmt: skip
PLACES = ("- {}\n", "> {}\n", "| a | b |\n|---|---|\n| {} | x |\n", "**{}** (agent): x\n", "Compared against {}.\n")


@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_md_text_renders_as_text_in_githubs_own_parser_wherever_the_templates_put_it(text: str) -> None:
    """cmark-gfm (GitHub's Markdown parser, with its autolink and table extensions): an escaped text makes no link,
    image, heading, list, rule, HTML or code of its own in any place the templates put one, and keeps no `@` before
    a name, `$` outside its span, or `:name:` for GitHub's later passes (mentions, math, emoji) to act on."""
    escaped = md(text)
    for place in PLACES:
        html = cmarkgfm.github_flavored_markdown_to_html(place.format(escaped), options=cmark.Options.CMARK_OPT_UNSAFE)
        tags = set(re.findall(r"<([a-z0-9]+)", html)) - {"p", "ul", "li", "blockquote", "table", "thead", "tbody",
                                                         "tr", "th", "td", "strong", "span"}  # fmt: skip
        assert not tags, (place, html)
        assert html.count("<ul>") <= 1 and html.count("<li>") <= 1, html
        shown = _html.unescape(re.sub(r"<span>\$</span>", "", html))
        shown = re.sub(r"<[^>]*>", "", shown)
        assert "$" not in shown and not re.search(r"@\w|:[\w+-]+:|www\.|[a-z]://|#\d|(?i:javascript):", shown), shown


@pytest.mark.parametrize(
    ("name", "as_code"),
    [
        ("slice.scenario.order status", True), ("slice.ability_tags.业务规则", True), ("feature/x-1", True),
        ("a  b", False), (" a", False), ("a ", False), ("a\u200bb", False), ("a\u202eb", False), ("a`b", False),
        ("a|b", False), ("a\nb", False), ("x" * 101, False), ("@octo :x: $y$", False),
    ],
)  # fmt: skip
def test_a_name_is_code_only_when_nothing_in_it_could_leave_or_hide_in_the_span(name: str, as_code: bool) -> None:
    """Single spaces and any script's letters are plainly a name (a slice of `scenario: order status`); a backtick,
    pipe, line break, doubled or edge space, or invisible character makes it escaped text, which renders as text."""
    shown = markdown.code(name)
    assert shown.startswith("`") == as_code, shown
    html = cmarkgfm.github_flavored_markdown_to_html(f"| a | b |\n|---|---|\n| {shown} | x |\n")
    assert html.count("<td>") == 2, html
    assert (f"<code>{_html.escape(name, quote=False)}</code>" in html) == as_code, html


def test_the_footer_keeps_a_baseline_branch_from_leaving_its_code_span() -> None:
    """A backslash does nothing inside a code span, so an escaped backtick there would close it: a branch name
    that is not plainly a name is shown as escaped text instead."""
    hostile = BaselineInfo(source="artifact", branch="main` $\\Huge\\text{PASS}$ `", sha="4f0c2a91d8e3b7a65c0e")
    footer = comment(None, [], hostile).split("Compared against", 1)[1].splitlines()[0]
    assert footer.startswith(" the baseline from main\\` <span>$</span>\\\\Huge"), footer
    plain = comment(None, [], ARTIFACT).split("Compared against", 1)[1]
    assert plain.startswith(" the baseline from `main` @ `4f0c2a9`")


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("suite", "agent -->\n### ✅ diagbot: no regressions\n<!-- diagbot:other", "suite: string should match"),
        ("riskLevel", "P2 | ✅ passed | yes | |", "results.0.riskLevel: input should be 'P0', 'P1', 'P2' or 'P3'"),
        ("datasetRole", "golden<img src=x>", "results.0.datasetRole: input should be"),
    ],
)
def test_a_stored_report_cannot_carry_its_own_markup_into_the_marker_or_the_rows(
    tmp_path: Path, field: str, value: str, said: str
) -> None:
    """A report from a fork's artifact is rendered by the relay: a field the comment shows as it is (the marker's
    suite name, a case's risk level) is held to the values diagbot writes."""
    data = json.loads((ROOT / "examples/baseline/reports/agent.json").read_text(encoding="utf-8"))
    (data if field == "suite" else data["results"][0])[field] = value
    forged = tmp_path / "agent.json"
    forged.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ReportFormatError) as info:
        read_report_file(forged)
    assert said in str(info.value)


def test_md_bounds_length() -> None:
    assert md("x" * 1000, limit=10) == "x" * 9 + "…"


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.9996, "99.9%"), (1.0, "100.0%"), (0.0004, "0.1%"), (0.0, "0.0%"), (0.4839, "48.4%"), (2 / 3, "66.7%")],
)
def test_a_rate_is_never_shown_as_more_or_less_than_it_is(value: float, shown: str) -> None:
    """Fault 11: 99.96% was shown as 100.0%."""
    from diagbot.core.rates import percent

    assert percent(value) == shown


def test_a_measured_value_is_never_shown_in_exponent_notation() -> None:
    """13480.5 ms was shown as 1.348e+04 in the diff's message and table."""
    from diagbot.core.diff import cost
    from diagbot.core.rates import number
    from diagbot.render.markdown import item_rows

    assert [number(v) for v in (13480.5, 1500.0, 2.5, 0.3333333, -1234.7, 7.0)] == [
        "13480", "1500", "2.5", "0.3333", "-1235", "7"
    ]  # fmt: skip
    [found] = cost("case-1", "durationMs", 13480.5, 20000.25, 20, 500, " ms")
    assert found.message.startswith("durationMs rose from 13480 ms to 20000 ms"), found.message
    assert item_rows([found])[0][2:4] == ["13480", "20000"]


def test_rates_are_computed_from_counts_in_one_place() -> None:
    from diagbot.core.rates import rate
    from diagbot.kinds.trace.report import TraceReport

    assert rate(2, 3) == 0.666667 and rate(0, 0) == 0.0
    stored = TraceReport.model_validate({"totalCases": 3, "passedCases": 2, "passRate": 0.99, "results": []})
    assert stored.pass_rate == 0.666667  # a stored rate that disagrees with the counts is not believed


def test_templates_load_from_an_install_outside_the_checkout(tmp_path: Path) -> None:
    """Fault 10: templates were looked up under sys.prefix/share; `pip install --target` gave TemplateNotFound."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "--target", str(target), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    assert (target / "diagbot" / "render" / "templates" / "comment.md.j2").is_file()
    probe = (
        "import diagbot.render.markdown as m, sys; "
        "assert m.__file__.startswith(sys.argv[1]), m.__file__; "
        "print(m.render('comment.md.j2', suites=[], baseline=m.BaselineInfo(source='none', missing_reason='x'), "
        "current=m.CurrentInfo(), marker='diagbot:t', problems=[], has_regression=False, blocking=0, "
        "regressions=0)[:22])"
    )
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-c", probe, str(target)]
    out = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("<!-- diagbot:t -->")


def test_table_pads_each_column_to_its_widest_cell() -> None:
    """The GitHub table layout the goldens were reviewed in: a header gets two spaces more than its text, cells
    are stripped of outer spaces, and an empty body still has its header and rule."""
    assert table([["✅", " a ", "long cell"], ["", "bb", ""]], ["", "Case", "X"]) == (
        "|    | Case   | X         |\n"
        "|----|--------|-----------|\n"
        "| ✅  | a      | long cell |\n"
        "|    | bb     |           |"
    )
    assert table([], ["Case", "Metric"]) == "| Case   | Metric   |\n|--------|----------|"


def test_a_baseline_s_commit_and_run_link_are_shown_only_when_they_are_what_they_say() -> None:
    """A baseline report's `run.gitSha` and `runUrl` come from an artifact: a sha of "`@alice" pinged a user, and a
    run link carried markup and a second link into the comment under the bot's name."""
    forged = ARTIFACT.model_copy(
        update={"sha": "`@alice <b>", "run_url": "https://evil.example/a) @alice <img src=x> [x](javascript:alert(1)"}
    )
    body = comment([result("a")], [result("a")], baseline=forged)
    assert "@ `not a commit id`" in body
    assert "@alice" not in body and "<img" not in body and "javascript" not in body and "[run 812]" not in body
    plain = comment([result("a")], [result("a")], baseline=ARTIFACT.model_copy(update={"source": "file"}))
    assert "@ `4f0c2a9`" in plain
    assert "([run 812](https://github.com/acme/agent/actions/runs/812))" in comment([result("a")], [result("a")])


def test_cells_write_invisible_and_bidi_characters_as_escapes() -> None:
    """A U+202E in a case id reversed the rest of its cell: the comment showed another name."""
    from diagbot.render.markdown import md

    assert md("case\u202e1\u200bx") == "case\\\\u202e1\\\\u200bx"  # escaped, then the backslash escaped for Markdown
    assert md("ok_name") == "ok\\_name"


def test_every_character_that_shows_nothing_is_written_as_an_escape_on_a_line_of_text() -> None:
    """Tag characters (U+E0041... spell hidden ASCII that a model reading the comment sees), C1 controls, the
    soft hyphen, the Arabic letter mark and the Hangul filler passed through to the comment and the terminal;
    the emoji presentation selector stays, as it shows an emoji the way it is meant."""
    from diagbot.core.values import one_line

    hidden = "".join(chr(0xE0000 + ord(c)) for c in "approve")
    shown = one_line(f"refund{hidden}\x9b\u00ad\u061c\u3164\ufe00 \u26a0\ufe0f")
    assert shown == "refund" + "".join(f"\\udb40\\udc{0x00 + ord(c):02x}" for c in "approve") + (
        "\\x9b\\u00ad\\u061c\\u3164\\ufe00 \u26a0\ufe0f"
    )


def test_a_legacy_workflow_command_in_text_is_broken_wherever_it_stands() -> None:
    """The runner reads `##[error ...]` anywhere in a log line as a workflow command: a tool name or a file name
    quoted in `diagbot run`'s `error:` lines could annotate any file, or stop the runner reading commands."""
    from diagbot.core.values import one_line

    assert one_line("tool ##[error file=README.md]all passed ##[stop-commands]x") == (
        "tool ##\\[error file=README.md]all passed ##\\[stop-commands]x"
    )


def test_a_secret_is_masked_in_its_markdown_escaped_form() -> None:
    from diagbot.io.files import register_secret, scrub
    from diagbot.render.markdown import md

    register_secret("ghs_render_test_token_1234")
    assert scrub(md("the token ghs_render_test_token_1234 leaked")) == "the token *** leaked"


def test_a_job_summary_problem_is_scrubbed_before_it_is_cut() -> None:
    """Cut first, a secret across the 1,000th character left its first part in the job summary."""
    from diagbot.action.runner import bullets
    from diagbot.io.files import register_secret

    register_secret("ghs_summary_cut_token_5678")
    listed = bullets(["x" * 990 + " ghs_summary_cut_token_5678 and more"])
    assert listed == "- " + "x" * 990 + " \\*\\*\\* and …\n", listed[980:]


def test_an_artifact_baseline_without_a_branch_renders() -> None:
    """A pr.json's baseline may leave its branch out (it is optional): the footer's code span got None and the
    render failed unexpectedly."""
    footer = comment(None, [], BaselineInfo(source="artifact", sha="4f0c2a91d8e3b7a65c0e"))
    assert "the baseline from `unknown` @ `4f0c2a9`" in footer


def test_a_comment_cut_hard_ends_at_a_line_not_inside_an_escape() -> None:
    """Only a headline over the limit is cut hard: at a line's end in its second half, so a `<span>$</span>` or
    an `&#8203;` is never cut in two."""
    problems = ["$" * 60 for _ in range(50)]
    body = render_markdown("comment.md.j2", [], ARTIFACT, CURRENT, "diagbot:x", 5_000, problems=problems)
    kept = body.removesuffix("\n\n*(comment truncated)*\n")
    assert len(body) <= 5_000 and kept != body and kept.endswith("</span>"), kept[-40:]


def test_removed_cases_are_named_under_a_trace_or_workspace_headline() -> None:
    """A red-team pull request replaced a workspace suite's cases with one trivial case: the removals were only in
    the collapsed "Other changes", under a green headline."""
    from diagbot.core.diff import case_presence, summarize

    items = [case_presence(f"c{n}", in_baseline=True) for n in range(7)] + [case_presence("new", in_baseline=False)]
    diff = summarize(items, (7, 1, 7, 1), (1.0, 1.0), None)
    assert markdown.removed_notes(diff) == (
        "7 cases removed since the baseline (not compared): c0, c1, c2, c3, c4, and 2 more in the report",
    )
    assert markdown.removed_notes(summarize(items[-1:], (0, 1, 0, 1), (1.0, 1.0), None)) == ()
    assert markdown.removed_notes(None) == ()


def test_a_stored_report_with_an_infinite_number_is_refused(tmp_path: Path) -> None:
    """A baseline's `"durationMs": 1e400` was read as infinity and shown as "was inf ms"."""
    text = (ROOT / "examples/baseline/reports/agent.json").read_text(encoding="utf-8")
    data = json.loads(text)
    data["results"][0]["durationMs"] = "__INF__"
    forged = tmp_path / "agent.json"
    forged.write_text(json.dumps(data).replace('"__INF__"', "1e400"), encoding="utf-8")
    with pytest.raises(ReportFormatError) as info:
        read_report_file(forged)
    assert info.value.problems == [
        f"{forged}: holds the number 1e400, which is too large to read (past 1.8e308); no diagbot report holds one"
    ]

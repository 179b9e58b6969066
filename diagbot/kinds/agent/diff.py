"""The agent suite's diff rules on the shared primitives.

A case whose `case_version` changed is a different contract: it gets one CHANGED item and is not compared
further. The aggregates that gate (pass rate and pass^k of the gating cases) are compared over the cases present
on both sides with equal versions and machine-checked on both or neither; items of cases that do not gate are
marked `gating: false`, so they are shown and never fail the check.
"""

from __future__ import annotations

from diagbot.core.diff import (
    DiffItem,
    DiffReport,
    ItemType,
    Thresholds,
    better_or_worse,
    case_presence,
    changed,
    cost,
    item,
    order,
    renamed,
    summarize,
)
from diagbot.core.rates import percent
from diagbot.core.values import one_line
from diagbot.kinds.agent.report import (
    AgentCaseResult,
    AgentReport,
    Aggregate,
    OptionName,
    SliceStat,
    aggregate,
    slices,
)

INFORMATIONAL = "informational (this case does not gate): "
"""Put before an informational case's message, where cutting a long message to a table cell cannot drop it."""


def _informational(items: list[DiffItem]) -> list[DiffItem]:
    """A case's items that follow it to the informational side, but for its demotion itself, which is listed with
    what gates (the case gated before), so that a comment cut to size keeps it."""
    return [i.model_copy(update={"gating": i.metric == "gating", "message": INFORMATIONAL + i.message}) for i in items]


def _no_credit(found: DiffItem, status: str) -> DiffItem:
    """A cost that fell in a case that does not pass now is no improvement: an agent that stopped calling the tool
    it must call is cheaper and wrong. Shown as a change."""
    if found.type is not ItemType.IMPROVEMENT:
        return found
    why = "it fails now" if status == "failed" else "nothing in it is machine-checked"
    return found.model_copy(update={"type": ItemType.CHANGED, "message": f"{found.message}; no improvement: {why}"})


def _code(check: str) -> str:
    return check.split(":", 1)[0]


def _removed(old: AgentCaseResult) -> DiffItem:
    """A case only the baseline has, saying what it was: deleting a failing gating case is how a pull request
    would get past the gate, so the comment says so (it does not fail the check: cases are retired too)."""
    role = f"a gating {old.risk_level} case" if old.gating else f"an informational {old.risk_level} case"
    outcome = "nothing machine-checks" if old.status == "unchecked" else old.status
    removed = case_presence(old.case_id, in_baseline=True, was=f"{role} that {outcome}")
    removed.severity, removed.gating = old.risk_level, old.gating  # listed with the gating cases' items
    return removed


def _case_diff(old: AgentCaseResult, new: AgentCaseResult, t: Thresholds, costs_comparable: bool) -> list[DiffItem]:
    cid = new.case_id
    items: list[DiffItem] = []
    statuses = f"{old.status} → {new.status}"
    if {old.status, new.status} == {"passed", "failed"} or (old.status, new.status) == ("unchecked", "failed"):
        worse = new.status == "failed"
        count = len(new.failed_checks)  # said first: a long first check cuts the cell before a count at the end
        shown = "; ".join(new.failed_checks[:2])
        detail = "" if not worse or not count else f" ({count} failed checks: {shown})" if count > 2 else f" ({shown})"
        if old.status == "unchecked":  # the same contract, now failing: its checks were added, or its run broke
            detail += (
                f"; a failure under the same case_version {new.case_version}: give it a new case_version if its "
                "contract changed"
            )
        kind = ItemType.REGRESSION if worse else ItemType.IMPROVEMENT
        items.append(item(kind, cid, "status", old.status, new.status, f"{statuses}{detail}"))
    elif new.status == "unchecked" and old.status != "unchecked":
        # the same case_version promises the same contract: checks removed under it would hide a failure
        said = (f"{statuses}: nothing in it is machine-checked now, under the same case_version "
                f"{new.case_version}; give it a new case_version if its contract changed")  # fmt: skip
        items.append(item(ItemType.REGRESSION, cid, "status", old.status, new.status, said))
    else:
        items += changed(cid, "status", old.status, new.status, statuses)
    items += changed(cid, "trials", old.trials, new.trials, f"trials recorded {old.trials} → {new.trials}")
    if old.status == new.status:
        was, now = f"{old.trials_passed}/{old.trials}", f"{new.trials_passed}/{new.trials}"
        items += changed(cid, "trialsPassed", was, now, f"trials passed {was} → {now}")
    if old.status == new.status == "failed":
        before, after = {_code(c) for c in old.failed_checks}, {_code(c) for c in new.failed_checks}
        if before != after:
            gained, lost = sorted(after - before), sorted(before - after)
            said = "; ".join(
                p
                for p in (f"now {', '.join(gained)}" if gained else "", f"no longer {', '.join(lost)}" if lost else "")
                if p
            )
            items += changed(cid, "failedChecks", sorted(before), sorted(after), f"failing checks changed: {said}")
    # what the costliest trial's run cost, as the trace kind compares it: an agent that loops through three times
    # the calls, or takes ten times as long, still passing its checks, is the regression these thresholds are for
    # (a version-1 baseline recorded a case's first trial: of a case of several trials, it is not compared)
    if costs_comparable or old.trials == 1:
        costs = cost(cid, "toolCallCount", old.tool_call_count, new.tool_call_count, t.tool_call_pct, t.tool_call_abs,
                     "")  # fmt: skip
        costs += cost(cid, "durationMs", old.duration_ms, new.duration_ms, t.duration_pct, t.duration_abs_ms, " ms")
        items += costs if new.status == "passed" else [_no_credit(i, new.status) for i in costs]
    for name in sorted(set(old.metrics) | set(new.metrics)):  # RAG metrics: higher is better
        if name in old.metrics and name in new.metrics:
            items += better_or_worse(cid, f"metrics.{name}", old.metrics[name], new.metrics[name], True, name, percent)
        else:  # computed on one side only (citation_accuracy of an answer that cites nothing): shown, not compared
            was_computed, now_computed = old.metrics.get(name), new.metrics.get(name)
            said = " → ".join("not computed" if v is None else percent(v) for v in (was_computed, now_computed))
            items += changed(cid, f"metrics.{name}", was_computed, now_computed, f"{name} {said}")
    items += changed(
        cid, "riskLevel", old.risk_level, new.risk_level, f"risk level {old.risk_level} → {new.risk_level}"
    )
    if old.checks_digest and new.checks_digest:  # both recorded: a baseline from before they were is not compared
        items += changed(
            cid, "checks", old.checks_digest, new.checks_digest,
            f"its machine checks changed under the same case_version {new.case_version}, so its verdicts compare "
            "different contracts (a weaker check would pass what the baseline's failed); give the case a new "
            "case_version when its contract changed",
        )  # fmt: skip
    items += changed(cid, "gating", old.gating, new.gating,
                     f"gating {'yes' if old.gating else 'no'} → {'yes' if new.gating else 'no'}"
                     + (f" ({new.not_gating_because})" if new.not_gating_because else ""))  # fmt: skip
    for entry in items:
        entry.case_version = new.case_version
        entry.severity = new.risk_level
    return items if new.gating else _informational(items)


def _aggregate_items(sides: dict[str, tuple[Aggregate, Aggregate]]) -> list[DiffItem]:
    """The items of each scope's aggregates (baseline, current), over the comparable cases of that scope."""
    items: list[DiffItem] = []
    for scope, (before, after) in sides.items():
        found = better_or_worse(
            None, f"{scope}.passRate", before.pass_rate, after.pass_rate, True, f"{scope} pass rate", percent
        )
        for k in sorted(set(before.pass_hat_k) | set(after.pass_hat_k), key=int):
            was, now = before.pass_hat_k.get(k), after.pass_hat_k.get(k)
            if was is not None and now is not None:
                found += better_or_worse(None, f"{scope}.passHatK.{k}", was, now, True, f"{scope} pass^{k}", percent)
            else:  # k runs to the smallest trial count: one case with fewer trials ends a figure without a word
                smallest = len(after.pass_hat_k)  # its keys are 1 .. the smallest trial count
                why = f"the smallest trial count of these cases is {smallest}" if smallest else "none is checked now"
                said = f"{scope} pass^{k} {'is no longer computed' if now is None else 'is computed now'}: {why}"
                found.append(item(ItemType.CHANGED, None, f"{scope}.passHatK.{k}", was, now, said))
        items += found if scope == "gating" else [i.model_copy(update={"gating": False}) for i in found]
    return items


def _slice_items(old: dict[str, dict[str, SliceStat]], new: dict[str, dict[str, SliceStat]]) -> list[DiffItem]:
    """Each slice of the compared cases whose pass rate changed, and each that has checked cases on one side only
    (a case moved to another scenario or tag under the same case_version: its old slice lost it, its new one
    gained it)."""
    items: list[DiffItem] = []
    for name in dict.fromkeys([*new, *old]):  # in the slices' order
        before, after = old.get(name, {}), new.get(name, {})
        for value in sorted(before.keys() | after.keys()):
            was, now = (_checked(side.get(value)) for side in (before, after))
            if (was is None and now is None) or (was is not None and now is not None and was == now):
                continue
            shown = [percent(rate) if rate is not None else "no checked case" for rate in (was, now)]
            said = f"{name} = {value}: pass rate {shown[0]} → {shown[1]}"
            items.append(item(ItemType.CHANGED, None, f"slice.{name}.{value}", was, now, said))
    return items


def _checked(stat: SliceStat | None) -> float | None:
    """A slice's pass rate, None when it has no checked case (no case, or only unchecked ones)."""
    return None if stat is None or stat.total_cases == stat.unchecked_cases else stat.pass_rate


def _option_items(old: dict[OptionName, str | int] | None, new: dict[OptionName, str | int] | None) -> list[DiffItem]:
    """Each suite option that decides verdicts and changed (both sides recorded): a pull request that sets a
    `confirmation-pattern` every reply matches, or a `tool-error-pattern` every result does, moves verdicts without
    touching a case, and the comment must say so beside the cases it greened."""
    if old is None or new is None:
        return []
    items: list[DiffItem] = []
    for name in sorted(set(old) | set(new)):
        was, now = old.get(name), new.get(name)
        shown = [one_line(repr(v), 120) if v is not None else "(its default)" for v in (was, now)]
        said = (f"suite option {name}: {shown[0]} → {shown[1]}; it decides verdicts, so a case that passes or fails "
                "differently from the baseline may have moved by it, not by the agent")  # fmt: skip
        items += changed(None, f"options.{name}", was, now, said)
    return items


def diff_agent(baseline: AgentReport, current: AgentReport, thresholds: Thresholds | None = None) -> DiffReport:
    before = {r.case_id: r for r in baseline.results}
    comparable = [
        r for r in current.results if r.case_id in before and before[r.case_id].case_version == r.case_version
    ]
    ids = {r.case_id for r in comparable}
    # a case machine-checked on one side only is, for the aggregates, like a case present on one side only: a
    # failing case whose checks were removed must not raise the pass rate, one that gained failing checks not
    # lower it; its status change is an item of its own (a regression when it lost its checks)
    compared = [r for r in comparable if (r.status == "unchecked") == (before[r.case_id].status == "unchecked")]
    old = [before[r.case_id] for r in compared]
    gating_ids = {r.case_id for r in compared if r.gating}
    sides = {  # each scope's aggregates over the cases of that scope now, baseline and current
        scope: (
            aggregate([r for r in old if (r.case_id in gating_ids) == gates]),
            aggregate([r for r in compared if (r.case_id in gating_ids) == gates]),
        )
        for scope, gates in (("gating", True), ("informational", False))
    }
    items = _aggregate_items(sides)
    items += _slice_items(slices(old), slices(compared))
    for dataset in sorted(current.dataset_versions.keys() | baseline.dataset_versions.keys()):
        old_version = ", ".join(baseline.dataset_versions.get(dataset, [])) or None
        new_version = ", ".join(current.dataset_versions.get(dataset, [])) or None
        said = f"dataset {dataset}: version {old_version or 'new'} → {new_version or 'no case of it now'}"
        items += changed(None, f"datasetVersion.{dataset}", old_version, new_version, said)
    items += _option_items(baseline.options, current.options)
    for result in current.results:
        was = before.get(result.case_id)
        if was is None:
            items.append(case_presence(result.case_id, in_baseline=False))
        elif result.case_id not in ids:
            said = f"case_version {was.case_version} → {result.case_version}: a new contract, not compared"
            if was.gating and not result.gating:  # its one item says it too: a new version must not hide it
                said += f"; it gated in the baseline and does not now ({result.not_gating_because})"
            note = item(ItemType.CHANGED, result.case_id, "caseVersion", was.case_version, result.case_version, said)
            note.case_version, note.gating = result.case_version, was.gating  # gating: listed with what gated
            note.severity = result.risk_level
            items.append(note)
        else:
            items += _case_diff(was, result, thresholds or Thresholds(), baseline.schema_version >= 2)
    present = {r.case_id for r in current.results}
    items += [_removed(r) for r in baseline.results if r.case_id not in present]
    added = {r.case_id: r for r in current.results if r.case_id not in before}
    for look_alike in renamed(
        {r.case_id: r.status == "passed" for r in baseline.results if r.case_id not in present},
        {case_id: r.status == "failed" for case_id, r in added.items()},
    ):
        result = added[look_alike.case_id or ""]
        look_alike.gating, look_alike.severity = result.gating, result.risk_level  # as the case's own items
        items.append(look_alike)
    by_risk = sorted(current.results, key=lambda r: r.risk_level)  # the comment lists P0 cases' items first
    return summarize(
        order(items, [r.case_id for r in by_risk] + [r.case_id for r in baseline.results]),
        (baseline.total_cases, current.total_cases, baseline.passed_cases, current.passed_cases),
        (sides["gating"][0].pass_rate, sides["gating"][1].pass_rate),  # the headline's: the rates that gate
        len(compared),
    )

"""The baseline of a pull request: the newest usable report artifact of its base branch, with its provenance."""

from __future__ import annotations

from datetime import datetime

from diagbot.action.record import PR_RECORD
from diagbot.action.settings import Settings
from diagbot.github import client as gh
from diagbot.github.port import ArtifactCandidate, ArtifactGone, GitHubError, GitHubPort, UnsafeArtifact
from diagbot.io.baselines import Baselines, baselines_in_archive
from diagbot.io.config import Config
from diagbot.render.markdown import BaselineInfo


def resolve_baseline(
    settings: Settings,
    port: GitHubPort,
    config: Config,
    base_branch: str | None,
    base_sha: str | None,
    now: datetime,
    warnings: list[str],
    strict: bool = False,
) -> tuple[Baselines, BaselineInfo]:
    """Try the candidates newest first (the base commit's own first); the first with a report for any of these
    suites is the baseline, and every problem of its files is kept (they fail the gate, named).

    `strict` is a pull request's gate: when GitHub could not be asked (an outage, the rate limit, a missing
    `actions: read`), or the search stopped at one of its limits after candidates that were all unusable,
    whether a newer baseline exists is unknown, and that must never read as "there is none" or as an older one,
    either of which can pass a regression: it is a problem, and the check fails naming it (a rerun mends an
    outage). A push only warns. An expired, deleted or unreadable artifact (too large, not a zip, a report this
    diagbot cannot read), and a pull request's own evaluation, are no baseline: the next one is tried, with a
    warning, since failing on what no rerun mends would fail every pull request until the base branch changes."""
    name = settings.baseline_artifact
    if base_branch is None:
        return Baselines(), BaselineInfo(source="none", missing_reason="this run has no base branch to compare against")
    workflow, only = settings.baseline_workflow_path, settings.baseline_workflow is not None
    try:
        search = port.find_baselines(name, base_branch, base_sha, workflow, only)
    except GitHubError as exc:
        if not strict:
            warnings.extend(exc.problems)
        found = Baselines(problems=_unknown(exc.problems) if strict else [])
        return found, BaselineInfo(source="none", missing_reason=f"the '{name}' artifacts could not be listed")
    tried: list[str] = []
    unreachable: list[str] = []  # candidates GitHub did not hand over: they may be the baseline
    for at, candidate in enumerate(search.candidates):
        where = f"artifact {candidate.id} ('{candidate.name}', run {candidate.run_id})"
        try:
            files = gh.unpack_artifact(port.download(candidate), where)
            found = Baselines() if PR_RECORD in files else _read(files, config, where)  # said below, unread
        except (ArtifactGone, UnsafeArtifact) as exc:  # expired, deleted or unreadable for good: the next one may do
            tried.extend(exc.problems)  # (a rerun cannot mend it, so failing on it would fail every pull request)
            continue
        except GitHubError as exc:  # forbidden or unavailable: the next one may do, but this one is unknown
            tried.extend(exc.problems)
            unreachable.extend(exc.problems)
            if strict:  # the baseline is unknown now, whatever an older one holds: no more downloads to wait for
                break
            continue
        foreign = _not_a_baseline(files, found, candidate)
        if not foreign and not found.reports and not found.problems and not found.names:
            tried.append(f"{where}: holds no report for these suites")
            continue
        if foreign:
            tried.append(f"{where}: {foreign}")
            continue
        warnings.extend(tried)  # (strict, a candidate not handed over ended the search: see below)
        found.problems = [f"{where}: {problem}" for problem in found.problems]
        info = _provenance(settings, candidate, config, now)
        older_ones = search.candidates[at + 1 : at + 1 + OLDER_LOOKED_AT]
        older = _older_reports(port, config, found, older_ones, warnings, strict, candidate)
        if older:
            info = info.model_copy(update={"warnings": [*info.warnings, *older]})
        if search.other_workflows:
            elsewhere = (
                f"the baseline comes from {candidate.workflow or 'another workflow'}, since this workflow's runs of "
                f"{base_branch} uploaded no '{name}'; set the baseline-workflow input to the workflow that does"
            )
            info = info.model_copy(update={"warnings": [*info.warnings, elsewhere]})
        return found, info
    if strict and unreachable:  # a newer candidate, or the base commit's own, may be the baseline
        warnings.extend(p for p in tried if p not in unreachable)
        reason = f"{len(unreachable)} '{name}' artifact(s) from {base_branch} could not be downloaded"
        return Baselines(problems=_unknown(unreachable)), BaselineInfo(source="none", missing_reason=reason)
    if strict and search.stopped_because and search.candidates:  # all unusable; an older one may be the baseline
        # (with none found at all, as on the pull request that adds diagbot to a busy repository, there is none)
        warnings.extend(tried)
        stopped = (
            f"the search of {base_branch}'s runs stopped before it found a usable '{name}' artifact "
            f"({search.stopped_because}, after {len(search.candidates)} unusable candidate(s)); push to {base_branch} "
            "or rerun its workflow, so that its newest run uploads a baseline"
        )
        reason = f"the search for a baseline stopped at a limit ({search.stopped_because})"
        return Baselines(problems=_unknown([stopped])), BaselineInfo(source="none", missing_reason=reason)
    warnings.extend(tried)
    runs = f"{search.runs_scanned} run" + ("" if search.runs_scanned == 1 else "s")
    passed = (
        f"; {search.passed_over} run(s) of other workflows than {workflow} were passed over, "
        "as the baseline-workflow input asks"
        if search.passed_over
        else ""
    ) + (
        f"; {search.unsuccessful} workflow_dispatch run(s) that did not succeed were passed over (a run that failed "
        "or was cancelled may have stopped before it wrote its report folder)"
        if search.unsuccessful
        else ""
    )
    looked = f" (looked at {runs} of {base_branch}{passed}" + (
        f"; stopped: {search.stopped_because})" if search.stopped_because else ")"
    )
    reason = (
        f"no unexpired '{name}' artifact from {base_branch} in this repository{looked}"
        if not search.candidates
        else f"none of the {len(search.candidates)} '{name}' artifacts from {base_branch} was usable{looked}"
    )
    return Baselines(), BaselineInfo(source="none", branch=base_branch, missing_reason=reason)


OLDER_LOOKED_AT = 2  # older artifacts looked in for a suite the newest usable one has no report for


def _older_reports(
    port: GitHubPort,
    config: Config,
    found: Baselines,
    older: list[ArtifactCandidate],
    warnings: list[str],
    strict: bool = False,
    newest: ArtifactCandidate | None = None,
) -> list[str]:
    """A suite the baseline artifact has no report for (its push run could not evaluate it, as when a case file
    was broken on the base branch for a while) is compared with the report of the next older artifact that has
    one: read as missing, it could not regress. Returns what the comment says of each one so taken. `strict`: an
    older artifact GitHub does not hand over may hold that report, so it is a problem of `found`, as for the
    newest one. When the run of the artifact read (`newest`) did not succeed, a suite it lacks and an older one
    has may be one it could not judge, not one the branch dropped: it counts as a suite of the baseline, and a
    pull request whose config lacks it too is told it vanished (or to retire it), never let drop it unseen. Only
    runs created before that one count (a newer run is no older state of the branch), up to the first that
    succeeded, whether its artifact can be read or not (what it dropped, the branch had retired)."""
    said: list[str] = []
    configured = {s.name for s in config.suites}
    failed = newest is not None and newest.run_conclusion not in (None, "success")
    for candidate in older:
        missing = [s.name for s in config.suites if s.name not in found.names]
        names_too = failed and newest is not None and candidate.run_time <= newest.run_time
        if candidate.run_conclusion in (None, "success"):
            failed = False
        if not missing and not names_too:
            if not failed:
                break
            continue
        where = f"artifact {candidate.id} ('{candidate.name}', run {candidate.run_id})"
        try:
            files = gh.unpack_artifact(port.download(candidate), where)
        except (ArtifactGone, UnsafeArtifact) as exc:  # expired, deleted or unreadable: the next one may do
            warnings.extend(exc.problems)
            continue
        except GitHubError as exc:  # not handed over: the report it may hold is unknown
            if strict and missing:  # (looked in for names alone, it leaves a warning)
                found.problems += _unknown([f"{p} (looked in for suites {', '.join(missing)})" for p in exc.problems])
                break
            warnings.extend(exc.problems)
            continue
        extra = baselines_in_archive(files, missing)
        if _not_a_baseline(files, extra, candidate):
            continue
        for name in missing:
            if name in extra.reports:
                found.reports[name], found.sources[name] = extra.reports[name], f"{where}: reports/{name}.json"
                found.names.append(name)
                found.filed |= extra.filed & {name}
                said.append(
                    f"the baseline of suite {name} comes from the older {where} at {candidate.head_sha[:12]}, since "
                    "the newer one has no report for it"
                )
        for name in extra.names if names_too else ():
            if name not in configured and name not in found.names:  # said by the pipeline: vanished, or retired
                found.names.append(name)
    return said


def _not_a_baseline(files: dict[str, bytes], found: Baselines, candidate: ArtifactCandidate) -> str | None:
    """Why an artifact of a base-branch run is no baseline: a pull request's evaluation run there (a
    workflow_dispatch given pr-number) uploads the pull request's reports, which would then judge the next one."""
    if PR_RECORD in files:
        return (
            f"holds {PR_RECORD}, so it is a pull request's evaluation (a workflow_dispatch run given pr-number), "
            "never a baseline; trying an older one"
        )
    for name, report in found.reports.items():
        made = report.run.git_sha if report.run is not None else None
        if not made:  # every report the action writes records it: one without was put there by other hands
            return (
                f"reports/{name}.json records no commit it was made from, which every report of diagbot's action "
                "records, so it is not that branch's baseline; trying an older one"
            )
        if candidate.head_sha and made.lower() != candidate.head_sha.lower():
            return (
                f"reports/{name}.json was made from commit {made[:12]}, not from its run's commit "
                f"{candidate.head_sha[:12]}, so it is not that branch's baseline; trying an older one"
            )
    return None


def _unknown(problems: list[str]) -> list[str]:
    return [
        f"the baseline could not be fetched, so this pull request cannot be compared (a gate never passes on a "
        f"baseline it could not read): {problem}"
        for problem in problems
    ]


def _read(files: dict[str, bytes], config: Config, where: str) -> Baselines:
    found = baselines_in_archive(files, [s.name for s in config.suites])
    if found.problems and not found.reports:  # nothing readable: try an older one, and say why
        raise UnsafeArtifact(*[f"{where}: {p}" for p in found.problems])
    return found


def _provenance(settings: Settings, candidate: ArtifactCandidate, config: Config, now: datetime) -> BaselineInfo:
    age = max(0.0, (now - candidate.created_at).total_seconds() / 86400)
    warnings = []
    if age > config.gate.baseline_max_age_days:
        warnings.append(
            f"the baseline is {age:.0f} days old (limit {config.gate.baseline_max_age_days:g}); "
            f"merge or rerun on {candidate.head_branch} to refresh it"
        )
    if not candidate.exact:
        warnings.append(
            f"no baseline from the base commit itself; compared with the newest from {candidate.head_branch}"
        )
    return BaselineInfo(
        source="artifact",
        label=f"{candidate.name} #{candidate.id}",
        branch=candidate.head_branch,
        sha=candidate.head_sha,
        run_id=candidate.run_id,
        run_url=settings.run_link(candidate.run_id),
        age_days=round(age, 2),
        exact=candidate.exact,
        warnings=warnings,
    )

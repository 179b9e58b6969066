"""Run the built image's entrypoint the way the runner does, against the loopback GitHub test server.

A push run writes the baseline (uploaded as the artifact), then a pull_request run must comment once, create a
success check run on the head sha and set the outputs, as in tests/test_entrypoint.py. Usage:
    python scripts/container_e2e.py IMAGE
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.github_server import GitHubTestServer  # noqa: E402
from tests.test_entrypoint import BASE, EVENTS, HEAD, REPO, TOKEN, parse_outputs, upload_baseline  # noqa: E402

OWNER_UID = 1001  # the hosted runner's `runner` user owns the workspace


def entrypoint(image: str) -> list[str]:
    out = subprocess.run(["buildah", "inspect", "--type", "image", image], check=True, capture_output=True, text=True)
    command: list[str] = json.loads(out.stdout)["OCIv1"]["config"]["Entrypoint"]
    return command


def run(
    image: str, command: list[str], gh: GitHubTestServer, root: Path, event: str
) -> tuple[int, str, dict[str, str]]:
    ws, files, workflow = root / "workspace", root / "file_commands", root / "workflow"
    for folder in (files, workflow):
        folder.mkdir(exist_ok=True)
    shutil.copy(EVENTS / f"{event}.json", workflow / "event.json")
    (files / "set_output").write_text("")
    (files / "step_summary").write_text("")
    env = {
        "INPUT_GITHUB-TOKEN": TOKEN,
        "INPUT_MAX-WAIT-SECONDS": "5",
        "GITHUB_ACTIONS": "true",
        "GITHUB_API_URL": gh.api_url,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": "/github/workflow/event.json",
        "GITHUB_SHA": BASE if event == "push" else "c" * 40,
        "GITHUB_REF": "refs/pull/7/merge" if event == "pull_request" else "refs/heads/main",
        "GITHUB_RUN_ID": "4242",
        "GITHUB_WORKSPACE": "/github/workspace",
        "GITHUB_OUTPUT": "/github/file_commands/set_output",
        "GITHUB_STEP_SUMMARY": "/github/file_commands/step_summary",
    }
    container = subprocess.run(["buildah", "from", image], check=True, capture_output=True, text=True).stdout.strip()
    try:
        args = ["buildah", "run", "--isolation", "chroot", "--workingdir", "/github/workspace"]
        for name, value in env.items():
            args += ["-e", f"{name}={value}"]
        for host, inside in ((ws, "workspace"), (files, "file_commands"), (workflow, "workflow")):
            args += ["-v", f"{host}:/github/{inside}"]
        proc = subprocess.run([*args, container, "--", *command], capture_output=True, text=True, timeout=300)
    finally:
        subprocess.run(["buildah", "rm", container], check=True, capture_output=True)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert TOKEN not in proc.stdout.replace(f"::add-mask::{TOKEN}", "") + proc.stderr
    return proc.returncode, proc.stdout + proc.stderr, parse_outputs((files / "set_output").read_text())


def main() -> int:
    image = sys.argv[1]
    command = entrypoint(image)
    with tempfile.TemporaryDirectory(prefix="diagbot-container-") as tmp, GitHubTestServer(token=TOKEN) as gh:
        root = Path(tmp)
        ws = root / "workspace"
        ws.mkdir()
        for folder in ("cases", "fixtures"):
            shutil.copytree(ROOT / folder, ws / folder)
        shutil.copy(ROOT / "diagbot.yml", ws / "diagbot.yml")
        os.chown(ws, OWNER_UID, OWNER_UID)
        gh.add_repo(REPO, id=1001)
        gh.add_pull(REPO, 7, head_sha=HEAD, head_ref="feature", base_ref="main", base_sha=BASE)

        code, log, _ = run(image, command, gh, root, "push")
        assert code == 0, log
        run_id = upload_baseline(gh, ws / "diagbot-report")
        shutil.rmtree(ws / "diagbot-report")

        # The pull request changes nothing, so nothing regresses; the bundled agent suite's failing gating P0 case
        # still fails the check on its own (a push, above, never gates).
        code, log, outputs = run(image, command, gh, root, "pull_request")
        assert code == 1, log
        [comment] = gh.comments.values()
        assert comment.body.startswith("<!-- diagbot:"), comment.body[:200]
        assert "### ❌ diagbot: 1 gating P0 case failed" in comment.body, comment.body[:300]
        assert f"actions/runs/{run_id}" in comment.body
        assert [(c.head_sha, c.conclusion) for c in gh.check_runs.values()] == [(HEAD, "failure")]
        assert outputs["comment-url"].endswith(str(comment.id)), outputs
        assert outputs["baseline-sha"] == BASE and outputs["has-regression"] == "false"
        assert outputs["report-dir"] == "diagbot-report" and 0 < float(outputs["pass-rate"]) < 1
        assert (ws / "diagbot-report" / "pr.json").is_file()
        assert re.search(r"diagbot: .*report in /github/workspace/diagbot-report", log), log
        gh.assert_no_violations()

        owners = {p.stat().st_uid for p in (ws / "diagbot-report").rglob("*")} | {(ws / "diagbot-report").stat().st_uid}
        assert owners == {OWNER_UID}, f"report files owned by {sorted(owners)}, not the workspace owner {OWNER_UID}"
        print(f"container-test: push + pull_request through {image} passed ({len(gh.api_requests())} API requests)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

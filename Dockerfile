# diagbot as a GitHub container action. Small and reproducible: Debian's Python, pinned wheels, no build tools.
# No USER: the runner needs root (it mounts the workspace and file-command files owned by its own user).
FROM debian:bookworm-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log

# Dependencies first, in their own layer: only a change of the lock file rebuilds it. Binary wheels only, so no
# compiler is ever needed (or left behind). pip/setuptools stay out of the runtime venv's way afterwards.
COPY requirements.lock /tmp/requirements.lock
RUN python3 -m venv /opt/diagbot \
 && /opt/diagbot/bin/pip install --no-cache-dir --only-binary=:all: -r /tmp/requirements.lock \
 && rm /tmp/requirements.lock \
 && find /opt/diagbot -name '__pycache__' -prune -exec rm -rf {} +

# The code. entrypoint.py sits next to diagbot/, so `import diagbot` from /action/entrypoint.py resolves to
# /action/diagbot; the Markdown templates are package data inside it (diagbot/render/templates/).
COPY pyproject.toml README.md entrypoint.py /action/
COPY diagbot/ /action/diagbot/
RUN /opt/diagbot/bin/pip install --no-cache-dir --no-deps /action \
 && /opt/diagbot/bin/pip uninstall -y pip setuptools \
 && rm -rf /action/build /action/*.egg-info \
 && find /opt/diagbot /action -name '__pycache__' -prune -exec rm -rf {} +

ENTRYPOINT ["/opt/diagbot/bin/python", "/action/entrypoint.py"]

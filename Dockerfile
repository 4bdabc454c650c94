# syntax=docker/dockerfile:1
#
# The energy-platform image: one process per container, `energy-platform <command>`.
#
#   docker build -t energy-platform .
#   docker run --rm -e EP_DATABASE_URL=... energy-platform migrate      # apply sql/ first
#   docker run -e EP_DATABASE_URL=... -e EP_MQTT_URL=mqtt://ingest:PW@host:1883 \
#              -e EP_MQTT_ACCOUNTS_URL=mqtt://accounts:PW@host:1883 energy-platform  # = serve all
#   docker run -p 80:8001 -p 8000:8000 ... energy-platform  # provisioning on the host's port 80
#
# Homebases fetch their configuration over HTTP on port 80: publish the host's port 80 to 8001,
# as compose.yaml does; the process stays unprivileged (uid 10001) on 8001 inside. HTTPS: mount
# a certificate and key and set EP_HTTP_TLS_CERT / EP_HTTP_TLS_KEY (then every HTTP port is
# HTTPS; the HEALTHCHECK below follows).
#
# The default command is `serve all`; it does not migrate. compose.yaml runs `migrate` as a
# one-shot service that `platform` waits for (service_completed_successfully). Any other
# deployment must run `energy-platform migrate` once per release before starting the services.
#
# No Docker engine exists on the development machines: this file is checked by reading, and by
# building the same non-editable install with uv outside Docker.

# --- web: the data API page's chart library from the npm registry (web/package-lock.json) ----
FROM node:20-bookworm-slim AS web
WORKDIR /web
COPY web/package.json web/package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund

# --- builder: resolve the locked dependencies and install the project into /app/.venv --------
FROM python:3.11-slim-bookworm AS builder

RUN pip install --no-cache-dir uv==0.13.8

# The venv is copied to the same path in the runtime stage (its scripts' shebangs are absolute).
# Python is the base image's /usr/local/bin/python3.11, which the runtime stage has too: uv must
# not download a managed interpreter that would be missing there.
ENV UV_PROJECT_ENVIRONMENT=/app/.venv \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON=/usr/local/bin/python3.11 \
    UV_PYTHON_DOWNLOADS=never

WORKDIR /src

# Dependencies first, in their own layer: it is rebuilt only when the lock changes.
COPY pyproject.toml uv.lock ./
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-editable --no-install-project

# Then the project itself, as a wheel: sql/ ends up in site-packages as energy_platform/sql
# (hatch force-include), which is where paths.migrations_dir() looks first. README.md is the
# package's readme in pyproject.toml, so the build needs it.
COPY README.md ./
COPY src ./src
COPY sql ./sql
# What scripts/install-web.sh copies on a development machine; the wheel ships it (hatch artifacts).
COPY --from=web /web/node_modules/uplot/dist/uPlot.esm.js /web/node_modules/uplot/dist/uPlot.min.css \
     /web/node_modules/uplot/LICENSE ./src/energy_platform/api/dashboard/static/vendor/uplot/
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-editable

# --- runtime: the venv and nothing else ------------------------------------------------------
FROM python:3.11-slim-bookworm AS runtime

LABEL org.opencontainers.image.title="energy-platform" \
      org.opencontainers.image.description="Open energy-monitoring platform on TimescaleDB" \
      org.opencontainers.image.licenses="Apache-2.0"

# A fixed numeric uid/gid, so orchestrators can verify "non-root" without reading /etc/passwd.
RUN groupadd --system --gid 10001 energy \
    && useradd --system --uid 10001 --gid energy --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin energy

# Owned by root and read-only for the service user: the code cannot be changed at run time.
COPY --from=builder /app/.venv /app/.venv

ENV PATH="/app/.venv/bin:$PATH" \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    EP_HTTP_HOST=0.0.0.0 \
    EP_DEVICES_HOST=0.0.0.0 \
    EP_LOG_FORMAT=json

WORKDIR /app
USER 10001:10001

# HTTP: data API, provisioning (published as the host's port 80 too), forwarder. UDP: CoAP,
# TFTP (firmware).
EXPOSE 8000 8001 8002 5683/udp 6969/udp

# Ready = the data API answers and its database does (/readyz is 503 otherwise). slim has no
# curl; urlopen raises on any non-2xx status, so the exit status is the answer. The port follows
# EP_HTTP_API_PORT; 127.0.0.1 works because EP_HTTP_HOST is 0.0.0.0. With EP_HTTP_TLS_CERT set
# it asks over HTTPS without checking the certificate (issued for the public name, not
# 127.0.0.1; the probe only asks whether this process answers). Only meaningful for
# `serve all` / `serve api`: compose disables it for the one-shot `migrate` service.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, ssl, urllib.request; tls = bool(os.environ.get('EP_HTTP_TLS_CERT')); urllib.request.urlopen(('https' if tls else 'http') + '://127.0.0.1:' + os.environ.get('EP_HTTP_API_PORT', '8000') + '/readyz', timeout=4, context=ssl._create_unverified_context() if tls else None)"]

# Exec form: energy-platform is PID 1 and receives SIGTERM itself; run_services stops every
# service within EP_SHUTDOWN_TIMEOUT (10 s by default).
STOPSIGNAL SIGTERM
ENTRYPOINT ["energy-platform"]
CMD ["serve", "all"]

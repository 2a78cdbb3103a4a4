# syntax=docker/dockerfile:1
#
# stephost in a container: one `stephost serve --http` process per container,
# serving MCP at :8080/mcp with tenants from /etc/stephost/tenants.toml.
#
#   docker build -t stephost .
#   docker run --rm -p 8080:8080 \
#     -v "$PWD/examples/tenants.toml:/etc/stephost/tenants.toml:ro" stephost
#
# See docs/deploy.md (Kubernetes, routing sessions to their instance, sizing)
# and docs/security.md (what the container does and does not isolate).

# --- build -------------------------------------------------------------------
FROM rust:1.95-bookworm AS build

# Build packages of the desktop capability's screen capture (xcap). Versions
# are not pinned: they come from the base image's Debian release, with its
# security updates.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libclang-dev \
      libegl-dev \
      libgbm-dev \
      libpipewire-0.3-dev \
      libwayland-dev \
      libxcb1-dev \
      pkg-config \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src

# The toolchain pinned by rust-toolchain.toml, with the wasm32-wasip2 target the
# plugins are built for (host/build.rs builds them and embeds them in the binary).
COPY rust-toolchain.toml ./
RUN rustup toolchain install \
 && rustup target add wasm32-wasip2 \
 && rustc --version

# componentize-py and Robot Framework build the Python evaluator component
# (host/runtime/build.rs); the same pinned versions scripts/deps.sh installs.
COPY host/runtime/python/requirements.txt host/runtime/python/build-requirements.txt /tmp/evaluator/
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-venv \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/evaluator/venv \
 && /opt/evaluator/venv/bin/pip install -q --no-cache-dir -r /tmp/evaluator/build-requirements.txt \
 && /opt/evaluator/venv/bin/pip install -q --no-cache-dir --no-compile \
      --target /opt/evaluator/site -r /tmp/evaluator/requirements.txt
ENV STEPHOST_COMPONENTIZE_PY=/opt/evaluator/venv/bin/componentize-py \
    STEPHOST_EVALUATOR_SITE=/opt/evaluator/site

COPY . .
# Cache mounts keep the registry and the build trees between builds; the binary
# is copied out of the cache mount so the image layer holds it.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    --mount=type=cache,target=/src/plugins/target \
    cargo build --release --locked --bin stephost \
 && install -m 0755 target/release/stephost /usr/local/bin/stephost

# --- run ---------------------------------------------------------------------
FROM debian:bookworm-slim

# Chromium and chromedriver for the browser plugin (the webdriver capability
# starts chromedriver on loopback on first use); CA certificates for outbound
# HTTPS that a tenant's grant allows. Unpinned on purpose (Debian security
# updates for the browser matter more than byte-identical rebuilds).
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates \
      chromium \
      chromium-driver \
 && rm -rf /var/lib/apt/lists/*

# A fixed, unprivileged user. Its home holds the compile cache (precompiled
# plugins, keyed by the engine's compatibility hash) and the browser profiles.
RUN groupadd --system --gid 10001 stephost \
 && useradd --system --uid 10001 --gid stephost --home-dir /var/lib/stephost \
      --create-home --shell /usr/sbin/nologin stephost \
 && mkdir -p /etc/stephost

COPY --from=build /usr/local/bin/stephost /usr/local/bin/stephost

ENV XDG_CACHE_HOME=/var/lib/stephost/cache \
    STEPHOST_LOG=info
USER 10001:10001
WORKDIR /var/lib/stephost
EXPOSE 8080
# `stephost serve` shuts down in order on SIGTERM, the default stop signal
# (in-flight requests finish, browser sessions are deleted).

ENTRYPOINT ["stephost"]
CMD ["serve", "--http", "0.0.0.0:8080", "--tenants", "/etc/stephost/tenants.toml"]

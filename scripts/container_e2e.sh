#!/usr/bin/env bash
# Build the dashboard's Docker image with podman (runtime runc) on a machine
# without a container registry: the Dockerfile's base image is bootstrapped
# locally with mmdebstrap (Debian bookworm + python3, python3-venv,
# python-is-python3) and tagged with the name the Dockerfile asks for.
#
#   scripts/container_e2e.sh            # install (if needed), base, build
#   scripts/container_e2e.sh install    # apt-get install podman runc mmdebstrap ...
#   scripts/container_e2e.sh base       # bootstrap + podman import the base image
#   scripts/container_e2e.sh build      # podman build the image
#   scripts/container_e2e.sh run        # run it on 127.0.0.1:$PORT (prints the container id)
#
# Environment: IMAGE (default calibration-dashboard:e2e), WORK (bootstrap
# folder, default ~/.cache/calibration-dashboard-e2e), MIRROR (Debian mirror,
# default http://deb.debian.org/debian), PORT (default 8050), BUILD_NETWORK
# (podman build --network, default host: pip inside the build needs PyPI),
# BUILD_CA_BUNDLE (a CA bundle pip inside the build must trust, e.g. behind a
# TLS-intercepting proxy; default: the host's PIP_CERT, REQUESTS_CA_BUNDLE or
# SSL_CERT_FILE when set). The bundle and a pip.conf naming it are mounted for
# the RUN steps only (podman build --volume): nothing of it ends up in the image.
# Used by tests/hosting/test_container_e2e.py (CONTAINER_E2E=1).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IMAGE="${IMAGE:-calibration-dashboard:e2e}"
WORK="${WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/calibration-dashboard-e2e}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
SUITE="${SUITE:-bookworm}"
PORT="${PORT:-8050}"
BUILD_NETWORK="${BUILD_NETWORK:-host}"
BUILD_CA_BUNDLE="${BUILD_CA_BUNDLE:-${PIP_CERT:-${REQUESTS_CA_BUNDLE:-${SSL_CERT_FILE:-}}}}"

# The base image the Dockerfile names (ARG PYTHON_IMAGE=...), fully qualified.
BASE="$(sed -n 's/^ARG PYTHON_IMAGE=//p' "$REPO/Dockerfile" | head -n 1)"
if [[ -z "$BASE" ]]; then
    echo "container_e2e: no 'ARG PYTHON_IMAGE=' default in $REPO/Dockerfile" >&2
    exit 2
fi
# A first component names a registry only when a '/' follows it (python:3.11 has none).
FIRST="${BASE%%/*}"
if [[ "$BASE" == */* && ( "$FIRST" == *.* || "$FIRST" == *:* || "$FIRST" == localhost ) ]]; then
    QUALIFIED="$BASE"                                  # already has a registry
elif [[ "$BASE" == */* ]]; then
    QUALIFIED="docker.io/$BASE"
else
    QUALIFIED="docker.io/library/$BASE"
fi

# No systemd and no journald here: cgroupfs and a file event log; always runc.
podman_() { podman --runtime runc --cgroup-manager cgroupfs --events-backend file "$@"; }

step() { printf '\n== %s\n' "$*"; }
trap 'rc=$?; echo "container_e2e: FAILED (exit $rc) at line $LINENO: $BASH_COMMAND" >&2' ERR

do_install() {
    local missing=()
    for tool in podman runc mmdebstrap; do
        command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        step "podman, runc and mmdebstrap are installed"
        return
    fi
    step "installing ${missing[*]} (Debian packages)"
    if [[ "$(id -u)" -ne 0 ]]; then
        echo "container_e2e: ${missing[*]} missing; run as root or: sudo apt-get install podman runc mmdebstrap netavark aardvark-dns iptables" >&2
        exit 2
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends \
        podman runc mmdebstrap netavark aardvark-dns iptables ca-certificates
}

do_base() {
    if podman_ image exists "$QUALIFIED"; then
        step "base image $QUALIFIED already present"
        return
    fi
    mkdir -p "$WORK"
    local tarball="$WORK/base-$SUITE.tar"
    if [[ ! -f "$tarball" || ! -s "$tarball" ]]; then
        rm -rf "$tarball" "$WORK/base-$SUITE.part.tar"
        step "bootstrapping Debian $SUITE with python3 (mmdebstrap, $MIRROR)"
        mmdebstrap --mode=root --variant=minbase --format=tar \
            --include=python3,python3-venv,python-is-python3,ca-certificates \
            --aptopt='Acquire::Retries "3"' \
            --customize-hook='chroot "$1" python --version' \
            --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
            "$SUITE" "$WORK/base-$SUITE.part.tar" "$MIRROR"
        mv "$WORK/base-$SUITE.part.tar" "$tarball"
    fi
    step "importing the base as $QUALIFIED"
    podman_ import \
        --change 'ENV LANG=C.UTF-8' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["python3"]' \
        "$tarball" "$QUALIFIED"
    if [[ "$QUALIFIED" != "$BASE" ]]; then
        # The Dockerfile's short name resolves to a local image under either name.
        podman_ tag "$QUALIFIED" "localhost/$BASE"
    fi
    podman_ image inspect --format '{{.Id}} {{.Size}}' "$QUALIFIED"
}

do_build() {
    # The Dockerfile is built as it is (its own ARG default names the base).
    local mounts=()
    if [[ -n "$BUILD_CA_BUNDLE" && -f "$BUILD_CA_BUNDLE" ]]; then
        mkdir -p "$WORK"
        printf '[global]\ncert = /run/build-ca/ca-bundle.crt\n' > "$WORK/pip.conf"
        mounts=(--volume "$BUILD_CA_BUNDLE:/run/build-ca/ca-bundle.crt:ro"
                --volume "$WORK/pip.conf:/etc/pip.conf:ro")
        step "pip in the build trusts $BUILD_CA_BUNDLE (mounted for RUN steps only)"
    fi
    step "building $IMAGE from $REPO/Dockerfile (base $BASE, never pulled)"
    podman_ build --pull=never --format docker --network "$BUILD_NETWORK" "${mounts[@]}" \
        -t "$IMAGE" -f "$REPO/Dockerfile" "$REPO"
    podman_ image inspect --format '{{.Id}} user={{.Config.User}} cmd={{.Config.Cmd}}' "$IMAGE"
}

do_run() {
    local key nofile nproc
    key="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
    # Podman asks runc for nofile=1048576 as root; without CAP_SYS_RESOURCE that
    # fails ("error setting rlimit type 7"), so stay within this shell's limits.
    nofile="$(ulimit -n)"
    nproc="$(ulimit -u)"
    [[ "$nproc" == unlimited || "$nproc" -gt 32768 ]] && nproc=32768
    podman_ run -d --rm --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc" \
        -p "127.0.0.1:$PORT:8050" -e "SECRET_KEY=$key" "$IMAGE"
}

case "${1:-all}" in
    install) do_install ;;
    base) do_base ;;
    build) do_build ;;
    run) do_run ;;
    all) do_install; do_base; do_build ;;
    *) echo "usage: $0 [install|base|build|run|all]" >&2; exit 2 ;;
esac

#!/bin/sh
# Installs Forge into PREFIX from this checkout's locks: what deploy/Dockerfile's RUN steps call,
# and what a host without containers runs (as root) to get the same layout.
#
#   deploy/install.sh PREFIX            uv, the project, the sandbox launcher, the step runtime
#   deploy/install.sh --packages run    only Debian packages a Forge process needs at run time
#                                       (python3.11, bubblewrap, util-linux): the image's
#                                       final stage
#   deploy/install.sh --state-dir DIR UID   DIR (FORGE_HOME) owned by UID, private to it
#
# PREFIX gets:
#   tools/    uv, pinned with its hashes (deploy/uv-requirements.txt)
#   src/      a copy of the project (packages, stdlib/, pyproject.toml, uv.lock): installed
#             editable, as uv's Docker guide does, because stdlib/ is found next to the packages
#   venv/     the project from uv.lock (`uv sync --locked --no-dev`) on /usr/bin/python3.11,
#             with the native sandbox launcher next to its python
#   runtime/  the sealed step runtime (set FORGE_STEP_RUNTIME to it)
#   bin/      forge, and python (the venv's), for PATH
# Every step is a no-op or a cheap refresh when current. uv never downloads a Python and reads
# its cache from UV_CACHE_DIR when set: with the wheels cached, nothing is fetched but uv's own
# wheel (pip's cache, PIP_CACHE_DIR, serves that after the first install). The result is
# readable and executable by every user and writable only by its owner (root when run as root).
set -eu

BASE_PYTHON=/usr/bin/python3.11
HERE=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
SOURCE=$(dirname -- "$HERE")
# What a Forge process needs at run time, and what building the launcher needs besides.
# util-linux: prlimit(1) sets each sandbox's process limit inside its namespace.
RUN_PACKAGES="python3.11 bubblewrap util-linux"
BUILD_PACKAGES="python3.11-venv gcc libc6-dev"
# The project as installed: everything the packages read at run time, nothing of tests or docs.
PROJECT_FILES="pyproject.toml uv.lock README.md schemas compiler activities workflows workers stdlib deploy"

export UV_PYTHON_DOWNLOADS=never
umask 022

say() { printf 'install.sh: %s\n' "$*"; }
die() { printf 'install.sh: error: %s\n' "$*" >&2; exit 2; }

usage() {
    die "usage: deploy/install.sh PREFIX (an absolute path, e.g. /opt/forge), deploy/install.sh --packages run, or deploy/install.sh --state-dir DIR UID"
}

# The Debian packages among $1 whose files are missing ($2: a command or path to test for each).
missing_packages() {
    found=""
    for pkg in $1; do
        case $pkg in
            python3.11) test -x "$BASE_PYTHON" || found="$found $pkg" ;;
            python3.11-venv) "$BASE_PYTHON" -c 'import ensurepip' 2>/dev/null || found="$found $pkg" ;;
            bubblewrap) command -v bwrap >/dev/null 2>&1 || found="$found $pkg" ;;
            util-linux) test -x /usr/bin/prlimit || found="$found $pkg" ;;
            gcc) command -v gcc >/dev/null 2>&1 || found="$found $pkg" ;;
            libc6-dev) test -f /usr/include/stdio.h || found="$found $pkg" ;;
            *) die "internal: no test for package $pkg" ;;
        esac
    done
    printf '%s' "${found# }"
}

# Installs the packages of $1 that are missing: with apt-get as root, else one line naming them.
ensure_packages() {
    need=$(missing_packages "$1")
    test -n "$need" || return 0
    if [ "$(id -u)" != 0 ]; then
        die "missing Debian packages: $need; install them as root (\`sudo apt-get install $need\`) or run this script as root"
    fi
    command -v apt-get >/dev/null 2>&1 \
        || die "missing packages: $need, and apt-get is not here: install them with this system's package manager"
    say "installing $need (apt-get) ..."
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086  # one word per package
    apt-get install -y -qq --no-install-recommends $need >/dev/null
    rm -rf /var/lib/apt/lists/*
}

install_uv() {
    prefix=$1
    want=$(sed -n 's/^uv==\([^ ]*\).*/\1/p' "$SOURCE/deploy/uv-requirements.txt")
    test -n "$want" || die "$SOURCE/deploy/uv-requirements.txt pins no uv==VERSION"
    if [ -x "$prefix/tools/bin/uv" ] && [ "$("$prefix/tools/bin/uv" --version | cut -d' ' -f2)" = "$want" ]; then
        return 0
    fi
    say "installing uv $want into $prefix/tools ..."
    test -x "$prefix/tools/bin/python" || "$BASE_PYTHON" -m venv "$prefix/tools"
    "$prefix/tools/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
        --require-hashes -r "$SOURCE/deploy/uv-requirements.txt" \
        || die "pip could not install uv $want from deploy/uv-requirements.txt: it needs PyPI or pip's cache (PIP_CACHE_DIR) holding that wheel"
}

# A fresh copy of the project into PREFIX/src, swapped in whole (the venv's .pth names it).
copy_source() {
    prefix=$1
    for name in $PROJECT_FILES; do
        test -e "$SOURCE/$name" || die "$SOURCE/$name is missing: run this script from a Forge checkout"
    done
    rm -rf "$prefix/src.new" "$prefix/src.old"
    mkdir -p "$prefix/src.new"
    # shellcheck disable=SC2086  # one word per file
    (cd "$SOURCE" && tar -cf - --exclude=__pycache__ --exclude='*.pyc' $PROJECT_FILES) \
        | tar -C "$prefix/src.new" -xf -
    if [ -d "$prefix/src" ]; then mv "$prefix/src" "$prefix/src.old"; fi
    mv "$prefix/src.new" "$prefix/src"
    rm -rf "$prefix/src.old"
}

install_prefix() {
    prefix=$1
    case $prefix in /*) ;; *) usage ;; esac
    ensure_packages "$RUN_PACKAGES $BUILD_PACKAGES"
    mkdir -p "$prefix"
    install_uv "$prefix"
    uv=$prefix/tools/bin/uv
    copy_source "$prefix"
    say "installing forge into $prefix/venv from uv.lock ..."
    # Copies, not links into uv's cache (often under a home directory others cannot read);
    # bytecode compiled now, because no user may write into the installed tree later.
    (cd "$prefix/src" && UV_PROJECT_ENVIRONMENT="$prefix/venv" "$uv" sync --locked --no-dev \
        --python "$BASE_PYTHON" --link-mode copy --compile-bytecode --quiet) \
        || die "\`uv sync --locked --no-dev\` failed (above): offline, uv's cache (UV_CACHE_DIR) must hold every wheel uv.lock names"
    "$prefix/venv/bin/python" -m compileall -q "$prefix/src" >/dev/null \
        || die "cannot compile the project's sources in $prefix/src"
    say "building the sandbox launcher ..."
    gcc -O2 -Wall -Wextra -Werror -o "$prefix/venv/bin/forge-sandbox-launcher.new" \
        "$prefix/src/activities/sandbox/launcher.c"
    mv "$prefix/venv/bin/forge-sandbox-launcher.new" "$prefix/venv/bin/forge-sandbox-launcher"
    (cd "$prefix/src" && PYTHONDONTWRITEBYTECODE=1 "$prefix/venv/bin/python" \
        -m activities.sandbox.step_runtime build --uv "$uv" --root "$prefix/runtime") \
        || die "the step runtime could not be built (above)"
    mkdir -p "$prefix/bin"
    ln -sfn ../venv/bin/forge "$prefix/bin/forge"
    ln -sfn ../venv/bin/python "$prefix/bin/python"  # the API's health check runs `python`
    # Readable and executable by everyone (workers run unprivileged), writable by the owner only.
    chmod -R u+rwX,go+rX,go-w "$prefix"
    if [ "$(id -u)" = 0 ]; then chown -R 0:0 "$prefix"; fi
    say "forge installed in $prefix: run $prefix/bin/forge with FORGE_STEP_RUNTIME=$prefix/runtime"
}

case ${1:-} in
    --packages)
        [ "${2:-}" = run ] || usage
        ensure_packages "$RUN_PACKAGES"
        say "run-time packages present: $RUN_PACKAGES"
        ;;
    --state-dir)
        [ $# = 3 ] || usage
        case $2 in /*) ;; *) usage ;; esac
        case $3 in *[!0-9]* | "") die "--state-dir DIR UID: UID must be numeric, got '$3'" ;; esac
        [ "$(id -u)" = 0 ] || die "--state-dir hands $2 to uid $3: run it as root"
        mkdir -p "$2"
        chown "$3:$3" "$2"
        chmod 0700 "$2"
        say "state directory $2 belongs to uid $3"
        ;;
    "" | -*) usage ;;
    *)
        [ $# = 1 ] || usage
        install_prefix "$1"
        ;;
esac

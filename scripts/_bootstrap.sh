# Sourced by scripts/hub, scripts/test and scripts/bench: make .venv and install tiny-hub into
# it when it is missing or pyproject.toml / constraints.txt changed, then leave $VENV set.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
EXTRAS="${TINY_HUB_EXTRAS:-}"

find_python() {
    for candidate in "${PYTHON:-}" python3.13 python3.12 python3.11 python3; do
        [ -n "$candidate" ] || continue
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

if [ ! -x "$VENV/bin/python" ]; then
    PY="$(find_python)" || {
        echo "tiny-hub: Python 3.11 or newer is needed (set PYTHON=/path/to/python3.11)" >&2
        exit 1
    }
    echo "tiny-hub: creating $VENV with $("$PY" --version)"
    "$PY" -m venv "$VENV" || {
        echo "tiny-hub: could not create a venv; on Debian/Ubuntu: sudo apt-get install python3-venv" >&2
        exit 1
    }
fi

want="$(cat "$ROOT/pyproject.toml" "$ROOT/constraints.txt" | sha256sum | cut -d' ' -f1) $EXTRAS"
stamp="$VENV/.tiny-hub-installed"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then
        echo "tiny-hub: a C compiler is needed to build llama-cpp-python;" \
            "on Debian/Ubuntu: sudo apt-get install build-essential" >&2
        exit 1
    fi
    echo "tiny-hub: installing dependencies into .venv. The first time takes about 5 minutes:"
    echo "          llama-cpp-python compiles from source (about 4 minutes on 2 cores)."
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    set +e
    CMAKE_BUILD_PARALLEL_LEVEL="$(nproc 2>/dev/null || echo 2)" \
        "$VENV/bin/python" -m pip install --progress-bar on -c "$ROOT/constraints.txt" \
        -e "$ROOT${EXTRAS:+[$EXTRAS]}" 2>&1 |
        grep --line-buffered -v -E '^(Requirement already satisfied|  Using cached)'
    status="${PIPESTATUS[0]}"
    set -e
    if [ "$status" -ne 0 ]; then
        echo "tiny-hub: installing dependencies failed (see above)" >&2
        exit 1
    fi
    echo "$want" >"$stamp"
fi

# Sourced by scripts/hub, scripts/test and scripts/bench: make .venv and install tiny-hub into
# it when it is missing, when pyproject.toml / constraints.txt changed, when an extra is asked
# for that is not installed yet, or when llama.cpp's build flags changed; then leave $VENV set.
#
# The stamp ($VENV/.tiny-hub-installed) has three lines:
#   deps <sha256 of pyproject.toml + constraints.txt>
#   extras <comma-separated extras installed>
#   llama <llama-cpp-python version> <CMake arguments it was compiled with>
# Extras only accumulate: `scripts/test` (extras "dev") followed by `scripts/hub` (none)
# installs nothing the second time.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
EXTRAS="${TINY_HUB_EXTRAS:-}"

# llama.cpp's default build (GGML_NATIVE=ON) targets the build machine's CPU, AMX tiles and
# AVX-512 included, and dies with SIGILL on a CPU (or a VM) without them. The portable
# baseline runs on every x86-64 CPU with AVX2 (Haswell, 2013, and later; AMD since Zen).
# TINY_HUB_LLAMA_CMAKE_ARGS replaces it, e.g. "-DGGML_NATIVE=ON" for this machine's CPU only.
portable_llama_args() {
    case "$(uname -m)" in
    x86_64 | amd64)
        echo "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
            "-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
        ;;
    *) echo "-DGGML_NATIVE=OFF" ;;
    esac
}
LLAMA_ARGS="${TINY_HUB_LLAMA_CMAKE_ARGS:-$(portable_llama_args)}"
LLAMA_VERSION="$(sed -n 's/^llama_cpp_python==//p' "$ROOT/constraints.txt")"

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

# The union of two comma-separated extras lists, sorted, without blanks or repeats.
union_extras() {
    printf '%s,%s' "$1" "$2" | tr ',' '\n' | sed '/^$/d' | sort -u | paste -sd, -
}

stamp_field() {
    [ -f "$STAMP" ] || return 0
    sed -n "s/^$1 //p" "$STAMP" | head -n1
}

pip_quietly() {
    set +e
    "$VENV/bin/python" -m pip "$@" 2>&1 |
        grep --line-buffered -v -E '^(Requirement already satisfied|  Using cached)'
    local status="${PIPESTATUS[0]}"
    set -e
    return "$status"
}

need_compiler() {
    if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then
        echo "tiny-hub: a C compiler is needed to build llama-cpp-python;" \
            "on Debian/Ubuntu: sudo apt-get install build-essential" >&2
        exit 1
    fi
}

build_llama() {
    # A wheel built with these flags is kept under a name made of the version and the flags
    # (pip's own wheel cache is keyed by the source alone and would bring back a build made
    # with other flags), so a second checkout or a new venv on this machine skips the compile.
    local key wheels
    key="$(printf '%s %s' "$LLAMA_VERSION" "$LLAMA_ARGS" | sha256sum | cut -c1-16)"
    wheels="${XDG_CACHE_HOME:-$HOME/.cache}/tiny-hub/llama-cpp-python-$key"
    if ! ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
        echo "tiny-hub: compiling llama-cpp-python ${LLAMA_VERSION:-} for $(uname -m) (about 4" \
            "minutes on 2 cores, longer on a busy machine) with: $LLAMA_ARGS"
        need_compiler
        mkdir -p "$wheels"
        CMAKE_ARGS="$LLAMA_ARGS" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc 2>/dev/null || echo 2)" \
            pip_quietly wheel --no-cache-dir --no-deps --progress-bar on -w "$wheels" \
            "llama-cpp-python${LLAMA_VERSION:+==$LLAMA_VERSION}" || {
            rm -rf "$wheels"
            echo "tiny-hub: compiling llama-cpp-python failed (see above)" >&2
            exit 1
        }
    else
        echo "tiny-hub: llama-cpp-python built with these flags before: $wheels"
    fi
    pip_quietly install --force-reinstall --no-deps "$wheels"/llama_cpp_python-*.whl || {
        echo "tiny-hub: installing llama-cpp-python failed (see above)" >&2
        exit 1
    }
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

STAMP="$VENV/.tiny-hub-installed"
deps="$(cat "$ROOT/pyproject.toml" "$ROOT/constraints.txt" | sha256sum | cut -d' ' -f1)"
installed_extras="$(stamp_field extras)"
extras="$(union_extras "$installed_extras" "$EXTRAS")"
llama_ok=0
[ "$(stamp_field llama)" = "$LLAMA_VERSION $LLAMA_ARGS" ] && llama_ok=1
deps_ok=0
[ "$(stamp_field deps)" = "$deps" ] && [ "$extras" = "$installed_extras" ] && deps_ok=1

if [ "$llama_ok" = 0 ] || [ "$deps_ok" = 0 ]; then
    echo "tiny-hub: installing into .venv${extras:+ (extras: $extras)}. The first time takes about"
    echo "          5 minutes: llama-cpp-python compiles from source, the rest is ~1 GB of wheels."
    pip_quietly install --quiet --upgrade pip || true
    if [ "$llama_ok" = 0 ]; then
        build_llama
    fi
    # CMAKE_ARGS again: should pip ever have to (re)build llama-cpp-python here, it builds the
    # same portable library.
    CMAKE_ARGS="$LLAMA_ARGS" pip_quietly install --progress-bar on -c "$ROOT/constraints.txt" \
        -e "$ROOT${extras:+[$extras]}" || {
        echo "tiny-hub: installing dependencies failed (see above)" >&2
        exit 1
    }
    printf 'deps %s\nextras %s\nllama %s\n' "$deps" "$extras" "$LLAMA_VERSION $LLAMA_ARGS" >"$STAMP"
fi

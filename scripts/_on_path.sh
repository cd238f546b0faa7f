# Sourced by scripts/hub after _bootstrap.sh: the docs call the command `tiny-hub`. When that
# name does not reach this checkout, say so once (a stamp in .venv remembers), and on a terminal
# offer a link in ~/.local/bin to scripts/hub, written only when the person answers yes.

offer_on_path() {
    [ -n "${HOME:-}" ] || return 0 # a service without a home directory: nothing to offer
    local hub_script="$ROOT/scripts/hub" bin_dir="$HOME/.local/bin" stamp="$VENV/.tiny-hub-path"
    local link="$HOME/.local/bin/tiny-hub" found answer
    found="$(command -v tiny-hub 2>/dev/null || true)"
    if [ -n "$found" ]; then
        case "$(readlink -f "$found")" in
        "$(readlink -f "$hub_script")" | "$(readlink -f "$VENV/bin/tiny-hub")") return 0 ;;
        esac
    fi
    [ -e "$stamp" ] && return 0
    : >"$stamp"
    if [ -n "$found" ]; then
        echo "tiny-hub: note: the tiny-hub on your PATH is $found, not this checkout's;" \
            "for this one run ./scripts/hub <command>" >&2
    elif [ -e "$link" ] || [ -L "$link" ]; then
        echo "tiny-hub: $link is there but $bin_dir is not on your PATH: add" \
            "export PATH=\"\$HOME/.local/bin:\$PATH\" to ~/.profile (or run ./scripts/hub <command>)" >&2
    elif [ -t 0 ] && [ -t 2 ]; then
        printf '%s' "tiny-hub: the docs run \`tiny-hub <command>\`, which is not on your PATH." \
            " Link $link to this checkout's scripts/hub? [y/N] " >&2
        read -r answer || answer=""
        case "$answer" in
        [yY]*) link_on_path "$hub_script" "$bin_dir" "$link" ;;
        *) echo "tiny-hub: nothing written; ./scripts/hub <command> does the same" \
            "(later: ln -s $hub_script $link)" >&2 ;;
        esac
    else
        echo "tiny-hub: the docs' \`tiny-hub <command>\` is ./scripts/hub <command> here;" \
            "to call it tiny-hub: ln -s $hub_script $link" >&2
    fi
}

link_on_path() {
    local hub_script="$1" bin_dir="$2" link="$3"
    mkdir -p "$bin_dir" && ln -s "$hub_script" "$link" || {
        echo "tiny-hub: could not write $link (see above); ./scripts/hub <command> works" >&2
        return 0
    }
    echo "tiny-hub: linked $link -> $hub_script (rm $link undoes it)" >&2
    case ":$PATH:" in
    *":$bin_dir:"*) ;;
    *) echo "tiny-hub: $bin_dir is not on your PATH yet: add" \
        "export PATH=\"\$HOME/.local/bin:\$PATH\" to ~/.profile and open a new terminal" >&2 ;;
    esac
}

offer_on_path

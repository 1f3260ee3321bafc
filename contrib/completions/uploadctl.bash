# bash completion for uploadctl(1)                                  -*- shell-script -*-
#
# Installed as $PREFIX/share/bash-completion/completions/uploadctl, or sourced from ~/.bashrc.
# Needs nothing but bash: commands, options and their values come from the lists below, job IDs,
# batch IDs and remote names from the daemon itself (`uploadctl --json list`, `--json remotes`),
# asked through the same socket as the command line being completed (--socket, else the default).

_uploadctl_commands="add list show status reload pause resume retry cancel remove priority move limit clear top delete wait watch remotes folders help"
_uploadctl_global_options="--socket --json --help"
_uploadctl_states="queued running paused completed failed canceled"
_uploadctl_protocols="auto put post tus s3 chunked file"

# The options of each command (the global ones are added to every list).
_uploadctl_options() {
    case $1 in
    add) echo "--to --protocol --header --header-file --field --file-field --user --password-file --chunk-size --priority --snapshot --image --exclude --hidden --follow -0 --wait --meta --client-token" ;;
    list) echo "--state --batch" ;;
    pause | resume | cancel | remove) echo "--all --state --batch" ;;
    retry) echo "--failed --batch" ;;
    delete) echo "--batch" ;;
    move) echo "--top --bottom --before --after" ;;
    wait) echo "--timeout --batch" ;;
    remotes) echo "--test" ;;
    esac
}

# Runs the uploadctl being completed with --json and the line's --socket; quiet on failure.
_uploadctl_ask() {
    local program=${_uploadctl_program:-uploadctl}
    "$program" ${_uploadctl_socket:+--socket "$_uploadctl_socket"} --json "$@" 2>/dev/null
}

# The values of a numeric key in a JSON document on stdin, one per line ("id", "batch").
_uploadctl_json_numbers() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c '
import json, sys
key = sys.argv[1]
seen = set()
for job in json.load(sys.stdin).get("jobs", []):
    value = job.get(key)
    if isinstance(value, int) and value not in seen:
        seen.add(value)
        print(value)
' "$1" 2>/dev/null
    else
        # Keys are sorted and job objects hold no other "id": a key after { or , is the job's own.
        grep -o "[{,]\"$1\":[0-9]*" | sed 's/.*://' | sort -un
    fi
}

# Job IDs, of the jobs in the given states when some are named.
_uploadctl_job_ids() {
    local state arguments=()
    for state in "$@"; do arguments+=(--state "$state"); done
    _uploadctl_ask list "${arguments[@]}" | _uploadctl_json_numbers id
}

_uploadctl_batch_ids() {
    _uploadctl_ask list | _uploadctl_json_numbers batch
}

# The names of the configured remotes or watched folders (LIST: remotes or folders), from
# `uploadctl --json LIST`: {"LIST":[{"name":...},...]}.
_uploadctl_names() {
    local json
    json=$(_uploadctl_ask "$1") || return
    if command -v python3 >/dev/null 2>&1; then
        printf '%s' "$json" | python3 -c '
import json, sys
for item in json.load(sys.stdin).get(sys.argv[1], []):
    print(item.get("name", ""))
' "$1" 2>/dev/null
    else
        printf '%s' "$json" | grep -o '[{,]"name":"[^"\\]*"' | sed 's/.*:"//; s/"$//'
    fi
}

# The jobs a command can act on: pause what runs, resume what is paused, and so on.
_uploadctl_job_states() {
    case $1 in
    pause) echo "queued running" ;;
    resume) echo "paused failed" ;;
    retry) echo "failed" ;;
    cancel) echo "queued running paused" ;;
    esac
}

_uploadctl() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=""
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    # `--state=fa`: bash splits at `=`, so the option is two words back.
    if [[ $cur == "=" ]]; then
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        cur=""
    elif [[ $prev == "=" ]] && ((COMP_CWORD > 1)); then
        prev=${COMP_WORDS[COMP_CWORD - 2]}
    fi

    _uploadctl_program=${COMP_WORDS[0]}
    [[ $_uploadctl_program == "~/"* ]] && _uploadctl_program=$HOME/${_uploadctl_program#"~/"}
    _uploadctl_socket=""
    local command="" positionals=0 word i
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        case $word in
        --socket)
            if [[ ${COMP_WORDS[i + 1]} == "=" ]]; then
                _uploadctl_socket=${COMP_WORDS[i + 2]}
                ((i += 2))
            else
                _uploadctl_socket=${COMP_WORDS[i + 1]}
                ((i++))
            fi
            ;;
        --to | --protocol | --header | --header-file | --field | --file-field | --user | --password-file | --chunk-size | \
            --priority | --snapshot | --image | --exclude | --state | --batch | --before | --after | --timeout | --test | \
            --meta | --client-token)
            [[ ${COMP_WORDS[i + 1]} == "=" ]] && ((i++))
            ((i++))
            ;;
        -*) ;;
        *)
            if [[ -z $command ]]; then command=$word; else ((positionals++)); fi
            ;;
        esac
    done
    _uploadctl_socket=${_uploadctl_socket/#\~/$HOME}

    COMPREPLY=()
    case $prev in
    --socket | --header-file | --password-file)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        return
        ;;
    --state)
        mapfile -t COMPREPLY < <(compgen -W "$_uploadctl_states" -- "$cur")
        return
        ;;
    --protocol)
        mapfile -t COMPREPLY < <(compgen -W "$_uploadctl_protocols" -- "$cur")
        return
        ;;
    --snapshot)
        mapfile -t COMPREPLY < <(compgen -W "auto copy none" -- "$cur")
        return
        ;;
    --image)
        # Comma-separated words: complete the last one, keeping those before it.
        local done=""
        [[ $cur == *,* ]] && done=${cur%,*},
        compopt -o nospace 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -P "$done" -W "max= quality= format= max-bytes= strip-gps strip on-error=original max-pixels= untrusted-loaders" -- "${cur##*,}")
        return
        ;;
    --to)
        # A remote as NAME: (the path is the user's to type), or the start of a URL.
        compopt -o nospace 2>/dev/null
        local remotes
        remotes=$(_uploadctl_names remotes | sed 's/$/:/')
        mapfile -t COMPREPLY < <(compgen -W "$remotes https:// http:// s3:// file:///" -- "$cur")
        return
        ;;
    --test)
        mapfile -t COMPREPLY < <(compgen -W "$(_uploadctl_names remotes)" -- "$cur")
        return
        ;;
    --batch)
        mapfile -t COMPREPLY < <(compgen -W "$(_uploadctl_batch_ids)" -- "$cur")
        return
        ;;
    --before | --after)
        mapfile -t COMPREPLY < <(compgen -W "$(_uploadctl_job_ids queued paused)" -- "$cur")
        return
        ;;
    --header | --field | --file-field | --user | --chunk-size | --priority | --exclude | --timeout | --meta | --client-token)
        return
        ;;
    esac

    if [[ -z $command ]]; then
        if [[ $cur == -* ]]; then
            mapfile -t COMPREPLY < <(compgen -W "$_uploadctl_global_options" -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -W "$_uploadctl_commands" -- "$cur")
        fi
        return
    fi

    if [[ $cur == -* && $cur != "-" ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_uploadctl_options "$command") $_uploadctl_global_options" -- "$cur")
        return
    fi

    case $command in
    add)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        ;;
    show | pause | resume | retry | cancel | remove | delete | wait | watch)
        [[ $command == show ]] && ((positionals > 0)) && return
        # shellcheck disable=SC2046
        mapfile -t COMPREPLY < <(compgen -W "$(_uploadctl_job_ids $(_uploadctl_job_states "$command"))" -- "$cur")
        ;;
    priority | move)
        ((positionals == 0)) && mapfile -t COMPREPLY < <(compgen -W "$(_uploadctl_job_ids)" -- "$cur")
        ;;
    limit)
        ((positionals == 0)) && mapfile -t COMPREPLY < <(compgen -W "off" -- "$cur")
        ;;
    folders)
        if ((positionals == 0)); then
            mapfile -t COMPREPLY < <(compgen -W "pause resume" -- "$cur")
        elif ((positionals == 1)); then
            mapfile -t COMPREPLY < <(compgen -W "$(_uploadctl_names folders)" -- "$cur")
        fi
        ;;
    help)
        ((positionals == 0)) && mapfile -t COMPREPLY < <(compgen -W "$_uploadctl_commands" -- "$cur")
        ;;
    esac
}

complete -F _uploadctl uploadctl

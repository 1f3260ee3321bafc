# fish completion for uploadctl(1): installed as
# $PREFIX/share/fish/vendor_completions.d/uploadctl.fish. Commands, options and their values come
# from the lists below; job IDs, batch IDs and remote names from the daemon itself
# (`uploadctl --json list`, `--json remotes`), asked through the socket the command line names with
# --socket, else the default one.

# The options that take a value, so that the value is not taken for the command.
set -g __uploadctl_value_options --socket --to --protocol --header --header-file --field --file-field --user \
    --password-file --chunk-size --priority --snapshot --image --exclude --state --batch --before \
    --after --timeout --test --meta --client-token

# Prints the command of the line being completed (add, list...); fails when there is none yet.
function __uploadctl_command
    set -l words (commandline -opc)
    set -e words[1]
    set -l skip 0
    for word in $words
        if test $skip = 1
            set skip 0
            continue
        end
        if contains -- $word $__uploadctl_value_options
            set skip 1
        else if not string match -q -- '-*' $word
            echo $word
            return 0
        end
    end
    return 1
end

function __uploadctl_needs_command
    not __uploadctl_command >/dev/null
end

# Whether the line's command is one of the arguments.
function __uploadctl_using
    set -l command (__uploadctl_command)
    or return 1
    contains -- $command $argv
end

# Whether the line has exactly argv[1] words after its command (options and their values not
# counted).
function __uploadctl_positionals
    set -l words (commandline -opc)
    set -l count -1 # the command's own word comes first
    set -l skip 0
    for word in $words[2..-1]
        if test $skip -eq 1
            set skip 0
        else if contains -- $word $__uploadctl_value_options
            set skip 1
        else if not string match -q -- '-*' $word
            set count (math $count + 1)
        end
    end
    test $count -eq $argv[1]
end

# Runs the uploadctl being completed with --json (and the line's --socket); quiet on failure.
function __uploadctl_ask
    set -l words (commandline -opc)
    set -l program $words[1]
    set -l socket
    for i in (seq 2 (count $words))
        switch $words[$i]
            case --socket
                set socket --socket $words[(math $i + 1)]
            case '--socket=*'
                set socket --socket (string replace -- --socket= '' $words[$i])
        end
    end
    set socket (string replace -r -- '^~' $HOME $socket)
    $program $socket --json $argv 2>/dev/null
end

# "ID<tab>STATE SOURCE" for the jobs in the given states (all without).
function __uploadctl_jobs
    set -l arguments
    for state in $argv
        set -a arguments --state $state
    end
    if command -q python3
        __uploadctl_ask list $arguments | python3 -c '
import json, sys
for job in json.load(sys.stdin).get("jobs", []):
    print("%d\t%s %s" % (job["id"], job.get("state", ""), job.get("source", "").replace("\n", " ")))
' 2>/dev/null
    else
        # Keys are sorted and job objects hold no other "id": a key after { or , is the job's own.
        __uploadctl_ask list $arguments | string match -ar '[{,]"id":[0-9]+' | string replace -r '.*:' ''
    end
end

function __uploadctl_batches
    __uploadctl_ask list | string match -ar '[{,]"batch":[0-9]+' | string replace -r '.*:' '' | sort -un
end

# "NAME<tab>DESCRIPTION" for the configured remotes or watched folders (argv[1]: remotes or
# folders), from `uploadctl --json LIST`; the description is the values of the keys argv[2..].
function __uploadctl_named
    if command -q python3
        __uploadctl_ask $argv[1] | python3 -c '
import json, sys
for item in json.load(sys.stdin).get(sys.argv[1], []):
    print("%s\t%s" % (item.get("name", ""), " ".join(str(item.get(key, "")) for key in sys.argv[2:])))
' $argv 2>/dev/null
    else
        __uploadctl_ask $argv[1] | string match -ar '[{,]"name":"[^"\\\\]*"' | string replace -r '.*:"(.*)"$' '$1'
    end
end

function __uploadctl_remotes
    __uploadctl_named remotes protocol url
end

function __uploadctl_folders
    __uploadctl_named folders state path
end

# --to: a remote as NAME: (the path after it is the user's to type), or the start of a URL.
function __uploadctl_destinations
    __uploadctl_remotes | string replace -r '^([^\t]*)' '$1:'
    printf '%s\n' https:// http:// s3:// file:///
end

set -l states queued running paused completed failed canceled
set -l protocols auto put post tus s3 chunked file

complete -c uploadctl -f

# Global options, before or after the command.
complete -c uploadctl -l socket -r -F -d "The daemon's control socket"
complete -c uploadctl -l json -d 'Print JSON for programs'
complete -c uploadctl -s h -l help -d 'Show help'

# Commands.
complete -c uploadctl -n __uploadctl_needs_command -a add -d 'Queue files and folders for upload'
complete -c uploadctl -n __uploadctl_needs_command -a list -d 'List jobs with their state and progress'
complete -c uploadctl -n __uploadctl_needs_command -a show -d 'Show one job in detail, with its error and history'
complete -c uploadctl -n __uploadctl_needs_command -a status -d "Show the daemon's state, paths and config warnings"
complete -c uploadctl -n __uploadctl_needs_command -a reload -d 'Make the daemon read its configuration again'
complete -c uploadctl -n __uploadctl_needs_command -a pause -d 'Pause jobs'
complete -c uploadctl -n __uploadctl_needs_command -a resume -d 'Resume paused jobs'
complete -c uploadctl -n __uploadctl_needs_command -a retry -d 'Restart failed jobs with a fresh attempt budget'
complete -c uploadctl -n __uploadctl_needs_command -a cancel -d 'Cancel jobs'
complete -c uploadctl -n __uploadctl_needs_command -a remove -d 'Cancel jobs if needed and forget them'
complete -c uploadctl -n __uploadctl_needs_command -a priority -d "Set a job's priority"
complete -c uploadctl -n __uploadctl_needs_command -a move -d 'Move a job in the queue'
complete -c uploadctl -n __uploadctl_needs_command -a limit -d 'Limit all uploads together, or show the limit'
complete -c uploadctl -n __uploadctl_needs_command -a clear -d 'Drop completed, failed and canceled jobs'
complete -c uploadctl -n __uploadctl_needs_command -a top -d 'The upload list, live'
complete -c uploadctl -n __uploadctl_needs_command -a delete -d 'Remove jobs and delete their files from the server'
complete -c uploadctl -n __uploadctl_needs_command -a wait -d 'Wait until jobs have ended'
complete -c uploadctl -n __uploadctl_needs_command -a watch -d 'Print job events as they happen'
complete -c uploadctl -n __uploadctl_needs_command -a remotes -d 'List the configured remotes, or test one'
complete -c uploadctl -n __uploadctl_needs_command -a folders -d 'List the watched folders, or pause or resume one'
complete -c uploadctl -n __uploadctl_needs_command -a help -d 'Show the help of a command'

# add PATH...|- --to DEST ...
complete -c uploadctl -n '__uploadctl_using add' -F
complete -c uploadctl -n '__uploadctl_using add' -l to -x -a '(__uploadctl_destinations)' -d 'Where to upload'
complete -c uploadctl -n '__uploadctl_using add' -l protocol -x -a "$protocols" -d 'How to upload'
complete -c uploadctl -n '__uploadctl_using add' -l header -x -d "An HTTP header to send ('K: V')"
complete -c uploadctl -n '__uploadctl_using add' -l header-file -r -F -d 'Headers to send, one per line'
complete -c uploadctl -n '__uploadctl_using add' -l field -x -d 'A form field (K=V)'
complete -c uploadctl -n '__uploadctl_using add' -l file-field -x -d 'The form part that carries the file (post)'
complete -c uploadctl -n '__uploadctl_using add' -l user -x -d 'Basic auth USER[:PASSWORD]'
complete -c uploadctl -n '__uploadctl_using add' -l password-file -r -F -d 'The password for --user'
complete -c uploadctl -n '__uploadctl_using add' -l chunk-size -x -d 'Bytes per chunk, block or part (8M)'
complete -c uploadctl -n '__uploadctl_using add' -l priority -x -d 'Higher starts first (-1000 to 1000)'
complete -c uploadctl -n '__uploadctl_using add' -l snapshot -x -a 'auto copy none' -d 'How the file is kept from changing'
complete -c uploadctl -n '__uploadctl_using add' -l image -x -a 'max= quality= format=jpeg format=webp format=keep max-bytes= strip-gps strip on-error=original max-pixels= untrusted-loaders' -d 'Prepare images before upload'
complete -c uploadctl -n '__uploadctl_using add' -l exclude -x -d 'In folders, skip what matches GLOB'
complete -c uploadctl -n '__uploadctl_using add' -l hidden -d 'In folders, also add hidden files'
complete -c uploadctl -n '__uploadctl_using add' -l follow -d 'In folders, follow symbolic links'
complete -c uploadctl -n '__uploadctl_using add' -s 0 -d 'The paths on stdin are NUL-separated'
complete -c uploadctl -n '__uploadctl_using add' -l wait -d 'Wait for the jobs to end'
complete -c uploadctl -n '__uploadctl_using add' -l meta -x -d 'Data of your own to keep with each job (K=V)'
complete -c uploadctl -n '__uploadctl_using add' -l client-token -x -d 'A token of your own for the one file added'

# list
complete -c uploadctl -n '__uploadctl_using list' -l state -x -a "$states" -d 'Only jobs in this state'
complete -c uploadctl -n '__uploadctl_using list' -l batch -x -a '(__uploadctl_batches)' -d 'Only the jobs of batch N'

# The job verbs: IDs of the jobs each can act on, --all, --state, --batch.
complete -c uploadctl -n '__uploadctl_using show delete remove wait watch priority' -a '(__uploadctl_jobs)'
complete -c uploadctl -n '__uploadctl_using pause' -a '(__uploadctl_jobs queued running)'
complete -c uploadctl -n '__uploadctl_using resume' -a '(__uploadctl_jobs paused failed)'
complete -c uploadctl -n '__uploadctl_using retry' -a '(__uploadctl_jobs failed)'
complete -c uploadctl -n '__uploadctl_using cancel' -a '(__uploadctl_jobs queued running paused)'
complete -c uploadctl -n '__uploadctl_using pause resume cancel remove' -l all -d 'Every job it applies to'
complete -c uploadctl -n '__uploadctl_using pause resume cancel remove' -l state -x -a "$states" -d 'With --all, only jobs in this state'
complete -c uploadctl -n '__uploadctl_using retry' -l failed -d 'Every failed job'
complete -c uploadctl -n '__uploadctl_using pause resume retry cancel remove delete wait' -l batch -x -a '(__uploadctl_batches)' -d 'Every job of batch N'

# move ID --top|--bottom|--before ID|--after ID
complete -c uploadctl -n '__uploadctl_using move' -a '(__uploadctl_jobs queued paused)'
complete -c uploadctl -n '__uploadctl_using move' -l top -d 'Start it next'
complete -c uploadctl -n '__uploadctl_using move' -l bottom -d 'After every other waiting job'
complete -c uploadctl -n '__uploadctl_using move' -l before -x -a '(__uploadctl_jobs queued paused)' -d 'Right before this job'
complete -c uploadctl -n '__uploadctl_using move' -l after -x -a '(__uploadctl_jobs queued paused)' -d 'Right after this job'

# limit, wait, remotes, help
complete -c uploadctl -n '__uploadctl_using limit' -a off -d 'No limit'
complete -c uploadctl -n '__uploadctl_using wait' -l timeout -x -d 'Give up after SECONDS'
complete -c uploadctl -n '__uploadctl_using remotes' -l test -x -a '(__uploadctl_remotes)' -d 'Check that a remote works'
complete -c uploadctl -n '__uploadctl_using folders; and __uploadctl_positionals 0' -a 'pause resume' -d 'Pause or resume a folder'
complete -c uploadctl -n '__uploadctl_using folders; and __uploadctl_positionals 1' -a '(__uploadctl_folders)'
complete -c uploadctl -n '__uploadctl_using help' -a 'add list show status reload pause resume retry cancel remove priority move limit clear top delete wait watch remotes folders'

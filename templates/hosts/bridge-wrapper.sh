#!/bin/sh
# memwiki bridging run for {{HOST}}, written by `memwiki schedule --host {{HOST}} --install`.
# It tells memwiki that this process is the scheduled run (so the run never mines its own
# session), allows one run per host at a time, and starts {{HOST}} headless on the task prompt.
set -u
export MEMWIKI_BRIDGING_RUN=1
export MEMWIKI_DIR={{WIKI}}
# cron starts with a minimal PATH: add memwiki's own directory, the PATH of the shell that
# ran `schedule --install` (where the agent and its runtime, e.g. node, were found) and the
# usual install places.
export PATH={{BIN_DIR}}:{{INSTALL_PATH}}:"$HOME/.local/bin:/usr/local/bin:/opt/homebrew/bin:$PATH"
# The agent's own variables that move its files (config home, state), as they were set
# where `schedule --install` ran: cron has none of them.
{{HOME_EXPORTS}}
# The memwiki this was installed with. Once it cannot run (its virtualenv deleted, a pipx
# or uv tool uninstalled, the Python it was made with removed) neither can the agent's
# memwiki commands: no agent is started, hour after hour, for a run that cannot record
# anything; the log says what to run instead.
MEMWIKI={{MEMWIKI}}
if ! "$MEMWIKI" --version >/dev/null 2>&1; then
    echo "memwiki: $MEMWIKI does not run (gone, or the Python it was installed with is): run \`memwiki schedule --host {{HOST}} --install\` with the memwiki you use now" >&2
    exit 1
fi
PROMPT_FILE={{PROMPT_FILE}}
LOCK={{LOCK}}
mkdir -p "$(dirname "$LOCK")"
if command -v flock >/dev/null 2>&1; then
    exec 9>"$LOCK"
    # A run that is still going (a long session backlog) wins; this one just skips.
    flock -n 9 || exit 0
else
    mkdir "$LOCK.d" 2>/dev/null || exit 0
    trap 'rmdir "$LOCK.d"' EXIT INT TERM
fi
# cron appends every run's output to LOG: past 1 MiB it becomes LOG.1 (this run's output
# follows it there, the next run starts LOG anew), so a year of hourly runs keeps at most
# about 2 MiB. Done under the lock: one run at a time rotates.
LOG={{LOG}}
if [ -f "$LOG" ] && [ "$(wc -c < "$LOG")" -gt {{LOG_LIMIT}} ]; then
    mv -f "$LOG" "$LOG.1"
fi
cd {{WORKDIR}} || exit 1
PROMPT=$(cat "$PROMPT_FILE") || exit 1
{{HEADLESS}}

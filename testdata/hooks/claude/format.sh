#!/usr/bin/env bash
# Claude Code PostToolUse hook: format the file Claude just wrote or edited.
#
# In .claude/settings.json:
#
#   "hooks": {
#     "PostToolUse": [
#       {"matcher": "Edit|MultiEdit|Write",
#        "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/format.sh"}]}
#     ]
#   }
set -euo pipefail

file=$(python3 -c 'import json, sys; print(json.load(sys.stdin).get("tool_input", {}).get("file_path", ""))')
if [[ -z "$file" || ! -f "$file" ]]; then
  exit 0
fi

case "$file" in
  *.go)
    if command -v gofmt >/dev/null; then
      gofmt -w "$file" || echo "gofmt could not format $file" >&2
    fi
    ;;
  *.py)
    if command -v black >/dev/null; then
      black -q "$file" || true
    fi
    ;;
  *.md | *.txt)
    sed -i -e 's/[[:space:]]*$//' "$file"
    ;;
esac
exit 0

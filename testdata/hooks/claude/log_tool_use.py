#!/usr/bin/env python3
"""Claude Code hook: log every tool call, before and after it runs, one JSON line each.

In ~/.claude/settings.json, for both PreToolUse and PostToolUse:

    {"matcher": "*",
     "hooks": [{"type": "command", "command": "python3 ~/.claude/hooks/log_tool_use.py"}]}

The log goes to $CLAUDE_TOOL_LOG, or ~/.claude/logs/tool-use.jsonl.
"""
import datetime
import json
import os
import sys

LOG = os.path.expanduser(os.environ.get("CLAUDE_TOOL_LOG", "~/.claude/logs/tool-use.jsonl"))


def main():
    data = json.load(sys.stdin)
    entry = {
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "session": data.get("session_id"),
        "event": data.get("hook_event_name"),
        "tool": data.get("tool_name"),
        "input": data.get("tool_input"),
        "cwd": data.get("cwd"),
    }
    if "tool_response" in data:
        entry["response"] = data["tool_response"]

    os.makedirs(os.path.dirname(LOG), exist_ok=True)
    with open(LOG, "a") as f:
        f.write(json.dumps(entry) + "\n")


if __name__ == "__main__":
    main()

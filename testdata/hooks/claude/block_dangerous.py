#!/usr/bin/env python3
"""Claude Code PreToolUse hook: stop dangerous shell commands before they run.

In ~/.claude/settings.json:

    "hooks": {
      "PreToolUse": [
        {"matcher": "Bash",
         "hooks": [{"type": "command", "command": "python3 ~/.claude/hooks/block_dangerous.py"}]}
      ]
    }

Exit code 2 blocks the call; what we print on stderr is what Claude reads.
"""
import json
import re
import sys

# (pattern, what Claude is told instead)
BLOCKED = [
    (r"\brm\s+(-[a-zA-Z]*r[a-zA-Z]*f|-[a-zA-Z]*f[a-zA-Z]*r)\b",
     "Recursive force deletes (rm -rf) are blocked. Delete the specific files you mean, one by one."),
    (r"\bgit\s+push\b.*(\s--force\b|\s-f\b)",
     "Force pushes are blocked. Push without --force, or open a pull request."),
    (r"\b(curl|wget)\b[^|]*\|\s*(ba|z)?sh\b",
     "Piping a download into a shell is blocked. Download the script, read it, then run it."),
]


def main():
    try:
        data = json.load(sys.stdin)
    except json.JSONDecodeError as e:
        print(f"block_dangerous: invalid JSON on stdin: {e}", file=sys.stderr)
        sys.exit(1)

    if data.get("tool_name") != "Bash":
        sys.exit(0)

    command = data.get("tool_input", {}).get("command", "")
    for pattern, message in BLOCKED:
        if re.search(pattern, command):
            print(message, file=sys.stderr)
            sys.exit(2)

    sys.exit(0)


if __name__ == "__main__":
    main()

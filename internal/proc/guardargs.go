package proc

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/toolsd/toolsd/internal/sandbox"
)

// guardArgs is the guard's command line, after the executable, for name and args.
func guardArgs(grace time.Duration, name string, args []string) []string {
	return append([]string{GuardArg, "-grace=" + grace.String(), "--", name}, args...)
}

// guardOptions are the guard's options.
type guardOptions struct {
	grace  time.Duration
	policy *sandbox.Policy // nil: the command runs unconfined
	warm   bool            // started ahead of its command, which comes on fd 3 (warm_linux.go)
}

// parseGuardArgs reads the guard's options ([-grace=D] [-sandbox=POLICY] [-warm] [--]) and
// returns the command.
func parseGuardArgs(args []string) (o guardOptions, argv []string, err error) {
	o.grace = DefaultGrace
	for len(args) > 0 {
		switch a := args[0]; {
		case a == "--":
			return o, args[1:], nil
		case strings.HasPrefix(a, "-grace="):
			o.grace, err = time.ParseDuration(strings.TrimPrefix(a, "-grace="))
			if err != nil || o.grace <= 0 {
				return o, nil, fmt.Errorf("bad %s: want a positive duration", a)
			}
			args = args[1:]
		case a == warmFlag:
			o.warm = true
			args = args[1:]
		case strings.HasPrefix(a, sandboxFlag):
			if o.policy, err = sandbox.Decode(strings.TrimPrefix(a, sandboxFlag)); err != nil {
				return o, nil, err
			}
			args = args[1:]
		default:
			return o, args, nil
		}
	}
	return o, nil, nil
}

// MaybeRunHelper runs this process as the guard or as the sandbox's stage, and exits, when
// its arguments ask for one: what the toolsd binary does, and the test binaries that stand in
// for it in TestMain. It returns when they ask for neither.
func MaybeRunHelper() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case GuardArg:
		os.Exit(RunGuard(os.Args[2:]))
	case sandbox.StageArg:
		os.Exit(sandbox.RunStage(os.Args[2:]))
	}
}

// warmFlag is the guard's option for a guard started ahead of its command.
const warmFlag = "-warm"

// sandboxFlag is the guard's option that carries the policy of a confined command.
const sandboxFlag = "-sandbox="

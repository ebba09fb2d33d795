package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/toolsd/toolsd/internal/posix"
)

// JournalStatus says whether the change journal serves, and if not, why, what it costs and
// what fixes it.
type JournalStatus struct {
	// Off is "" while the journal serves (or checkpoints do not use one); otherwise the
	// kernel's refusal: "watches" (fs.inotify.max_user_watches ran out), "instances"
	// (fs.inotify.max_user_instances), or "error".
	Off string
	// Message is for the person: what happened, what it costs, and what to do.
	Message string
	// Fix is the command that fixes it ("" when none is known).
	Fix string
}

// Backoff of the journal's retries after the kernel refused it: the next changing call
// retries at once when the limit changed, else not before the backoff, which doubles.
const (
	minRetry = 30 * time.Second
	maxRetry = 10 * time.Minute
)

// Journal returns the change journal's status.
func (t *Tracker) Journal() JournalStatus {
	t.statusMu.Lock()
	defer t.statusMu.Unlock()
	return t.status
}

// setStatus records the journal's status and tells Options.OnJournal when it changed.
func (t *Tracker) setStatus(s JournalStatus) {
	t.statusMu.Lock()
	changed := t.status != s
	t.status = s
	t.statusMu.Unlock()
	if changed && t.opts.OnJournal != nil {
		t.opts.OnJournal(s)
	}
}

// refused is the journal's onRefused: the kernel refused a watch during a walk or for a new
// folder. Said at once; the journal is stopped when the walk ends (dropJournal).
func (t *Tracker) refused(err error) {
	t.log.Warn("the kernel refused an inotify watch: changing calls walk the workspace", "err", err)
	t.setStatus(t.offStatus(err))
}

// dropJournal stops a journal the kernel refused (releasing the watches it held, which
// other programs of the person need too) and schedules the next try. syncMu is held.
func (t *Tracker) dropJournal(err error) {
	if t.jr != nil {
		t.jr.close()
		t.jr = nil
		t.own = nil
		t.followed.Store(nil)
	}
	t.backoff = min(max(2*t.backoff, minRetry), maxRetry)
	t.retryAt = t.opts.Now().Add(t.backoff)
	t.limitsAt = t.limits()
	t.log.Info("no change journal: every changing call walks the workspace", "err", err, "retryIn", t.backoff)
	t.setStatus(t.offStatus(err))
}

// retryJournal starts a journal again when the kernel may allow it now: the limits changed
// since it refused, or the backoff is over. The walk that follows watches every folder.
// syncMu is held.
func (t *Tracker) retryJournal() {
	if t.opts.NoJournal || t.jr != nil || (t.opts.Now().Before(t.retryAt) && t.limits() == t.limitsAt) {
		return
	}
	jr, err := newJournal(t.ws, t.log, t.opts.faults, t.refused)
	if err != nil {
		t.dropJournal(err)
		return
	}
	t.jr = jr
	t.own = []string{jr.private}
	t.followed.Store(jr)
}

// journalServes is called after a walk that watched every folder without a refusal.
func (t *Tracker) journalServes() {
	if t.Journal().Off == "" {
		return
	}
	t.backoff = 0
	t.log.Info("the change journal serves again: changing calls no longer walk the workspace")
	t.setStatus(JournalStatus{})
}

// limits are the kernel's inotify limits (max_user_watches, max_user_instances).
func (t *Tracker) limits() [2]int {
	if t.opts.faults != nil && t.opts.faults.limits != nil {
		return t.opts.faults.limits()
	}
	return [2]int{readSysctl("max_user_watches"), readSysctl("max_user_instances")}
}

func readSysctl(name string) int {
	b, err := os.ReadFile("/proc/sys/fs/inotify/" + name)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// offStatus says what a refusal means for the person.
func (t *Tracker) offStatus(err error) JournalStatus {
	t.statusMu.Lock()
	walked, took := t.walked, t.walkTook
	t.statusMu.Unlock()
	cost := "every changing call walks the whole workspace to find what it changed"
	if walked > 0 {
		cost = fmt.Sprintf("every changing call walks the whole workspace (%d files and folders; the last walk took %s) to find what it changed", walked, took.Round(time.Millisecond))
	}
	cost += ", instead of reading the change journal (inotify)"
	lim := t.limits()
	var s JournalStatus
	var name string
	var want int
	switch {
	case runtime.GOOS != "linux":
		// No inotify and no sysctl to raise: on macOS the journal's kqueue ran out of open
		// files (ulimit -n), on Windows the system refused a folder's watch.
		s.Off = "error"
		s.Message = fmt.Sprintf("Checkpoints: the change journal stopped (%v): %s. toolsd tries it again every few minutes.", err, strings.Replace(cost, " (inotify)", "", 1))
		return s
	case errors.Is(err, posix.ENOSPC):
		s.Off, name, want = "watches", "max_user_watches", max(524288, 2*lim[0])
	case errors.Is(err, posix.EMFILE):
		s.Off, name, want = "instances", "max_user_instances", max(1024, 2*lim[1])
	default:
		s.Off = "error"
		s.Message = fmt.Sprintf("Checkpoints: the change journal stopped (%v): %s. toolsd tries it again every few minutes.", err, cost)
		return s
	}
	have := "used up"
	if cur := lim[0]; s.Off == "instances" {
		have = fmt.Sprintf("%d, used up", lim[1])
	} else if cur > 0 {
		have = fmt.Sprintf("%d, used up", cur)
	}
	s.Fix = fmt.Sprintf("sudo sysctl fs.inotify.%s=%d", name, want)
	s.Message = fmt.Sprintf("Checkpoints: the kernel's inotify limit fs.inotify.%s (%s) refused toolsd a watch: %s. "+
		"Raise it with `%s` (and put fs.inotify.%s=%d in a file in /etc/sysctl.d/ to keep it); "+
		"toolsd uses the journal again at the next changing call after the limit changes, without a restart "+
		"(`toolsd checkpoints check` shows what is in use).",
		name, have, cost, s.Fix, name, want)
	return s
}

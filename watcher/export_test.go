package watcher

import "time"

// SetAddWatch makes the watcher call f before each fsnotify Add; an error from f is taken
// as Add's error.
func SetAddWatch(o *Options, f func(path string) error) { o.addWatch = f }

// ForcePoll makes the watcher poll from the start.
func ForcePoll(o *Options) { o.forcePollOnStart = true }

// SetRetry sets how often a watcher polling after a refusal tries inotify again.
func SetRetry(o *Options, d time.Duration) { o.retryEvery = d }

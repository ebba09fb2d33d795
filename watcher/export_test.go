package watcher

// SetAddWatch makes the watcher call f before each fsnotify Add; an error from f is taken
// as Add's error.
func SetAddWatch(o *Options, f func(path string) error) { o.addWatch = f }

// ForcePoll makes the watcher poll from the start.
func ForcePoll(o *Options) { o.forcePollOnStart = true }

package watcher

import (
	"errors"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// The Watchers of a process share one inotify instance: instances are a scarce per-user
// resource (fs.inotify.max_user_instances, 128 by default, for every program of the
// person), and a daemon has several Watchers (its config, its project tools). Each
// subscriber gets every event and error, and keeps those that concern its paths; a folder
// two subscribers watch is watched once and unwatched when neither does.
var shared = &inotify{}

type inotify struct {
	mu   sync.Mutex // guards the fields below
	fsw  *fsnotify.Watcher
	refs map[string]int // watched folder -> how many subscribers watch it
	subs map[*subscription]struct{}
	fwd  chan struct{} // closed when the forwarding goroutine of fsw has returned
}

// subscription is one Watcher's share of the instance.
type subscription struct {
	events chan fsnotify.Event
	errs   chan error
	done   chan struct{} // closed by leave
	owned  map[string]bool
}

// join subscribes, starting the instance for the first subscriber.
func (n *inotify) join() (*subscription, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fsw == nil {
		fsw, err := fsnotify.NewBufferedWatcher(64)
		if err != nil {
			return nil, err
		}
		n.fsw, n.refs, n.subs, n.fwd = fsw, map[string]int{}, map[*subscription]struct{}{}, make(chan struct{})
		go n.forward(fsw, n.fwd)
	}
	s := &subscription{events: make(chan fsnotify.Event, 64), errs: make(chan error, 4), done: make(chan struct{}), owned: map[string]bool{}}
	n.subs[s] = struct{}{}
	return s, nil
}

// leave unwatches what s watched alone and unsubscribes; the last subscriber closes the
// instance and waits for its goroutine.
func (n *inotify) leave(s *subscription) {
	n.mu.Lock()
	if _, ok := n.subs[s]; !ok {
		n.mu.Unlock()
		return
	}
	close(s.done)
	delete(n.subs, s)
	for p := range s.owned {
		n.removeLocked(s, p)
	}
	var fsw *fsnotify.Watcher
	var fwd chan struct{}
	if len(n.subs) == 0 {
		fsw, fwd, n.fsw = n.fsw, n.fwd, nil
	}
	n.mu.Unlock()
	if fsw != nil {
		// A Watcher made meanwhile has an instance of its own: only this one's goroutine
		// is waited for.
		fsw.Close()
		<-fwd
	}
}

// ErrLeft is Inotify.Add's error once the share was closed.
var ErrLeft = errors.New("watcher: the inotify share was closed")

// add watches a folder for s.
func (n *inotify) add(s *subscription, path string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.subs[s]; !ok {
		return ErrLeft // a user that reads events as it closes (the journal) may still add
	}
	// Added even when s has it: the folder may have been made anew, its old watch gone.
	if err := n.fsw.Add(path); err != nil {
		return err
	}
	if !s.owned[path] {
		s.owned[path] = true
		n.refs[path]++
	}
	return nil
}

// remove stops watching a folder for s.
func (n *inotify) remove(s *subscription, path string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.removeLocked(s, path)
}

func (n *inotify) removeLocked(s *subscription, path string) {
	if !s.owned[path] {
		return
	}
	delete(s.owned, path)
	if n.refs[path]--; n.refs[path] <= 0 {
		delete(n.refs, path)
		_ = n.fsw.Remove(path) // a removed folder has lost its watch already
	}
}

// forward hands every event and error to every subscriber until the instance is closed.
func (n *inotify) forward(fsw *fsnotify.Watcher, done chan struct{}) {
	defer close(done)
	for {
		var ev fsnotify.Event
		var err error
		select {
		case e, ok := <-fsw.Events:
			if !ok {
				return
			}
			ev = e
		case e, ok := <-fsw.Errors:
			if !ok {
				return
			}
			err = e
		}
		n.mu.Lock()
		subs := make([]*subscription, 0, len(n.subs))
		if n.fsw == fsw { // not an instance closed meanwhile, whose subscribers are gone
			for s := range n.subs {
				subs = append(subs, s)
			}
		}
		n.mu.Unlock()
		for _, s := range subs {
			if err != nil {
				select {
				case s.errs <- err:
				case <-s.done:
				}
				continue
			}
			select {
			case s.events <- ev:
			case <-s.done:
			}
		}
	}
}

// Inotify is a share of the process's inotify instance for a user that reads the raw events
// itself (the checkpoints' change journal). Its events and errors arrive in the kernel's
// order. Close unwatches what it alone watched.
type Inotify struct{ s *subscription }

// JoinInotify takes a share of the process's inotify instance, starting it if needed.
func JoinInotify() (*Inotify, error) {
	s, err := shared.join()
	if err != nil {
		return nil, err
	}
	return &Inotify{s}, nil
}

// Events are the instance's events, every subscriber's folders alike.
func (i *Inotify) Events() <-chan fsnotify.Event { return i.s.events }

// Errors are the instance's errors (fsnotify.ErrEventOverflow: events were lost).
func (i *Inotify) Errors() <-chan error { return i.s.errs }

// Add watches a folder.
func (i *Inotify) Add(path string) error { return shared.add(i.s, path) }

// Watched reports whether this share watches the folder.
func (i *Inotify) Watched(path string) bool {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	return i.s.owned[path]
}

// Close leaves the instance.
func (i *Inotify) Close() { shared.leave(i.s) }

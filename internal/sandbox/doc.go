// Package sandbox confines the processes toolsd starts: Landlock for the filesystem (and
// TCP), seccomp for what Landlock does not cover, user, mount and network namespaces where
// the kernel gives them, and an egress proxy with a domain allowlist for a tool that may use
// the network.
//
// # The promise
//
// A process started with Start, and every process it starts, however it detaches:
//
//   - reads everything a Policy's Read names except its Deny paths (secrets, the daemon's
//     own folders), which it can neither read nor write; /dev only through the usual device
//     files (null, zero, random, the terminal);
//   - writes only below the Policy's Write folders, and there not below its Protect paths
//     (the workspace's whole git folder, the settings internal/protect names, nested git
//     repositories), which stay read-only;
//   - leaves no git folder or git file anywhere in the workspace, and no protected entry at
//     its top level, that was not there before it: once its tree has ended, what appeared
//     is moved aside (StartWatch, Watch.Finish: by the daemon, from its change journal
//     where that vouches, else by the guard, walking the workspace), so that no unconfined
//     git — the editor's, the person's — runs a configuration or hook the command planted;
//   - reaches no network (NetNone): with a network namespace it has a loopback of its own,
//     else it can open no IPv4 or IPv6 socket; or only the daemon's egress proxy (NetProxy),
//     which lets through HTTP(S) to the allowed domains, never to a private address;
//   - cannot create Unix sockets (the daemon's socket, an ssh-agent, a container engine are
//     out of reach), signal or trace a process outside its own tree (Landlock's scoping
//     from ABI 6; below it seccomp refuses signals to the daemon's pid and to -1), mount,
//     make namespaces, load modules or use the kernel's keyrings;
//   - has no capabilities, even as root, and no way to gain any (no_new_privs);
//   - runs at most Policy.MaxProcs processes at once (RLIMIT_NPROC; for root, whom that
//     limit does not hold, the guard counts the tree and kills it past the bound).
//
// A process that cannot be confined as its policy says does not run: Start fails and the
// guard exits 126. It never runs unconfined because something failed.
//
// # How
//
// The guard (internal/proc) stays unconfined; it starts this binary again as the stage
// (RunStage), which becomes the tool: it sets up the namespaces when it has them (bringing
// the loopback up, mounting each protected path read-only over itself, which also keeps it
// from being renamed or replaced), drops every
// capability, applies Landlock and the seccomp filter to all its threads, and execs the
// command. A handshake socket tells the guard the outcome before the command runs, and
// carries the loopback listener that the guard bridges to the proxy. A stage can also be
// started ahead of its command (StartWarm): it confines itself, waits, and execs the command
// the guard hands it (Warm.Run), which the guard does only while the Stamp it took before the
// stage started still holds.
//
// Where user namespaces give no capabilities (some distributions restrict them), the stage
// reports so and the guard starts it again without them (ModeLandlock): Landlock then also
// keeps the protected paths read-only, which it can only do by not granting writes on the
// folders that hold them (the workspace's top level cannot get new entries), and
// no network at all is reachable but the proxy's port (on any address: Landlock filters TCP
// by port only). See docs/sandbox.md for the limits.
//
// # macOS and Windows
//
// The Policy and Build are the same on every system. On macOS, Start runs the command under
// sandbox-exec with the profile SeatbeltProfile generates from the policy (plain Go, tested
// by its text on any system); there is no stage. On Windows, Probe offers nothing, so
// Support.Available is false: no process is confined, and nothing is allowed because of a
// sandbox; Start fails. The files: *_linux.go (Landlock, seccomp, namespaces, the stage),
// sandbox_darwin.go, sandbox_windows.go; support.go and seatbelt.go are shared.
package sandbox

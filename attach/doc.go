// Package attach makes one daemon own each workspace folder, and lets every editor window and
// every agent of that folder reach it: the owner's election, its user-only socket, the check
// of who connects, and the forwarders that the client-facing processes become.
//
// # Who owns a folder
//
// The owner is the toolsd binary in its hidden mode "__owner" (RunOwner), started detached by
// the first client of the folder (Dial): a session of its own, standard streams on /dev/null,
// no death signal tied to its starter, the starter's flags (store, retention, sync, message
// limit, log file, grace). It opens the folder's session.Workspace once — the store, the
// catalogue, the watchers, the MCP servers — and serves every client that attaches. Every
// client-facing process is a forwarder: `toolsd` spawned by an editor reads the first frame
// from its stdin (initialize names the folder), `toolsd mcp` knows the folder from
// --workspace or its working directory. A forwarder finds or starts the owner, hands it its
// stdin and stdout with a one-line hello (see below), and waits. A later client whose flags
// differ from the owner's attaches all the same; the owner logs a warning (its flags apply).
//
// # Discovery
//
// Sockets live in a private runtime folder: $XDG_RUNTIME_DIR/toolsd, or /tmp/toolsd-<uid>
// when XDG_RUNTIME_DIR is unset (RuntimeDir). The folder is created with mode 0700 and
// refused if it is a symlink or belongs to another user; one open to others is closed. A
// folder's owner is named by a hash of the folder's real path and, when the command line names
// one, of the store file (so that tests with private stores never share an owner): NAME.sock
// (the socket, mode 0600), NAME.lock and NAME.log (the owner's log when --log-file names
// none).
//
// # Election
//
// Exactly one owner per folder, also when several clients start at the same instant: the
// owner holds an exclusive flock on NAME.lock for its whole life, and only the holder binds
// the socket, removing a stale socket file first (its owner died; nobody else can hold the
// lock). A starter that finds the lock held waits until the holder's socket answers, then
// exits quietly, or takes the lock if the holder exits meanwhile (an owner past its grace).
// A client dials; when nothing answers it starts an owner and waits on a pipe for its word
// ("ready", an error, or the pipe closing when it lost the election), then dials again, all
// within a deadline (DefaultDialTimeout). An owner that cannot open the folder (its store is
// held by a --standalone daemon, say) says why, and the client serves itself instead, so the
// editor reads the same error a standalone daemon gives.
//
// # The hello
//
// A client's first message on the socket is one JSON line (Hello): the protocol that follows
// ("toolsd", LSP framing, or "mcp", newline-delimited JSON), its pid, toolsd mcp's --agent,
// and its flags. A forwarder sends it with two file descriptors (SCM_RIGHTS), its stdin and
// stdout, followed by the input it already read (Prefix: the initialize frame). The owner
// answers one line (Welcome: its pid, version and log, or an error) and serves the protocol on
// those descriptors itself: no byte of the protocol passes through the forwarder, so a call
// through it costs what a direct one does. The socket then only ties the two processes'
// lives: when the forwarder dies the owner ends its session; when the session ends the owner
// sends an End line with the exit code the forwarder exits with (0 after shutdown and exit,
// 1 otherwise, as a standalone daemon); when the owner dies the forwarder sees the socket end
// without it, says so on stderr and exits 1 — the editor's extension restarts toolsd, which
// starts a new owner, and an MCP host reconnects. A hello without descriptors runs the
// protocol on the socket itself.
//
// # Lifetimes
//
// An owner exits a grace period (--grace, DefaultGrace) after its last client leaves, and
// also when no client comes within the grace after it started. Exiting, it stops accepting,
// removes its socket, ends every session (calls cancelled and recorded), closes the
// workspace (its tool processes and MCP servers are killed as always) and releases the
// lock last. Any client may die, kill -9 included, without taking the others down: its
// session ends, its calls are cancelled, and asks only it was showing go to whoever can
// answer them now. Clients the owner started itself (a tool process, or toolsd mcp of this
// very folder among its MCP servers) do not keep it alive. kill -9 of the owner kills its
// tool processes through their guards (internal/proc) and ends every forwarder.
//
// # Security model
//
// The socket is the only new way in. A process of the same user is inside the trust
// boundary, as with any language server's socket: it could as well run the tools itself.
// Everyone else is kept out three times: the runtime folder is 0700 and must be ours, the
// socket is 0600, and on every accepted connection the owner reads the peer's credentials
// (SO_PEERCRED) and closes a connection of another uid before reading a byte from it. A
// connection that says nothing is cut after a few seconds; garbage, an overlong line or an
// unknown protocol get an error line and are closed; none of them counts as a client. Tool
// processes do run as the user and could reach the socket; keeping them away from it is the
// sandbox's job (issue 9).
//
// # macOS and Windows
//
// macOS works as Linux does, with its own peer check: LOCAL_PEERCRED (the xucred that
// getpeereid reads) for the uid and LOCAL_PEERPID for the pid (peer_darwin.go); the
// descriptors pass with SCM_RIGHTS as on Linux.
//
// Windows has no shared owner yet: RuntimeDir refuses every folder there (sys_windows.go),
// so Locate fails and every client serves itself, as --standalone does. Which mechanism it
// will get, and why not yet: AF_UNIX sockets exist on Windows 10 and later, but carry no
// SCM_RIGHTS, so the forwarder's stdin and stdout would have to be duplicated into the owner
// with DuplicateHandle (which needs a handle on the owner's process), and the socket's only
// guard would be the folder's ACL, with no peer credentials to check. A named pipe with a
// DACL that admits only the user's SID (golang.org/x/sys/windows builds one from SDDL),
// with the client checked by GetNamedPipeClientProcessId and its process token's SID, checks
// the client's identity as SO_PEERCRED does; it is the one to build. Until then two clients
// of one folder on Windows do not share it: the second one's store is locked by the first.
package attach

// Package attach makes one daemon own each workspace folder, and lets every editor window and
// every agent of that folder reach it: the owner's election, its user-only socket (a named
// pipe on Windows), the check of who connects, and the forwarders that the client-facing
// processes become.
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
// stdin and stdout with a one-line hello (see below; on Windows it relays them), and waits.
// A later client whose flags differ from the owner's attaches all the same; the owner logs a
// warning (its flags apply).
//
// # Discovery
//
// Sockets live in a private runtime folder: $XDG_RUNTIME_DIR/toolsd, or /tmp/toolsd-<uid>
// when XDG_RUNTIME_DIR is unset (RuntimeDir; Windows: see "macOS and Windows"). The folder is
// created with mode 0700 and refused if it is a symlink or belongs to another user; one open
// to others is closed. A folder's owner is named by a hash of the folder's real path and, when
// the command line names one, of the store file (so that tests with private stores never
// share an owner): NAME.sock (the socket, mode 0600), NAME.lock and NAME.log (the owner's log
// when --log-file names none).
//
// # Election
//
// Exactly one owner per folder, also when several clients start at the same instant: the
// owner holds an exclusive lock on NAME.lock for its whole life (flock; LockFileEx on
// Windows: either is released when its holder exits, however it exits), and only the holder
// binds the socket, removing a stale socket file first (its owner died; nobody else can hold
// the lock). A starter that finds the lock held waits until the holder's socket answers, then
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
// protocol on the socket itself (toolsd hook and toolsd acp talk to the owner that way).
//
// Where descriptors cannot pass (Windows), the forwarder relays its streams instead
// (Hello.Relay, relay.go): it copies its stdin to the socket and the socket to its stdout,
// both ways in frames (a kind byte, a length, the bytes), so that the end of its input (an
// end frame) and, from the owner, the session's end with the exit code (an end frame whose
// payload is the End line) pass on the one connection, which has no half-close. Every
// lifetime above holds as it is: the forwarder's death ends its connection and so its
// session, the owner's death ends the connection without an end frame. It should cost what
// the byte splice cost before descriptors were handed over (a read through the forwarder
// took 1.37x a direct one on Linux, docs/architecture.md; BenchmarkClientStreams compares a
// relayed client with a handed-over one, both in the test's process; nothing is measured on
// Windows); Linux and macOS keep handing them over. Tests run the relay on Linux too,
// against the same owner.
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
// sandbox's job (issue 9). Windows' equivalent of each guard is below.
//
// # macOS and Windows
//
// macOS works as Linux does, with its own peer check: LOCAL_PEERCRED (the xucred that
// getpeereid reads) for the uid and LOCAL_PEERPID for the pid (peer_darwin.go); the
// descriptors pass with SCM_RIGHTS as on Linux.
//
// Windows has the same owner, election, hello and lifetimes, with a named pipe for the socket
// (github.com/Microsoft/go-winio's listener and dialer) and the streams relayed (above).
// Which mechanism and why: AF_UNIX sockets exist on Windows 10 and later but carry neither
// SCM_RIGHTS nor peer credentials, so their only guard would be a folder's ACL; a named pipe
// has a DACL of its own and tells the server its client's process, so the client's identity
// is checked as SO_PEERCRED does.
//
//   - The runtime folder is %LOCALAPPDATA%\toolsd (RuntimeDir), created owned by the user
//     with a protected DACL that admits only the user's SID (folderSDDL); it holds NAME.lock
//     and NAME.log. A folder there that is a reparse point (a symbolic link, a junction) or
//     is owned by another SID is refused; one of ours whose DACL admits anyone else is
//     closed (its DACL replaced), as Linux closes a folder open to others.
//   - The pipe is \\.\pipe\toolsd-<hash of the user's SID and NAME> (pipeName): pipe names
//     are one namespace for the whole machine, so the user is part of the name. Its security
//     descriptor (pipeSDDL) is a protected DACL with one entry, all access for the user's
//     SID: no other account opens it, nor creates an instance of it — not SYSTEM, not the
//     Administrators group, not Everyone. Remote clients are refused by the pipe itself
//     (FILE_PIPE_REJECT_REMOTE_CLIENTS).
//   - Who connects: for every accepted client, before a byte is read, the owner asks the
//     pipe for the client's process (GetNamedPipeClientProcessId), opens it and its token,
//     and compares the token's user SID with its own (peerUser, sameUser); another user's
//     connection is closed and logged, as on Linux. The DACL already keeps other users out;
//     the check is the second guard, as SO_PEERCRED is behind the 0600 socket.
//   - A squatter — a process of another user that creates the pipe's name before the owner
//     does (the name is predictable) — gets nothing. The owner creates its pipe's first
//     instance with FILE_CREATE (what FILE_FLAG_FIRST_PIPE_INSTANCE asks for), so it fails
//     when the name is taken, and says so: the clients then serve themselves, as
//     --standalone. A client checks, before it writes a byte, that the pipe's server process
//     (GetNamedPipeServerProcessId) runs as its own user (dialOwner), and dials with
//     SECURITY_ANONYMOUS, so a server cannot impersonate it. A squatter can deny the shared
//     owner (each client then serves itself, and the second client of a folder finds its
//     store locked); it cannot read or write anything of ours.
//   - Starting the owner: a process group of its own (the starter's Ctrl+C does not reach
//     it), a console without a window (its tool processes open none), and out of the
//     starter's job object when that job allows it (Node.js keeps the processes an editor
//     starts in a job that kills them when the editor's process exits; an owner left in it
//     would die with the first window, under the others). The ready pipe is an inherited
//     handle whose value TOOLSD_READY_FD holds.
//   - Internal clients (descends) are found by the parent pids of a process snapshot, each
//     link checked by creation times, since Windows keeps a dead parent's pid, which may be
//     reused.
//
// None of this has run on Windows itself: it is built and vetted for windows/amd64, and its
// tests (sys_windows_test.go, and the owner's tests in owner_test.go) are the ones to run
// there. The parts that are not system calls — the pipe's name, the SDDL strings, the
// identity comparison, the relay's frames and copying, the parent walk — are tested on
// Linux, the relay end to end against a real owner. Under wine 8 the ready handle, the
// parent walk, the lock and both identity checks (GetNamedPipeClientProcessId and
// GetNamedPipeServerProcessId to the token's SID) pass. Wine connects clients to
// go-winio's held-back first pipe instance, so no owner test gets past its first dial
// there; with go-winio's listener swapped for plain CreateNamedPipe instances (a stand-in
// for that run, not in the repository) the owner's tests pass under wine end to end,
// relayed streams, 200 clients at once and a client gone mid-ask included. Wine keeps no
// security descriptor on files and ignores the first-instance rule on pipes, so the DACLs,
// the squatter's refusal and go-winio's listener are checked only by reading. Two limits are
// known from the documentation rather than tested: a client and an owner of one user at
// different elevations (an elevated window beside an ordinary one: integrity levels) may
// not reach or admit each other, and the one refused serves itself; a job that allows no
// breakaway keeps the owner in it.
package attach

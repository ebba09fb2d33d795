// Package posix is the small set of descriptor-level file calls toolsd makes (openat,
// fstatat, readlinkat, unlinkat, renameat, …), on every system it runs on: on Linux and
// macOS it is golang.org/x/sys/unix itself (the same functions, types and constants), and on
// Windows the same calls over file handles opened relative to a folder's handle.
//
// The packages that walk and write the workspace (internal/fspath, internal/fswalk,
// internal/fsopen, builtin, checkpoint) import it under the name unix, so their code reads
// and runs exactly as before on Unix and builds unchanged for Windows.
//
// # Windows
//
// A descriptor is a Windows handle held in an int. Openat opens a name relative to a folder's
// handle with NtCreateFile (its RootDirectory), so a folder renamed or replaced meanwhile
// cannot redirect it, as with openat(2). O_NOFOLLOW asks for more than on Unix: no reparse
// point (symbolic link, junction, mount point) anywhere in the name (OBJ_DONT_REPARSE, Windows
// 10 1607 and later), which is what every caller in toolsd wants; one met fails the call with
// ELOOP. Stat_t is filled from GetFileInformationByHandle: the mode's type bits from the
// attributes (a reparse point of the symbolic-link or junction kind is S_IFLNK), the
// permission bits 0o666 or, read-only, 0o444 (folders 0o777 / 0o555), Ino the file index,
// Dev the volume serial number, Uid and Gid 0. Fchmod changes only the read-only attribute.
// Errors are the syscall package's Unix-style errnos (ENOENT, EEXIST, ELOOP, …), so
// errors.Is works as on Unix.
//
// The cost of refusing every reparse point: folders that are reparse points of other kinds
// (OneDrive's cloud placeholders, say) cannot be walked through with O_NOFOLLOW either, so a
// workspace kept in such a folder is refused where toolsd opens without following links.
// Readlinkat and Symlinkat go by the folder's final path (GetFinalPathNameByHandle) rather
// than its handle. None of this has run on Windows in this repository's CI: it is built and
// vetted for windows/amd64, and TestCalls is the test to run there.
package posix

package builtin

// Design notes.
//
// # Paths
//
// Every tool that takes a path resolves it with resolvePath (paths.go): relative paths
// against the workspace (bash: against its workdir), then filepath.Clean, then every
// symbolic link resolved (EvalSymlinks; for a path that does not exist yet, the deepest
// existing ancestor is resolved, a dangling link followed by hand, and the rest appended).
// Every check works on that real path, and so does every file operation after it. A real
// path outside the workspace is asked for as external_directory with the pattern
// "<folder>/*" before the tool's own permission; the tool's own ask names the path
// relative to the workspace (slash-separated), or the absolute path when outside. Paths
// with a NUL byte or invalid UTF-8 are refused.
//
// # Races between the check and the use (Linux)
//
// The real path is what was checked, and it has no symbolic link in it; so every open of a
// checked path refuses to follow one, at every component (fspath.Open: openat2 with
// RESOLVE_NO_SYMLINKS where the kernel has it, else each folder opened from the one before
// with O_NOFOLLOW). A file or any folder above it swapped for a symlink after the check
// fails the call with errPathChanged instead of leading elsewhere; no /proc is needed. The
// standard library's os.Root was not used: it follows links that stay inside its root,
// opens a FIFO blocking, and wraps every file in an os.File, which grep's per-file loop
// avoids.
//
// Reads (openChecked, openRegular): opened O_NONBLOCK, then fstat'ed: anything but a
// regular file (a FIFO, a socket, a device) is refused with the kind named, without ever
// blocking on it.
//
// Writes (writeAtomic, removeFile): the parent folder is opened as above; missing parent
// folders are only created then, after the ask and the re-check, one at a time: mkdirat in
// the folder opened before, then opened with O_NOFOLLOW (fspath.MkdirAll), so a folder
// swapped for a symlink while the person reads the ask fails the write before anything is
// created where it leads. The temporary file is created with openat(O_CREAT|O_EXCL|
// O_NOFOLLOW) inside the opened folder, fsynced, and renameat'ed over the target in the
// same folder, and the folder is fsynced: every step is relative to the folder already
// opened, and the rename replaces a directory entry, never following a link put in the
// target's place.
//
// Edits re-check (size and modification time) that the file is still what was read
// before writing, since a person may take a while to answer the ask that shows the diff.
//
// Searches (walk.go) never follow symbolic links, so a link inside the workspace cannot
// lead glob, grep or list outside it (a link named as the path argument is resolved and
// checked like any path). The walk opens its root as above and keeps it open; each folder
// is opened below the root with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS (fspath.OpenBeneath)
// and each file with openat(O_NOFOLLOW|O_NONBLOCK) in its open folder, then fstat'ed and
// searched only if regular: a folder swapped for a symlink after it was listed is left out,
// never followed. read lists a folder through the same kind of open.
//
// They respect .gitignore and .ignore files (of every folder walked, and of the folders
// between the workspace and the search root), with git's precedence: the deepest file with
// a matching pattern decides, and in it the last matching pattern. Like git, an ignore
// file is only read if it is a regular file (not through a symlink, never a FIFO or a
// device, opened O_NONBLOCK and checked) of at most maxIgnoreFileBytes, and it is read
// with that cap; any other is left out. Patterns are matched with string compares for the
// common forms (a name, *.ext, prefix*, /path) and doublestar otherwise; go-gitignore,
// which runs one regexp per pattern per path, is much slower and is kept as the reference
// of a differential test.
//
// # Checkpoints
//
// write, edit and apply_patch report each file's exact state before they write it
// (Call.ReportBefore: the bytes read and checked unchanged, the mode; a move's target as
// not existing) after their asks and checks and before the first write, so their call's
// checkpoint holds exactly those files. bash begins its checkpoint's window (Call.
// BeginChanges) after its asks, right before the command starts.
//
// # Stored outputs
//
// read and grep page through a stored output (toolsd://output/<id>) by the lines the store
// returned (outputPageLines), never by the number asked for: a page also stops at a byte
// cap, and a single line longer than a page comes back cut, with a note. Matches in the cut
// part of such a line are not found.
//
// # Speed
//
// read streams its file in 1 MiB chunks and only counts the newlines of the lines before
// offset and after the page, so the last lines of a 1 GiB file cost one pass of
// bytes.Count and no memory beyond the page. For files of 4 MiB or more that pass also
// records where every 16384th line starts; a later read of the same version seeks to the
// nearest mark and stops after its page instead of making a pass, and a file that
// only grew since (a log) has its index extended over the new bytes alone. grep walks folders on GOMAXPROCS goroutines,
// reads files with raw system calls into pooled buffers in line-aligned chunks, finds a
// literal every match must contain by its rarest byte before running the regex on that
// line only, and for a regex without a literal whose matches are runs of a small byte set
// only runs it on lines with such a run. bench/grep_vs_rg.sh compares it with ripgrep.

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
// Reads (openChecked): the real path is opened with O_NOFOLLOW, so a last component
// swapped for a symlink fails to open; then the kernel's own name of the opened file
// (/proc/self/fd/N) must equal the checked path, so an ancestor folder swapped for a
// symlink is caught too.
//
// Writes (writeAtomic, removeFile): the parent folder is opened with
// O_DIRECTORY|O_NOFOLLOW and its kernel name checked the same way; then the temporary
// file is created with openat(O_CREAT|O_EXCL|O_NOFOLLOW) inside that opened folder,
// fsynced, and renameat'ed over the target in the same folder, and the folder is fsynced.
// A swap after the re-check cannot redirect the write, since every step is relative to the
// folder already opened; the rename replaces a directory entry and never follows a link
// put in the target's place. Not covered: folders that MkdirAll creates for a new file
// are created before the re-check, so a swapped ancestor can leave empty folders behind
// (the write itself then fails). Without /proc the O_NOFOLLOW guards remain.
//
// Searches (walk.go) never follow symbolic links, so a link inside the workspace cannot
// lead glob, grep or list outside it. They respect .gitignore and .ignore files (of every
// folder walked, and of the folders between the workspace and the search root), with
// git's precedence: the deepest file with a matching pattern decides, and in it the last
// matching pattern. Patterns are matched with string compares for the common forms (a
// name, *.ext, prefix*, /path) and doublestar otherwise; go-gitignore, which runs one
// regexp per pattern per path, was ten times slower on a 40-line .gitignore and is kept as
// the reference of a differential test.
//
// Edits re-check (size and modification time) that the file is still what was read
// before writing, since a person may take a while to answer the ask that shows the diff.
//
// # Speed
//
// read streams its file in 1 MiB chunks and only counts the newlines of the lines before
// offset and after the page, so the last lines of a 1 GiB file cost one pass of
// bytes.Count and no memory beyond the page. For files of 4 MiB or more that pass also
// records where every 16384th line starts; a later read of the same version seeks to the
// nearest mark and stops after its page (about 1 ms instead of a pass), and a file that
// only grew since (a log) has its index extended over the new bytes alone. grep walks folders on GOMAXPROCS goroutines,
// reads files with raw system calls into pooled buffers in line-aligned chunks, finds a
// literal every match must contain by its rarest byte before running the regex on that
// line only, and for a regex without a literal whose matches are runs of a small byte set
// only runs it on lines with such a run. bench/grep_vs_rg.sh compares it with ripgrep.

// Package shell reads a shell command line the way bash would run it, and says what it
// runs, which paths it touches from which folders, and whether the reading is complete.
//
// The principle: a line may run without an ask only when the analysis fully understands
// it. Analyze does not look for what is dangerous (bash and its programs have more ways to
// be dangerous than any list); it accepts a small subset it can follow, and everything
// else makes the line Opaque, which always asks (a deny rule still denies: the commands of
// an opaque line are still found and reported).
//
// # The subset
//
//   - simple commands, pipelines (| |&), lists (&& || ; & newline), ( ) subshells,
//     { } groups, ! and time;
//   - words made of literals, quotes ('..', "..", $'..'), $name and ${name} (their values
//     are unknown, see below), command and process substitutions (whose commands are
//     analysed like any other), arithmetic $(( )) of numbers only, globs and brace
//     expansions (whose results are treated as unknown paths);
//   - redirections (< > >> >| &> &>> <> n>&m <<< and here-documents) to files, which are
//     checked like any path the line reads or writes (a write to /dev/stdin or /dev/fd/3
//     writes the file behind the descriptor; only 1 and 2 are the line's own output);
//   - assignments (FOO=x cmd, FOO=x, export FOO=x) to lowercase shell variables and to the
//     environment variables in safeVars, which change nothing about what runs;
//   - the builtins cd, pushd, popd, echo, printf (not -v), pwd, true, false, :, test and [
//     (not -v), set (only -e -u -x -v -o pipefail and the like), exit, shift, type, wait
//     (not -p), kill, command, exec and builtin, and every other program.
//
// Outside it — and Opaque, with a reason in Analysis.Reasons: control flow (if, for,
// while, case), function definitions, (( )), let and [[ ]], declare/local/typeset/
// readonly, read, mapfile, printf -v, test -v, unset, eval, source, alias, hash, enable,
// shopt, trap; a file read on descriptor 1, 2 or above (1< f, 3< f) or another
// descriptor made 1 or 2 (1<&0, >&3), through which /dev/stdout would write it; parameter
// expansions with operators (${x@P}, ${!x}, ${a[i]}, ${x:i:n}, ${x:-y}, ...); arithmetic
// with variables; array assignments and assignments to array
// elements; assignments to any variable not known to be harmless (PATH, BASH_ENV, IFS,
// LD_*, GIT_*, NODE_OPTIONS, and every name not in safeVars); a command name that is not a
// literal (or hides characters); a shell reading commands from its input (curl x | sh);
// text the parser rejects; -c strings nested deeper than 8. These are the constructs where
// bash evaluates a value as code (arithmetic, subscripts, prompt expansion, indirection)
// or where what runs depends on more than the text: since the text that bash evaluates can
// be assembled at run time, no search for $( in the text could see it.
//
// # Commands and their grammars
//
// Every simple command is reported in Commands, wrappers looked through (env, timeout,
// nice, nohup, stdbuf, setsid, time, xargs, watch, flock, taskset, chrt, command, exec,
// builtin, sudo, doas, pkexec, runuser, su -c, find -exec, bash/sh -c). Command.Text is
// what permission patterns match: the words after quote removal joined by single spaces,
// assignments before the command left out. A command name with a slash is cleaned
// ("ls/../../bin/rm" becomes "../bin/rm", "./bin/server" stays "./bin/server") so that it
// cannot pass for a bare name.
//
// Each command's arguments are checked against its grammar (grammars.go): the options known
// to be safe, what its positional words are. Command.Unsafe says why they do not fit; a
// permission rule or "always" answer with a wildcard ("git status*", "sed *") then does not
// allow it — "sed *" never allows sed's e command, "tar *" never --to-command, "git *" never
// -c. A rule naming the command exactly still does.
//
// The line's input is data to a filter (cat -, grep x -, wc -l < f) but never a program, a
// makefile or a list of files: a script word that is "-", /dev/stdin, /dev/fd/N or
// /proc/self/fd/N (python3 - <<EOF, make -f /dev/stdin), such a device where a word may be
// a path (bash /dev/stdin), and every option that reads the names of files from a file
// (tar -T, --files0-from) make the command unsafe: what runs, or which files are read, is in
// no line the analysis sees. Neither are options that follow the symlinks inside a tree the
// command walks (diff -r, zip -r, cp -rL): only the paths of the line are resolved.
//
// The grammars are parsed on the first Analyze (loadGrammars), not at init: parsing them
// takes milliseconds that a toolsd process which analyses no line (a forwarder, a hook) should
// not pay. The other tables are package maps.
//
// # Paths, and the folders they are resolved from
//
// Path words (arguments and option values a grammar calls paths, redirection targets, cd
// targets, git -C and the like) are reported in Uses with the working folders the line may
// be in when they are used (Cwds): a cd is followed through the statements after it (&&
// runs the next statement in the folder the cd reached; ; and || in either), and a
// subshell or a pipeline does not move the line. A symlink that ln -s creates in the line is
// a Link, resolved from the link's own folder. After a command that may create links whose
// targets the line does not show (tar x, unzip, git checkout: an archive's or a
// repository's content), or a cd to a folder only known at run time, later paths are
// Dynamic: only known when the line runs. The package
// permission resolves Uses as the kernel does, component by component (a symlink first,
// then ".." from where it leads).
package shell

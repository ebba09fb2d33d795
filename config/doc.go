// Package config reads the daemon's settings from the user's config file, the editor's
// initializationOptions and the workspace's .toolsd/config.json, and reloads them as the
// files change.
//
// Each source is a Layer; the permission engine takes the layers' permission rules one by
// one, in precedence order, and everything else reads the merged Settings. Later layers
// win: user < editor < project. The project layer is the repository's own file, so the
// daemon should honour its "permission" and "mcp" only once the person trusts the
// workspace (permission/trust); Merge rebuilds Settings without it.
//
// Limits are the person's: every layer's are held within bounds (limitBounds) that keep the
// editor able to talk to the daemon and the daemon within its means, and the project layer,
// trusted or not, may only lower them and may not set maxMessageBytes at all.
//
// The files are read through internal/fsopen: a settings file must be a regular file (a
// symlink to one is fine) of at most MaxFileBytes, so that a repository committing a FIFO or
// a link to /dev/zero as its config gets a diagnostic instead of a daemon that hangs.
package config

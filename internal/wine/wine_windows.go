package wine

import "golang.org/x/sys/windows"

// Under reports whether the process runs under wine (false on Windows itself and on every
// other system).
func Under() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

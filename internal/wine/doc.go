// Package wine lets Go's Windows test binaries run under wine on a Linux developer's machine
// (scripts/wine-test.sh): the stand-in DLL they need to start, and whether a test runs under
// wine, so that a test which meets one of wine's known limits can skip with the reason. It is
// for tests and the script only; nothing the toolsd binaries link imports it (its test checks).
//
// Go 1.24 and later get their random bytes from bcryptprimitives.dll!ProcessPrng at start,
// and wine 8 has no such DLL: every Go program dies before main. DLL is a stand-in for it,
// to be put in the wine prefix's system32 (the runtime loads it from there only).
//
// Under wine means: ntdll.dll exports wine_get_version, which no Windows has. A test never
// skips on Windows itself.
package wine

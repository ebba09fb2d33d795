package wine

import (
	"bytes"
	"debug/pe"
	"encoding/binary"
	"os/exec"
	"strings"
	"testing"
)

// TestDLL reads the stand-in back as a PE file: an AMD64 DLL whose export directory has the
// one name ProcessPrng, forwarded to advapi32.SystemFunction036.
func TestDLL(t *testing.T) {
	f, err := pe.NewFile(bytes.NewReader(DLL()))
	if err != nil {
		t.Fatal(err)
	}
	if f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 || f.Characteristics&pe.IMAGE_FILE_DLL == 0 {
		t.Fatalf("machine %#x, characteristics %#x: want an AMD64 DLL", f.Machine, f.Characteristics)
	}
	oh, ok := f.OptionalHeader.(*pe.OptionalHeader64)
	if !ok {
		t.Fatalf("optional header %T: want PE32+", f.OptionalHeader)
	}
	dir := oh.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_EXPORT]
	s := f.Section(".edata")
	if s == nil || dir.VirtualAddress != s.VirtualAddress || dir.Size > s.VirtualSize {
		t.Fatalf("export directory %+v is not the .edata section %+v", dir, s)
	}
	data, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	at := func(rva uint32) []byte { return data[rva-s.VirtualAddress:] }
	str := func(rva uint32) string { b := at(rva); return string(b[:bytes.IndexByte(b, 0)]) }
	le := binary.LittleEndian
	name, nFuncs, nNames := le.Uint32(data[12:]), le.Uint32(data[20:]), le.Uint32(data[24:])
	funcs, names := le.Uint32(data[28:]), le.Uint32(data[32:])
	if str(name) != "bcryptprimitives.dll" || nFuncs != 1 || nNames != 1 {
		t.Fatalf("export directory names %q with %d functions, %d names", str(name), nFuncs, nNames)
	}
	fn := le.Uint32(at(funcs))
	if got := str(le.Uint32(at(names))); got != "ProcessPrng" {
		t.Errorf("export %q; want ProcessPrng", got)
	}
	// A function's address inside the export directory is a forwarder's string.
	if fn < dir.VirtualAddress || fn >= dir.VirtualAddress+dir.Size || str(fn) != "advapi32.SystemFunction036" {
		t.Errorf("ProcessPrng at %#x (directory %#x+%#x): not a forwarder to advapi32.SystemFunction036", fn, dir.VirtualAddress, dir.Size)
	}
}

// TestNotLinked: no binary of toolsd links this package.
func TestNotLinked(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command here to list the binaries' packages")
	}
	for _, cmd := range []string{"../../cmd/toolsd", "../../cmd/toolsd-guard"} {
		for _, goos := range []string{"linux", "windows"} {
			c := exec.Command("go", "list", "-deps", cmd)
			c.Env = append(c.Environ(), "GOOS="+goos)
			out, err := c.Output()
			if err != nil {
				t.Fatalf("go list: %v", err)
			}
			for _, p := range strings.Fields(string(out)) {
				if strings.HasSuffix(p, "/internal/wine") {
					t.Errorf("%s (GOOS=%s) links %s", cmd, goos, p)
				}
			}
		}
	}
}

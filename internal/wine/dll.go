package wine

import (
	"bytes"
	"encoding/binary"
)

// The names in the export directory.
const (
	dllName   = "bcryptprimitives.dll"
	funcName  = "ProcessPrng"
	forwardTo = "advapi32.SystemFunction036"
)

// The layout: headers in the first 0x200 bytes of the file, the one section (.edata) at file
// offset 0x200 and virtual address 0x1000.
const (
	sectRVA    = 0x1000
	fileAlign  = 0x200
	sectAlign  = 0x1000
	imageBase  = 0x180000000
	optHdrSize = 240 // PE32+ optional header with its 16 data directories
)

// DLL returns the stand-in bcryptprimitives.dll: a PE32+ DLL of one section holding only an
// export directory, whose one export, ProcessPrng, is a forwarder to
// advapi32.SystemFunction036 (RtlGenRandom), which wine has and which has the same shape (a
// buffer and its length; TRUE on success). The loader resolves the forwarder itself: the DLL
// has no code.
func DLL() []byte {
	le := binary.LittleEndian
	put := func(b *bytes.Buffer, vs ...any) {
		for _, v := range vs {
			_ = binary.Write(b, le, v) // writes to a bytes.Buffer do not fail
		}
	}
	rva := func(off int) uint32 { return uint32(sectRVA + off) }

	// The export directory (IMAGE_EXPORT_DIRECTORY, 40 bytes), then its three one-entry
	// tables (functions, names, ordinals), then the strings. A function's address that
	// points inside the export directory's range is a forwarder: the string there names
	// the DLL and function it leads to.
	const dirSize = 40
	offFuncs := dirSize
	offNames := offFuncs + 4
	offOrds := offNames + 4
	offDLL := offOrds + 2
	offFunc := offDLL + len(dllName) + 1
	offFwd := offFunc + len(funcName) + 1
	end := offFwd + len(forwardTo) + 1

	var edata bytes.Buffer
	put(&edata,
		uint32(0),            // Characteristics
		uint32(0),            // TimeDateStamp
		uint16(0), uint16(0), // MajorVersion, MinorVersion
		rva(offDLL),   // Name
		uint32(1),     // Base (the first ordinal)
		uint32(1),     // NumberOfFunctions
		uint32(1),     // NumberOfNames
		rva(offFuncs), // AddressOfFunctions
		rva(offNames), // AddressOfNames
		rva(offOrds),  // AddressOfNameOrdinals
		rva(offFwd),   // the function: a forwarder
		rva(offFunc),  // its name
		uint16(0),     // its ordinal, less Base
	)
	for _, s := range []string{dllName, funcName, forwardTo} {
		edata.WriteString(s)
		edata.WriteByte(0)
	}
	if edata.Len() != end {
		panic("wine: export directory layout")
	}

	var h bytes.Buffer
	// The DOS header: "MZ" and, at 0x3c, where the PE header starts.
	h.WriteString("MZ")
	h.Write(make([]byte, 0x3c-2))
	put(&h, uint32(0x40))
	// The PE signature and the COFF header.
	h.WriteString("PE\x00\x00")
	put(&h,
		uint16(0x8664),     // Machine: AMD64
		uint16(1),          // NumberOfSections
		uint32(0),          // TimeDateStamp
		uint32(0),          // PointerToSymbolTable
		uint32(0),          // NumberOfSymbols
		uint16(optHdrSize), // SizeOfOptionalHeader
		uint16(0x2022),     // Characteristics: DLL, large address aware, executable image
	)
	// The PE32+ optional header.
	put(&h,
		uint16(0x20b),       // Magic: PE32+
		uint8(14), uint8(0), // linker version
		uint32(0),            // SizeOfCode
		uint32(fileAlign),    // SizeOfInitializedData
		uint32(0),            // SizeOfUninitializedData
		uint32(0),            // AddressOfEntryPoint: none
		uint32(sectRVA),      // BaseOfCode
		uint64(imageBase),    // ImageBase
		uint32(sectAlign),    // SectionAlignment
		uint32(fileAlign),    // FileAlignment
		uint16(6), uint16(0), // operating system version
		uint16(0), uint16(0), // image version
		uint16(6), uint16(0), // subsystem version
		uint32(0),                        // Win32VersionValue
		uint32(sectRVA+sectAlign),        // SizeOfImage
		uint32(fileAlign),                // SizeOfHeaders
		uint32(0),                        // CheckSum
		uint16(3),                        // Subsystem: console
		uint16(0x100),                    // DllCharacteristics: NX compatible
		uint64(0x100000), uint64(0x1000), // stack reserve, commit
		uint64(0x100000), uint64(0x1000), // heap reserve, commit
		uint32(0),  // LoaderFlags
		uint32(16), // NumberOfRvaAndSizes
	)
	// The data directories: the export table first, the other fifteen empty.
	put(&h, rva(0), uint32(end))
	h.Write(make([]byte, 8*15))
	// The section header.
	var name [8]byte
	copy(name[:], ".edata")
	put(&h,
		name,
		uint32(end),          // VirtualSize
		uint32(sectRVA),      // VirtualAddress
		uint32(fileAlign),    // SizeOfRawData
		uint32(fileAlign),    // PointerToRawData
		uint32(0), uint32(0), // relocations, line numbers
		uint16(0), uint16(0),
		uint32(0x40000040), // initialized data, readable
	)
	if h.Len() > fileAlign {
		panic("wine: headers too long")
	}
	out := make([]byte, 2*fileAlign)
	copy(out, h.Bytes())
	copy(out[fileAlign:], edata.Bytes())
	return out
}

package experiment

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"er/internal/contracttest"
)

// The Go<->C contract of the trace files (docs/trace-format.md, "The Go<->C contract"):
// TestContract compiles testdata/contract.c, which includes the collector library's own headers
// (preload/c/trace.h, unwind.h) and prints the size and offset of every field of every record,
// every enum member and every #define; it compares them with the constants the reader decodes
// with. A change on one side only fails it, naming what differs.

// contractField is a field of a C struct as the reader sees it: the Go constant of its offset and
// the bytes the reader reads there. goName "" is a field the reader does not read (padding).
type contractField struct {
	c       string
	goName  string
	off     int
	width   int
	comment string
}

// contractStruct is a struct of trace.h: the Go constant of its size and its fields.
type contractStruct struct {
	c      string
	goName string
	size   int
	fields []contractField
}

func prefixField() contractField {
	return contractField{"h", "sizeofRec", 0, sizeofRec, "every record's prefix"}
}

var contractStructs = []contractStruct{
	{"er_file_header", "sizeofFileHeader", sizeofFileHeader, []contractField{
		{"magic", "fileHeaderMagic", fileHeaderMagic, len(traceMagic), ""},
		{"version", "fileHeaderVersion", fileHeaderVersion, 4, ""},
		{"kind", "fileHeaderKind", fileHeaderKind, 4, ""},
		{"block_size", "fileHeaderBlockSize", fileHeaderBlockSize, 4, ""},
		{"pid", "fileHeaderPid", fileHeaderPid, 4, ""},
		{"param", "fileHeaderParam", fileHeaderParam, 8, ""},
		{"start_ns", "fileHeaderStartNS", fileHeaderStartNS, 8, ""},
		{"stop_errno", "fileHeaderStopErrno", fileHeaderStopErrno, 4, ""},
		{"pad", "", 0, 0, "padding"},
		{"stop_ns", "fileHeaderStopNS", fileHeaderStopNS, 8, ""},
		{"lost", "fileHeaderLost", fileHeaderLost, 8, ""},
	}},
	{"er_rec", "sizeofRec", sizeofRec, []contractField{
		{"size8", "recSize8", recSize8, 2, ""},
		{"kind", "recKind", recKind, 1, ""},
		{"aux", "recAux", recAux, 1, ""},
		{"tid", "recTid", recTid, 4, ""},
		{"time", "recTime", recTime, 8, ""},
	}},
	{"er_rec_stack", "sizeofRecStack", sizeofRecStack, []contractField{
		prefixField(),
		{"id", "recStackID", recStackID, 4, ""},
		{"n", "recStackN", recStackN, 4, ""},
	}},
	{"er_rec_heap", "sizeofRecHeap", sizeofRecHeap, []contractField{
		prefixField(),
		{"stack", "recHeapStack", recHeapStack, 4, ""},
		{"pad", "", 0, 0, "padding"},
		{"addr", "recHeapAddr", recHeapAddr, 8, ""},
		{"size", "recHeapSize", recHeapSize, 8, ""},
		{"old", "recHeapOld", recHeapOld, 8, ""},
	}},
	{"er_rec_alloc", "sizeofRecAlloc", sizeofRecAlloc, []contractField{
		prefixField(),
		{"stack", "recAllocStack", recAllocStack, 4, ""},
		{"size", "recAllocSize", recAllocSize, 4, ""},
		{"addr", "recAllocAddr", recAllocAddr, 8, ""},
	}},
	{"er_rec_free", "sizeofRecFree", sizeofRecFree, []contractField{
		prefixField(),
		{"old", "recFreeOld", recFreeOld, 8, ""},
	}},
	{"er_rec_sync", "sizeofRecSync", sizeofRecSync, []contractField{
		prefixField(),
		{"stack", "recSyncStack", recSyncStack, 4, ""},
		{"pad", "", 0, 0, "padding"},
		{"wait_ns", "recSyncWaitNS", recSyncWaitNS, 8, ""},
		{"object", "recSyncObject", recSyncObject, 8, ""},
	}},
	{"er_rec_io", "sizeofRecIO", sizeofRecIO, []contractField{
		prefixField(),
		{"stack", "recIOStack", recIOStack, 4, ""},
		{"name_len", "recIONameLen", recIONameLen, 4, ""},
		{"dur_ns", "recIODurNS", recIODurNS, 8, ""},
		{"fd", "recIOFD", recIOFD, 4, ""},
		{"fd2", "recIOFD2", recIOFD2, 4, ""},
		{"ret", "recIORet", recIORet, 8, ""},
		{"bytes", "recIOBytes", recIOBytes, 8, ""},
		{"err", "recIOErr", recIOErr, 4, ""},
		{"pad", "", 0, 0, "padding"},
	}},
	{"er_rec_clock", "sizeofRecClock", sizeofRecClock, []contractField{
		prefixField(),
		{"stack", "recClockStack", recClockStack, 4, ""},
		{"count", "recClockCount", recClockCount, 4, ""},
		{"cpu", "recClockCPU", recClockCPU, 4, ""},
		{"pad", "", 0, 0, "padding"},
	}},
	{"er_rec_map", "sizeofRecMap", sizeofRecMap, []contractField{
		prefixField(),
		{"start", "recMapStart", recMapStart, 8, ""},
		{"end", "recMapEnd", recMapEnd, 8, ""},
		{"offset", "recMapOffset", recMapOffset, 8, ""},
		{"path_len", "recMapPathLen", recMapPathLen, 4, ""},
		{"pad", "", 0, 0, "padding"},
	}},
}

// contractConst is a #define or enum member of the C side and the Go constant of the same meaning.
type contractConst struct {
	c, goName string
	v         uint64
}

var contractConsts = []contractConst{
	{"ER_VERSION", "traceVersion", traceVersion},
	{"ER_HEADER_SIZE", "traceHeaderSize", traceHeaderSize},
	{"ER_STOP_SECCOMP", "stopSeccomp", stopSeccomp},

	{"ER_FILE_HEAP", "fileHeap", fileHeap},
	{"ER_FILE_SYNC", "fileSync", fileSync},
	{"ER_FILE_IO", "fileIO", fileIO},
	{"ER_FILE_CLOCK", "fileClock", fileClock},
	{"ER_FILE_STACKS", "fileStacks", fileStacks},

	{"ER_REC_STACK", "recStack", recStack},
	{"ER_REC_HEAP", "recHeap", recHeap},
	{"ER_REC_SYNC", "recSync", recSync},
	{"ER_REC_IO", "recIO", recIO},
	{"ER_REC_CLOCK", "recClock", recClock},
	{"ER_REC_MAP", "recMap", recMap},
	{"ER_REC_NOTE", "recNote", recNote},

	{"ER_MAP_UNMAPPED", "mapUnmapped", mapUnmapped},
	{"ER_MAP_INITIAL", "mapInitial", mapInitial},

	{"ER_HEAP_MALLOC", "HeapMalloc", uint64(HeapMalloc)},
	{"ER_HEAP_CALLOC", "HeapCalloc", uint64(HeapCalloc)},
	{"ER_HEAP_REALLOC", "HeapRealloc", uint64(HeapRealloc)},
	{"ER_HEAP_FREE", "HeapFree", uint64(HeapFree)},
	{"ER_HEAP_POSIX_MEMALIGN", "HeapPosixMemalign", uint64(HeapPosixMemalign)},
	{"ER_HEAP_ALIGNED_ALLOC", "HeapAlignedAlloc", uint64(HeapAlignedAlloc)},
	{"ER_HEAP_MEMALIGN", "HeapMemalign", uint64(HeapMemalign)},
	{"ER_HEAP_VALLOC", "HeapValloc", uint64(HeapValloc)},
	{"ER_HEAP_PVALLOC", "HeapPvalloc", uint64(HeapPvalloc)},
	{"ER_HEAP_REALLOCARRAY", "HeapReallocarray", uint64(HeapReallocarray)},
	{"ER_HEAP_MMAP", "HeapMmap", uint64(HeapMmap)},
	{"ER_HEAP_MUNMAP", "HeapMunmap", uint64(HeapMunmap)},

	{"ER_SYNC_MUTEX_LOCK", "SyncMutexLock", uint64(SyncMutexLock)},
	{"ER_SYNC_COND_WAIT", "SyncCondWait", uint64(SyncCondWait)},
	{"ER_SYNC_RWLOCK_RDLOCK", "SyncRwlockRdlock", uint64(SyncRwlockRdlock)},
	{"ER_SYNC_RWLOCK_WRLOCK", "SyncRwlockWrlock", uint64(SyncRwlockWrlock)},
	{"ER_SYNC_JOIN", "SyncJoin", uint64(SyncJoin)},
	{"ER_SYNC_SEM_WAIT", "SyncSemWait", uint64(SyncSemWait)},
	{"ER_SYNC_BARRIER_WAIT", "SyncBarrierWait", uint64(SyncBarrierWait)},

	{"ER_IO_OPEN", "IOOpen", uint64(IOOpen)},
	{"ER_IO_OPENAT", "IOOpenat", uint64(IOOpenat)},
	{"ER_IO_CREAT", "IOCreat", uint64(IOCreat)},
	{"ER_IO_CLOSE", "IOClose", uint64(IOClose)},
	{"ER_IO_READ", "IOReadOp", uint64(IOReadOp)},
	{"ER_IO_WRITE", "IOWriteOp", uint64(IOWriteOp)},
	{"ER_IO_PREAD", "IOPread", uint64(IOPread)},
	{"ER_IO_PWRITE", "IOPwrite", uint64(IOPwrite)},
	{"ER_IO_READV", "IOReadv", uint64(IOReadv)},
	{"ER_IO_WRITEV", "IOWritev", uint64(IOWritev)},
	{"ER_IO_PREADV", "IOPreadv", uint64(IOPreadv)},
	{"ER_IO_PWRITEV", "IOPwritev", uint64(IOPwritev)},
	{"ER_IO_LSEEK", "IOLseek", uint64(IOLseek)},
	{"ER_IO_FSYNC", "IOFsync", uint64(IOFsync)},
	{"ER_IO_FDATASYNC", "IOFdatasync", uint64(IOFdatasync)},
	{"ER_IO_DUP", "IODup", uint64(IODup)},
	{"ER_IO_DUP2", "IODup2", uint64(IODup2)},
	{"ER_IO_DUP3", "IODup3", uint64(IODup3)},
	{"ER_IO_PIPE", "IOPipe", uint64(IOPipe)},
	{"ER_IO_PIPE2", "IOPipe2", uint64(IOPipe2)},
	{"ER_IO_FOPEN", "IOFopen", uint64(IOFopen)},
	{"ER_IO_FDOPEN", "IOFdopen", uint64(IOFdopen)},
	{"ER_IO_FREOPEN", "IOFreopen", uint64(IOFreopen)},
	{"ER_IO_FCLOSE", "IOFclose", uint64(IOFclose)},
	{"ER_IO_FREAD", "IOFread", uint64(IOFread)},
	{"ER_IO_FWRITE", "IOFwrite", uint64(IOFwrite)},
	{"ER_IO_FGETS", "IOFgets", uint64(IOFgets)},
	{"ER_IO_FPUTS", "IOFputs", uint64(IOFputs)},
	{"ER_IO_FGETC", "IOFgetc", uint64(IOFgetc)},
	{"ER_IO_FPUTC", "IOFputc", uint64(IOFputc)},
	{"ER_IO_FPRINTF", "IOFprintf", uint64(IOFprintf)},
	{"ER_IO_VFPRINTF", "IOVfprintf", uint64(IOVfprintf)},
	{"ER_IO_PRINTF", "IOPrintf", uint64(IOPrintf)},
	{"ER_IO_VPRINTF", "IOVprintf", uint64(IOVprintf)},
	{"ER_IO_PUTS", "IOPuts", uint64(IOPuts)},
	{"ER_IO_FFLUSH", "IOFflush", uint64(IOFflush)},
	{"ER_IO_FSEEK", "IOFseek", uint64(IOFseek)},
	{"ER_IO_GETC", "IOGetc", uint64(IOGetc)},
	{"ER_IO_PUTC", "IOPutc", uint64(IOPutc)},
	{"ER_IO_INHERITED", "IOInherited", uint64(IOInherited)},

	{"ER_PC_TRUNCATED", "FrameTruncated", FrameTruncated},
	{"ER_PC_FAILED", "FrameUnwindFailed", FrameUnwindFailed},
}

// contractCOnly are the C constants the reader has no constant for, and why.
var contractCOnly = map[string]string{
	"ER_BLOCK_SIZE": "the reader takes the block size from the header (checked below against what it accepts)",
	"ER_MAX_FRAMES": "the reader takes stacks of any length",
	"ER_MAP_MAPPED": "the reader takes any aux of a map record but unmapped and initial as mapped",
}

// contractGoOnly are the operations Go names that the library never records, and why.
var contractGoOnly = map[string]string{
	"sync op 8 (" + SyncSpinLock.String() + ")": "the library does not interpose pthread_spin_lock",
}

func TestContract(t *testing.T) {
	c := contracttest.Run(t, "testdata/contract.c")
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }

	// Structs and fields.
	seen := map[string]bool{}
	for _, s := range contractStructs {
		seen["struct "+s.c] = true
		if size, ok := c.Structs[s.c]; !ok {
			fail("struct %s: C has none, Go has %s = %d", s.c, s.goName, s.size)
		} else if size != s.size {
			fail("struct %s: C size %d, Go %d (%s)", s.c, size, s.size, s.goName)
		}
		for _, f := range s.fields {
			name := s.c + "." + f.c
			seen["field "+name] = true
			cf, ok := c.Fields[name]
			switch {
			case !ok && f.goName == "":
				fail("%s: C has no such field (Go lists it as %s)", name, f.comment)
			case !ok:
				fail("%s: C has no such field, Go reads it at offset %d (%s)", name, f.off, f.goName)
			case f.goName == "":
			case cf.Off != f.off:
				fail("%s: C offset %d, Go %d (%s)", name, cf.Off, f.off, f.goName)
			case cf.Size != f.width:
				fail("%s: C size %d, Go reads %d bytes (%s)", name, cf.Size, f.width, f.goName)
			}
		}
	}
	for name, f := range c.Fields {
		if !seen["field "+name] {
			fail("%s: C has it at offset %d (%d bytes), Go has no constant for it", name, f.Off, f.Size)
		}
	}
	for name, size := range c.Structs {
		if !seen["struct "+name] {
			fail("struct %s: C has it (%d bytes), Go has no constant for it", name, size)
		}
	}

	// Strings, constants and enum members.
	if got := c.Strings["ER_MAGIC"]; got != traceMagic {
		fail("ER_MAGIC: C %q, Go %q (traceMagic)", got, traceMagic)
	}
	for _, k := range contractConsts {
		seen["const "+k.c] = true
		if v, ok := c.Consts[k.c]; !ok {
			fail("%s: C has none, Go has %s = %d", k.c, k.goName, k.v)
		} else if v != k.v {
			fail("%s: C %d, Go %d (%s)", k.c, v, k.v, k.goName)
		}
	}
	for name, v := range c.Consts {
		if !seen["const "+name] && contractCOnly[name] == "" {
			fail("%s: C has it (%d), Go has no constant for it", name, v)
		}
	}
	for name := range contractCOnly {
		if _, ok := c.Consts[name]; !ok {
			fail("%s: listed as C only, but C has none", name)
		}
	}
	if bs := c.Consts["ER_BLOCK_SIZE"]; bs < minBlockSize || bs > maxBlockSize || bs%8 != 0 {
		fail("ER_BLOCK_SIZE: C %d, the reader accepts multiples of 8 from %d to %d (minBlockSize, maxBlockSize)", bs, minBlockSize, maxBlockSize)
	}
	for name, k := range traceFileKinds {
		if eventKinds[k] == 0 && name != TraceStacksFile {
			fail("%s: file kind %d has no record kind in eventKinds", name, k)
		}
	}

	// Every operation the Go side names is one of the library's: cOps["ER_HEAP 4"].
	cOps := map[string]bool{}
	for name, v := range c.Consts {
		for _, family := range []string{"ER_HEAP", "ER_SYNC", "ER_IO"} {
			if strings.HasPrefix(name, family+"_") {
				cOps[family+" "+strconv.FormatUint(v, 10)] = true
			}
		}
	}
	for v := 1; v < 256; v++ {
		for _, op := range []struct{ family, name, unnamed string }{
			{"ER_HEAP", HeapOp(v).String(), "heap_op_"}, {"ER_SYNC", SyncOp(v).String(), "sync_op_"},
			{"ER_IO", IOOp(v).String(), "io_op_"},
		} {
			if strings.HasPrefix(op.name, op.unnamed) || cOps[op.family+" "+strconv.Itoa(v)] {
				continue
			}
			what := fmt.Sprintf("%s op %d (%s)", strings.ToLower(op.family[3:]), v, op.name)
			if contractGoOnly[what] == "" {
				fail("%s: Go names it, C has no %s_ member of that value", what, op.family)
			}
		}
	}

	// The program prints everything the header declares.
	for _, miss := range uncovered(c, "../../preload/c/trace.h") {
		fail("%s: preload/c/trace.h declares it, testdata/contract.c does not print it", miss)
	}

	slices.Sort(bad)
	for _, b := range bad {
		t.Error(b)
	}
	if len(bad) == 0 {
		t.Logf("compared %d structs, %d fields, %d constants and enum members, ER_MAGIC", len(c.Structs), len(c.Fields), len(c.Consts))
	}
}

var (
	cStruct = regexp.MustCompile(`(?s)\bstruct\s+(\w+)\s*\{(.*?)\}\s*;`)
	cEnum   = regexp.MustCompile(`(?s)\benum\s+(\w+)\s*\{(.*?)\}\s*;`)
	cDefine = regexp.MustCompile(`(?m)^#define\s+(ER_\w+)[ \t]+\S`)
)

// uncovered returns what the header declares (structs, their fields, enum members and #defines
// of a value) that the program did not print.
func uncovered(c *contracttest.Output, header string) []string {
	b, err := os.ReadFile(header)
	if err != nil {
		return []string{err.Error()}
	}
	text := contracttest.StripComments(string(b))
	var miss []string
	for _, m := range cStruct.FindAllStringSubmatch(text, -1) {
		if _, ok := c.Structs[m[1]]; !ok {
			miss = append(miss, "struct "+m[1])
		}
		for _, n := range contracttest.FieldNames(m[2]) {
			if _, ok := c.Fields[m[1]+"."+n]; !ok {
				miss = append(miss, m[1]+"."+n)
			}
		}
	}
	for _, m := range cEnum.FindAllStringSubmatch(text, -1) {
		for _, member := range strings.Split(m[2], ",") {
			n, _, _ := strings.Cut(strings.TrimSpace(member), "=")
			if n = strings.TrimSpace(n); n == "" {
				continue
			}
			if _, ok := c.Consts[n]; !ok {
				miss = append(miss, "enum "+m[1]+" "+n)
			}
		}
	}
	for _, m := range cDefine.FindAllStringSubmatch(text, -1) {
		_, isConst := c.Consts[m[1]]
		_, isString := c.Strings[m[1]]
		if !isConst && !isString {
			miss = append(miss, "#define "+m[1])
		}
	}
	return miss
}

package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"er/internal/contracttest"
	"er/internal/tracedef"
)

// The Go<->C contract of the trace files (docs/trace-format.md, "The Go<->C contract"): the
// layout, names and numbers are generated from one definition (internal/tracedef), whose tests
// check that both generated files are fresh and that the C compiler lays the header out as the Go
// constants say. TestContract checks what the definition cannot say: that the reader accepts the
// library's block size, names no operation the library lacks, and reads every kind of file.

// contractGoOnly are the operations Go names that the library never records, and why.
var contractGoOnly = map[string]string{
	"sync op 8 (" + SyncSpinLock.String() + ")": "the library does not interpose pthread_spin_lock",
}

func TestContract(t *testing.T) {
	src := filepath.Join(t.TempDir(), "contract.c")
	header, err := filepath.Abs(filepath.Join("..", "..", tracedef.CFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, tracedef.Trace.Program(header), 0o644); err != nil {
		t.Fatal(err)
	}
	c := contracttest.Run(t, src)
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }

	if bs := c.Consts["ER_BLOCK_SIZE"]; bs < minBlockSize || bs > maxBlockSize || bs%8 != 0 {
		fail("ER_BLOCK_SIZE: C %d, the reader accepts multiples of 8 from %d to %d (minBlockSize, maxBlockSize)", bs, minBlockSize, maxBlockSize)
	}
	for name, k := range traceFileKinds {
		// (the OpenMP, Java and dyntext files hold several kinds: readOMP, readJava, dynRecord)
		if eventKinds[k] == 0 && name != TraceStacksFile && name != OMPTraceFile && name != JavaTraceFile && name != DynTextFile {
			fail("%s: file kind %d has no record kind in eventKinds", name, k)
		}
	}
	if !slices.Equal(TraceFiles, []string{c.Strings["ER_NAME_HEAP"], c.Strings["ER_NAME_SYNC"], c.Strings["ER_NAME_IO"],
		c.Strings["ER_NAME_CLOCK"], c.Strings["ER_NAME_OMP"], c.Strings["ER_NAME_JAVA"], c.Strings["ER_NAME_DYNTEXT"], c.Strings["ER_NAME_STACKS"]}) {
		fail("TraceFiles %q are not the library's files", TraceFiles)
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
	// And every operation of the library has a Go name.
	for name, v := range c.Consts {
		var got string
		switch {
		case strings.HasPrefix(name, "ER_HEAP_"):
			got = HeapOp(v).String()
		case strings.HasPrefix(name, "ER_SYNC_"):
			got = SyncOp(v).String()
		case strings.HasPrefix(name, "ER_IO_"):
			got = IOOp(v).String()
		default:
			continue
		}
		if strings.Contains(got, "_op_") {
			fail("%s (%d): the library records it, Go has no name for it (%s)", name, v, got)
		}
	}
	slices.Sort(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

package perfimport

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"er/internal/perfabi"
)

// manyMappings is a stream of a process that maps n files at descending addresses (as mmap places
// them), takes a sample, then forks forks children: the mappings a child inherits are its parent's.
func manyMappings(n, forks int) *craft {
	c := newCraft()
	c.comm(craftPid, "main")
	for i := range n {
		c.mmap(craftPid, 0x7f0000000000-uint64(i+1)*0x2000, 0x1000, 0, "/nonexistent/lib.so")
	}
	c.sample(craftPid, 0x7f0000000000-0x2000+0x10, 1000)
	for i := range forks {
		pid := uint64(craftPid + 1 + i)
		c.record(perfabi.RecordFork, 0, wordsOf(pid|craftPid<<32, pid|craftPid<<32, uint64(2000+i))...)
	}
	return c
}

// BenchmarkImportMappings imports a process with n mappings that forks n times, and prints the ns
// per record (mappings and forks) and the bytes allocated per record.
func BenchmarkImportMappings(b *testing.B) {
	for _, n := range []int{1000, 2000, 4000, 20000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			p := manyMappings(n, n).write(b)
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			alloc := ms.TotalAlloc
			for b.Loop() {
				if _, err := Import(p, filepath.Join(b.TempDir(), "x.er")); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(2*n), "ns/record")
			b.ReportMetric(float64(ms.TotalAlloc-alloc)/float64(b.N)/float64(2*n), "B/record")
		})
	}
}

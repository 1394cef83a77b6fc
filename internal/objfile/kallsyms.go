package objfile

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"er/internal/experiment"
)

// ErrNoKernelAddresses says that every address in a kallsyms file was zero:
// the kernel hides them (kernel.kptr_restrict, or reading without privilege).
var ErrNoKernelAddresses = errors.New("kernel symbol addresses are hidden (all zero in kallsyms; see /proc/sys/kernel/kptr_restrict)")

// Kallsyms reads the kernel's text symbols (types t, T and W) from a file in
// /proc/kallsyms format. A module symbol's name carries its module as a
// suffix, "name [module]" (see SplitKernelName). Symbols come sorted by
// address, one per address, each sized up to the next symbol of any type
// in the same module (0 for the last one). When every address is zero the
// error wraps ErrNoKernelAddresses.
func Kallsyms(path string) ([]experiment.Symbol, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("objfile: %w", err)
	}
	defer fh.Close()

	type entry struct {
		addr   uint64
		text   bool
		name   string
		module string
	}
	var all []entry
	nonzero := false
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 || len(f[1]) != 1 {
			return nil, fmt.Errorf("objfile: %s:%d: malformed kallsyms line %q", path, line, sc.Text())
		}
		addr, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("objfile: %s:%d: bad address %q", path, line, f[0])
		}
		e := entry{addr: addr, name: f[2]}
		switch f[1][0] {
		case 't', 'T', 'W':
			e.text = true
		}
		if len(f) > 3 {
			e.module = strings.Trim(f[3], "[]")
		}
		nonzero = nonzero || addr != 0
		all = append(all, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("objfile: reading %s: %w", path, err)
	}
	if len(all) > 0 && !nonzero {
		return nil, fmt.Errorf("objfile: %s: %w", path, ErrNoKernelAddresses)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].addr < all[j].addr })

	var syms []experiment.Symbol
	for i := 0; i < len(all); i++ {
		e := all[i]
		if !e.text || e.addr == 0 {
			continue
		}
		if n := len(syms); n > 0 && syms[n-1].Addr == e.addr {
			continue // an alias: keep the first name
		}
		var size uint64
		for j := i + 1; j < len(all); j++ {
			if all[j].module != e.module {
				break
			}
			if all[j].addr > e.addr {
				size = all[j].addr - e.addr
				break
			}
		}
		name := e.name
		if e.module != "" {
			name += " [" + e.module + "]"
		}
		syms = append(syms, experiment.Symbol{Name: name, Addr: e.addr, Size: size, Kind: experiment.SymKernel})
	}
	return syms, nil
}

// SplitKernelName splits a kernel symbol name from Kallsyms into the
// function and its module ("" for the kernel image itself).
func SplitKernelName(name string) (fn, module string) {
	if i := strings.LastIndex(name, " ["); i >= 0 && strings.HasSuffix(name, "]") {
		return name[:i], name[i+2 : len(name)-1]
	}
	return name, ""
}

package objfile

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
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
	data, err := readProcFile(path, 8<<20)
	if err != nil {
		return nil, fmt.Errorf("objfile: %w", err)
	}
	// One string for the whole file: names are substrings of it, so parsing allocates per symbol only
	// for module names (/proc/kallsyms has over 100,000 lines).
	text := string(data)
	type entry struct {
		addr         uint64
		text         bool
		name, module string
	}
	all := make([]entry, 0, strings.Count(text, "\n")+1)
	nonzero := false
	for line := 1; len(text) > 0; line++ {
		l := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			l, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if strings.TrimSpace(l) == "" {
			continue
		}
		addrS, rest, ok1 := strings.Cut(strings.TrimLeft(l, " \t"), " ")
		typ, rest, ok2 := strings.Cut(rest, " ")
		if !ok1 || !ok2 || len(typ) != 1 || rest == "" {
			return nil, fmt.Errorf("objfile: %s:%d: malformed kallsyms line %q", path, line, l)
		}
		addr, err := strconv.ParseUint(addrS, 16, 64)
		if err != nil {
			return nil, fmt.Errorf("objfile: %s:%d: bad address %q", path, line, addrS)
		}
		e := entry{addr: addr, name: rest}
		if name, mod, ok := strings.Cut(rest, "\t"); ok {
			e.name, e.module = name, strings.Trim(strings.TrimSpace(mod), "[]")
		}
		switch typ[0] {
		case 't', 'T', 'W':
			e.text = true
		}
		nonzero = nonzero || addr != 0
		all = append(all, e)
	}
	if len(all) > 0 && !nonzero {
		return nil, fmt.Errorf("objfile: %s: %w", path, ErrNoKernelAddresses)
	}
	byAddr := func(a, b entry) int { return cmp.Compare(a.addr, b.addr) }
	if !slices.IsSortedFunc(all, byAddr) {
		slices.SortStableFunc(all, byAddr)
	}

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

// readProcFile reads a whole file whose size stat cannot tell (files under /proc say 0), into a buffer that
// starts at sizeHint bytes, so that a large file is not copied over and over as it grows.
func readProcFile(path string, sizeHint int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 0, sizeHint)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF || (err == nil && n == 0) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

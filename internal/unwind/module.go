package unwind

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"er/internal/ranges"
)

// Module is one executable mapping of a load object in the target process.
type Module struct {
	Start, End uint64 // runtime addresses [Start, End)
	Offset     uint64 // file offset of Start
	Path       string
	Table      *Table // nil when the load object has no usable CFI (then frame pointers are tried)
	Bias       uint64 // runtime address - link-time address
	// lazy, when set, is where Table is to come from when the unwinder first needs it (NewLazyModule).
	lazy *Cache
}

// NewModule describes the mapping [start, end) of path at file offset offset, computing its
// bias from t's segments. t may be nil.
func NewModule(start, end, offset uint64, path string, t *Table) *Module {
	m := &Module{Start: start, End: end, Offset: offset, Path: path}
	m.setTable(t)
	return m
}

// NewLazyModule describes the mapping as NewModule does, with the table of path from c, read when an
// unwind first needs it (a PC in the mapping, or a return address into it): the load objects that
// a process maps and no stack goes through are never read (the target's page cache stays as the
// target leaves it: docs/collecting.md, "What er changes in the target").
func NewLazyModule(start, end, offset uint64, path string, c *Cache) *Module {
	return &Module{Start: start, End: end, Offset: offset, Path: path, lazy: c}
}

func (m *Module) setTable(t *Table) {
	m.Table = nil
	if t == nil {
		return
	}
	if b, ok := t.Bias(m.Start, m.Offset); ok {
		m.Table, m.Bias = t, b
	}
	// (No segment holds the offset: the table cannot be trusted for it.)
}

// table is the module's table, read now where NewLazyModule left it to be read.
func (m *Module) table() *Table {
	if c := m.lazy; c != nil {
		m.lazy = nil
		t, _ := c.Table(m.Path)
		m.setTable(t)
	}
	return m.Table
}

// Cache loads each load object's Table once, by path, remembering failures too.
// The zero value is ready to use; it is safe for concurrent use.
type Cache struct {
	mu     sync.Mutex
	tables map[string]cacheEntry
}

type cacheEntry struct {
	t   *Table
	err error
}

// Table returns the table of the load object at path, loading it on first use. The path
// "[vdso]" gives the vdso's table, read from this process (the vdso is the same image in every
// process of a kernel). Other bracketed pseudo-paths ("[anon]", "[stack]") have no table.
func (c *Cache) Table(path string) (*Table, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.tables[path]; ok {
		return e.t, e.err
	}
	var e cacheEntry
	switch {
	case path == "[vdso]":
		e.t, e.err = loadVDSO("/proc/self/maps", "/proc/self/mem")
	case strings.HasPrefix(path, "[") || path == "" || strings.HasPrefix(path, "//anon"):
		e.err = fmt.Errorf("unwind: %q is not a file: no call frame information", path)
	default:
		e.t, e.err = Load(path)
	}
	if c.tables == nil {
		c.tables = map[string]cacheEntry{}
	}
	c.tables[path] = e
	return e.t, e.err
}

// Paths lists the load objects whose tables were asked for (the objects unwinding went through),
// loaded or not, in no order.
func (c *Cache) Paths() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.tables))
	for p := range c.tables {
		out = append(out, p)
	}
	return out
}

// TableFromImage returns the table of an ELF image held in memory, cached under name.
func (c *Cache) TableFromImage(name string, img []byte) (*Table, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.tables[name]; ok {
		return e.t, e.err
	}
	var e cacheEntry
	e.t, e.err = TableFromImage(name, img)
	if c.tables == nil {
		c.tables = map[string]cacheEntry{}
	}
	c.tables[name] = e
	return e.t, e.err
}

// loadVDSO reads the [vdso] mapping named in the maps file from the mem file.
func loadVDSO(maps, mem string) (*Table, error) {
	img, err := vdsoImage(maps, mem)
	if err != nil {
		return nil, err
	}
	return TableFromImage("[vdso]", img)
}

// vdsoImage reads the bytes of the [vdso] mapping named in the maps file from the mem file.
func vdsoImage(maps, mem string) ([]byte, error) {
	data, err := os.ReadFile(maps)
	if err != nil {
		return nil, fmt.Errorf("unwind: reading the vdso: %w", err)
	}
	for _, m := range ParseMaps(data) {
		if m.Path != "[vdso]" {
			continue
		}
		if m.End-m.Start > 1<<24 {
			return nil, fmt.Errorf("unwind: %s: [vdso] mapping of %d bytes is too large", maps, m.End-m.Start)
		}
		fh, err := os.Open(mem)
		if err != nil {
			return nil, fmt.Errorf("unwind: reading the vdso: %w", err)
		}
		defer fh.Close()
		img := make([]byte, m.End-m.Start)
		if _, err := fh.ReadAt(img, int64(m.Start)); err != nil {
			return nil, fmt.Errorf("unwind: reading the vdso at %#x from %s: %w", m.Start, mem, err)
		}
		return img, nil
	}
	return nil, fmt.Errorf("unwind: %s has no [vdso] mapping", maps)
}

// Mapping is one line of /proc/PID/maps.
type Mapping struct {
	Start, End, Offset uint64
	Exec               bool
	Path               string // "" for an anonymous mapping
}

// ParseMaps parses the text of /proc/PID/maps, skipping malformed lines.
func ParseMaps(data []byte) []Mapping {
	var out []Mapping
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 64)
		if !ok || err1 != nil || err2 != nil || err3 != nil || end < start || len(f[1]) < 3 {
			continue
		}
		m := Mapping{Start: start, End: end, Offset: off, Exec: f[1][2] == 'x'}
		if len(f) >= 6 {
			m.Path = strings.Join(f[5:], " ")
		}
		out = append(out, m)
	}
	return out
}

// Space is the executable mappings of one process, for Unwinder.Modules: set
// Unwinder.Modules = space.Find. It is not safe for concurrent use. Its changes and lookups take
// O(log n), and Clone O(1): the modules are a persistent tree (internal/ranges).
type Space struct {
	mods ranges.Map[*Module]
	last *Module
}

// Cut returns the module of the part [start, end) of m's mapping.
func (m *Module) Cut(start, end uint64) *Module {
	c := *m
	c.Offset += start - m.Start
	c.Start, c.End = start, end
	return &c
}

// Add maps m, replacing whatever it overlaps (as mmap with MAP_FIXED does).
func (s *Space) Add(m *Module) {
	s.last = nil
	s.mods.Add(m.Start, m.End, m)
}

// Remove unmaps [start, end), trimming the modules it overlaps.
func (s *Space) Remove(start, end uint64) {
	s.last = nil
	s.mods.Remove(start, end)
}

// Find returns the module containing pc, or nil.
func (s *Space) Find(pc uint64) *Module {
	if l := s.last; l != nil && pc >= l.Start && pc < l.End {
		return l
	}
	if _, _, m, ok := s.mods.Find(pc); ok {
		s.last = m
		return m
	}
	return nil
}

// Len is the number of mappings.
func (s *Space) Len() int { return s.mods.Len() }

// Steps is the work its operations have done (ranges.Map.Steps).
func (s *Space) Steps() int64 { return s.mods.Steps() }

// Modules returns the mappings in address order.
func (s *Space) Modules() []*Module { return slices.Collect(s.mods.All()) }

// Clone returns a copy of s, for a forked child.
func (s *Space) Clone() *Space { return &Space{mods: s.mods} }

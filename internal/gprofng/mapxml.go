package gprofng

import (
	"fmt"
	"strconv"
)

// Segment is a mapping of map.xml: a segment of a load object mapped at Vaddr (object
// "segment"), or a function-like region without a file such as [vdso] (object "function").
type Segment struct {
	Time   int64 // ns since the start; when it was mapped
	Unmap  int64 // ns since the start when it was unmapped; -1 while mapped
	Vaddr  uint64
	Size   uint64
	Offset uint64 // file offset of Vaddr
	Modes  int64  // protection: 1 read, 2 write, 4 execute
	Name   string // the file, or "[vdso]"
	Func   bool   // a region without a file (object "function")
}

// Exec says whether the segment holds code.
func (s *Segment) Exec() bool { return s.Func || s.Modes&4 != 0 }

// DynFunc is a function of a region without a file (object "dynfunc": the vdso's functions).
type DynFunc struct {
	Object string // "[vdso]"
	Name   string
	Vaddr  uint64
	Size   uint64
}

// Map is what a gprofng map.xml says.
type Map struct {
	Segments []Segment
	DynFuncs []DynFunc
}

// ParseMap reads a gprofng map.xml (file names it in errors). A file that ends in the middle is
// read up to there; truncated says so.
func ParseMap(file string, b []byte) (m *Map, truncated bool, err error) {
	m = &Map{}
	truncated, err = scanXML(file, b, func(e *element) error {
		if e.end || e.name != "event" {
			return nil
		}
		t, err := relTime(e.attrs)
		if err != nil {
			return err
		}
		vaddr, err := hexAttr(e.attrs, "vaddr")
		if err != nil {
			return err
		}
		switch e.attrs["kind"] {
		case "map":
			size, err := atoi(e.attrs, "size")
			if err != nil {
				return err
			}
			if size < 0 {
				return fmt.Errorf("map of %s: size %d", e.attrs["name"], size)
			}
			switch e.attrs["object"] {
			case "segment", "function":
				off, err := atoi(e.attrs, "foffset")
				if err != nil {
					return err
				}
				modes, err := atoi(e.attrs, "modes")
				if err != nil {
					return err
				}
				m.Segments = append(m.Segments, Segment{Time: t, Unmap: -1, Vaddr: vaddr, Size: uint64(size),
					Offset: uint64(off), Modes: modes, Name: e.attrs["name"], Func: e.attrs["object"] == "function"})
			case "dynfunc":
				m.DynFuncs = append(m.DynFuncs, DynFunc{Object: e.attrs["name"], Name: e.attrs["funcname"], Vaddr: vaddr, Size: uint64(size)})
			}
		case "unmap":
			for i := len(m.Segments) - 1; i >= 0; i-- {
				if s := &m.Segments[i]; s.Vaddr == vaddr && s.Unmap < 0 {
					s.Unmap = t
					break
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return m, truncated, nil
}

// hexAttr reads an address attribute ("0x00007F2322A6B810"), 0 when absent.
func hexAttr(attrs map[string]string, name string) (uint64, error) {
	s, ok := attrs[name]
	if !ok {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("attribute %s=%q: not an address", name, s)
	}
	return v, nil
}

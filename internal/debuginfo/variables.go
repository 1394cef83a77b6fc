package debuginfo

import (
	"debug/dwarf"
	"fmt"
	"slices"
	"strconv"
)

// Variable is a variable at a fixed address (global, or static in a file or a function), as DWARF
// describes it.
type Variable struct {
	Name string
	Addr uint64 // link-time address
	Size uint64
	Type *DataType // nil when DWARF gives none
}

// DataType is the layout of a variable's type: its name ("struct rec", "int[1024]"), its size, and
// for a struct or union its members, for an array its element.
type DataType struct {
	Name    string
	Size    uint64
	Members []Member  // a struct's or union's, in offset order
	Elem    *DataType // an array's element type
}

// Member is a member of a struct or union.
type Member struct {
	Name   string
	Offset uint64 // bytes from the start of the struct
	Type   *DataType
}

// Variables returns the variables at fixed addresses, sorted by address (those of zero size left out).
// It reads the whole of .debug_info once.
func (in *Info) Variables() ([]Variable, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.vars != nil || in.varsErr != nil {
		return in.vars, in.varsErr
	}
	if in.d == nil {
		in.vars = []Variable{}
		return in.vars, nil
	}
	in.vars, in.varsErr = readVariables(in.d)
	return in.vars, in.varsErr
}

// readVariables reads the variables of d (see Variables); debug/dwarf's panics on malformed input are
// errors.
func readVariables(d *dwarf.Data) (vars []Variable, err error) {
	defer func() {
		if r := recover(); r != nil {
			vars, err = nil, fmt.Errorf("debuginfo: reading variables: %v", r)
		}
	}()
	types := map[dwarf.Offset]*DataType{}
	decls := map[dwarf.Offset]*dwarf.Entry{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("debuginfo: reading variables: %w", err)
		}
		if e == nil {
			break
		}
		if e.Tag != dwarf.TagVariable {
			continue
		}
		if e.Val(dwarf.AttrDeclaration) == true {
			decls[e.Offset] = e
			continue
		}
		addr, ok := staticAddr(e)
		if !ok {
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		typeOff, hasType := e.Val(dwarf.AttrType).(dwarf.Offset)
		if spec, ok := e.Val(dwarf.AttrSpecification).(dwarf.Offset); ok {
			if de := decls[spec]; de != nil {
				if name == "" {
					name, _ = de.Val(dwarf.AttrName).(string)
				}
				if !hasType {
					typeOff, hasType = de.Val(dwarf.AttrType).(dwarf.Offset)
				}
			}
		}
		if name == "" {
			continue
		}
		v := Variable{Name: name, Addr: addr}
		if hasType {
			if t, err := d.Type(typeOff); err == nil {
				v.Type = layout(t, types, typeOff, 0)
				v.Size = v.Type.Size
			}
		}
		if v.Size > 0 {
			vars = append(vars, v)
		}
	}
	slices.SortStableFunc(vars, func(a, b Variable) int {
		switch {
		case a.Addr < b.Addr:
			return -1
		case a.Addr > b.Addr:
			return 1
		}
		return 0
	})
	return vars, nil
}

// staticAddr returns the address of a variable whose location is DW_OP_addr alone.
func staticAddr(e *dwarf.Entry) (uint64, bool) {
	loc, ok := e.Val(dwarf.AttrLocation).([]byte)
	if !ok || len(loc) != 9 || loc[0] != 0x03 { // DW_OP_addr, 8 bytes
		return 0, false
	}
	var a uint64
	for i := 8; i >= 1; i-- {
		a = a<<8 | uint64(loc[i])
	}
	return a, true
}

// maxTypeDepth bounds the nesting that layout follows (a type that contains itself through arrays is
// not C, but DWARF could say so).
const maxTypeDepth = 16

// layout converts t to a DataType, once per DWARF offset.
func layout(t dwarf.Type, done map[dwarf.Offset]*DataType, off dwarf.Offset, depth int) *DataType {
	if dt, ok := done[off]; ok && off != 0 {
		return dt
	}
	dt := &DataType{Name: t.String(), Size: uint64(max(t.Size(), 0))}
	if off != 0 {
		done[off] = dt
	}
	if depth > maxTypeDepth {
		return dt
	}
	switch t := skipQualifiers(t).(type) {
	case *dwarf.StructType:
		dt.Name = t.Kind + " " + t.StructName
		if t.StructName == "" {
			dt.Name = t.Kind + " {...}"
		}
		for _, f := range t.Field {
			if f == nil || f.Type == nil {
				continue
			}
			dt.Members = append(dt.Members, Member{Name: f.Name, Offset: uint64(max(f.ByteOffset, 0)),
				Type: layout(f.Type, done, 0, depth+1)})
		}
	case *dwarf.ArrayType:
		dt.Elem = layout(t.Type, done, 0, depth+1)
		if t.Count >= 0 {
			dt.Name = dt.Elem.Name + "[" + strconv.FormatInt(t.Count, 10) + "]"
		}
	}
	return dt
}

// skipQualifiers returns t without its typedefs, const and volatile.
func skipQualifiers(t dwarf.Type) dwarf.Type {
	for range maxTypeDepth {
		switch q := t.(type) {
		case *dwarf.TypedefType:
			t = q.Type
		case *dwarf.QualType:
			t = q.Type
		default:
			return t
		}
	}
	return t
}

// Walk follows offset off into a value of type t, down through struct members and array elements,
// and calls fn for each struct or union it passes with the member off is in: the outermost first.
func (t *DataType) Walk(off uint64, fn func(s *DataType, member int)) {
	cur := t
	for depth := 0; cur != nil && depth < maxTypeDepth; depth++ {
		switch {
		case len(cur.Members) > 0:
			m := -1
			for i := range cur.Members {
				mi := &cur.Members[i]
				if off >= mi.Offset && off < mi.Offset+max(mi.Type.Size, 1) {
					m = i
				}
			}
			if m < 0 {
				return
			}
			fn(cur, m)
			off -= cur.Members[m].Offset
			cur = cur.Members[m].Type
		case cur.Elem != nil && cur.Elem.Size > 0:
			off %= cur.Elem.Size
			cur = cur.Elem
		default:
			return
		}
	}
}

package analysis

import (
	"encoding/binary"
	"path"
	"strings"

	"er/internal/archive"
	"er/internal/experiment"
)

// pltRules applies seed 004's rules for calls between load objects to the locations of a stack,
// leaf first, and returns what remains.
//
// A leaf PC in a PLT stub is dropped: the sample is the caller's, at its call instruction (the next
// location is a return address, looked up in the call). Time in the dynamic linker's lazy binding
// becomes one location, the "@plt" pseudo-function of the object that called through its PLT: the
// binding starts at the outermost frame of the dynamic linker that another object calls and that
// is the resolver: a symbol named _dl_runtime_resolve*, _dl_runtime_profile*, _dl_fixup or
// _dl_profile_fixup, or (the dynamic linker of most distributions has no symbol table) code in no
// symbol whose caller's call instruction is a direct call to one of its own PLT stubs, which needs
// the caller's file (Options.OpenFile). That frame and every frame it calls are replaced.
func (b *builder) pltRules(locs []location) []location {
	if len(locs) > 1 && b.p.Functions[locs[0].fn].Kind == FuncPLT {
		locs = locs[1:]
	}
	for j := len(locs) - 1; j >= 0; j-- {
		l := &locs[j]
		if l.os == nil || !l.os.ldso {
			continue
		}
		var caller *location
		if j+1 < len(locs) {
			caller = &locs[j+1]
			if caller.obj == l.obj {
				continue
			}
		}
		if !b.isResolver(l, caller) {
			continue
		}
		obj := l.obj
		if caller != nil {
			obj = caller.obj
		}
		f := b.function(funcKey{obj: obj, kind: FuncPLTBind}, PLTBindName, 0)
		locs[j] = location{fn: f, obj: obj}
		return locs[j:]
	}
	return locs
}

// isDynamicLinker reports whether the load object at p is the dynamic linker (ld.so).
func isDynamicLinker(p string) bool {
	base := path.Base(p)
	for _, prefix := range []string{"ld-linux", "ld.so", "ld64.so", "ld-musl"} {
		if strings.HasPrefix(base, prefix) {
			return true
		}
	}
	return false
}

// isResolver reports whether location l, in the dynamic linker, is its lazy-binding resolver called
// from caller (nil when l is the outermost frame).
func (b *builder) isResolver(l, caller *location) bool {
	fn := &b.p.Functions[l.fn]
	switch fn.Kind {
	case FuncSymbol:
		n := fn.Name
		return strings.HasPrefix(n, "_dl_runtime_resolve") || strings.HasPrefix(n, "_dl_runtime_profile") ||
			n == "_dl_fixup" || n == "_dl_profile_fixup"
	case FuncStatic:
		return caller != nil && caller.ret && b.callsPLT(caller)
	}
	return false
}

// callsPLT reports whether the call instruction ending at return address l.addr+1 is a direct call
// (e8 rel32) to a PLT stub of l's own object, reading the code from its file.
func (b *builder) callsPLT(l *location) bool {
	fs := b.fileOf(l.os)
	if fs == nil || fs.of.Code == nil || l.addr < 4 {
		return false
	}
	ra := l.addr + 1
	code, err := fs.of.Code(ra-5, ra)
	if err != nil || len(code) != 5 || code[0] != 0xe8 {
		return false
	}
	target := ra + uint64(int64(int32(binary.LittleEndian.Uint32(code[1:]))))
	sym, ok := archive.SymbolAt(fs.arch, target)
	return ok && sym.Kind == experiment.SymPLT
}
